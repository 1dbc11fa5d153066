package oauth_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/transport/oauth"
)

const redirect = oauthtest.Redirect

// realAS is the shared real authorization server (internal/oauthtest: an
// OpenID provider on zitadel's op package, a resource server in front).
type realAS struct{ *oauthtest.Server }

func newRealAS(t *testing.T) *realAS { return &realAS{oauthtest.New(t, nil)} }

func (r *realAS) transport(t *testing.T, st *oauth.Store, fetch bool) *oauth.Transport {
	t.Helper()
	cfg := oauth.Config{Resource: r.Resource, RedirectURL: redirect, ClientID: oauthtest.ClientID, Store: st}
	if fetch {
		cfg.CodeFetcher = r.Fetcher()
	}
	tr, err := oauth.New(cfg)
	require.NoError(t, err)
	return tr
}

func post(t *testing.T, c *http.Client, u string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func newStore(t *testing.T) *oauth.Store {
	return &oauth.Store{Path: filepath.Join(t.TempDir(), "conduit", "tokens.json")}
}

// Sign-in, then a second process that finds the stored tokens: the access
// token expired (per the store) → refreshed before the request, rotated
// (the old refresh token no longer works), stored.
func TestRealServerRefreshAndRotation(t *testing.T) {
	r := newRealAS(t)
	st := newStore(t)
	tr := r.transport(t, st, true)
	assert.Equal(t, http.StatusOK, post(t, tr.Client(), r.Resource))
	assert.Equal(t, int32(1), r.SignIns.Load())
	e, ok, err := st.Load(r.Resource)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotEmpty(t, e.RefreshToken, "offline_access asked for: a refresh token")
	assert.Equal(t, r.AS.URL, e.AuthServer)
	fi, err := os.Stat(st.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The stored access token has expired: the next run refreshes first.
	e.Expiry = time.Now().Add(-time.Minute)
	require.NoError(t, st.Save(e))
	tr2 := r.transport(t, st, false) // no person: a sign-in would fail
	assert.Equal(t, http.StatusOK, post(t, tr2.Client(), r.Resource))
	assert.Equal(t, int32(1), r.Refreshes.Load())
	assert.Equal(t, int32(1), r.SignIns.Load(), "no new sign-in")
	e2, _, err := st.Load(r.Resource)
	require.NoError(t, err)
	assert.NotEqual(t, e.RefreshToken, e2.RefreshToken, "the refresh token rotated")
	assert.NotEqual(t, e.AccessToken, e2.AccessToken)
	_, err = r.Storage.TokenRequestByRefreshToken(context.Background(), e.RefreshToken)
	assert.Error(t, err, "the old refresh token is gone at the provider")
}

// The access token is revoked while the client holds it (the server's 401
// mid-session): one refresh, no sign-in. Then the refresh token is revoked
// too: the next 401 signs in again.
func TestRealServerExpiryDuringACallAndRevokedRefreshToken(t *testing.T) {
	r := newRealAS(t)
	st := newStore(t)
	tr := r.transport(t, st, true)
	c := tr.Client()
	require.Equal(t, http.StatusOK, post(t, c, r.Resource))
	e, _, _ := st.Load(r.Resource)
	r.Revoke(t, e.AccessToken)
	assert.Equal(t, http.StatusOK, post(t, c, r.Resource))
	assert.Equal(t, int32(1), r.Refreshes.Load(), "the 401 refreshed")
	assert.Equal(t, int32(1), r.SignIns.Load(), "without a new sign-in")

	e, _, _ = st.Load(r.Resource)
	r.Revoke(t, e.AccessToken)
	r.Revoke(t, e.RefreshToken)
	assert.Equal(t, http.StatusOK, post(t, c, r.Resource))
	assert.Equal(t, int32(2), r.Refreshes.Load(), "the refresh was tried and refused")
	assert.Equal(t, int32(2), r.SignIns.Load(), "then a new sign-in")

	// Without a person, the same revocation fails at once naming login.
	e, _, _ = st.Load(r.Resource)
	r.Revoke(t, e.AccessToken)
	r.Revoke(t, e.RefreshToken)
	tr3 := r.transport(t, st, false)
	req, _ := http.NewRequest(http.MethodPost, r.Resource, strings.NewReader(`{}`))
	_, err := tr3.Client().Do(req)
	require.ErrorIs(t, err, oauth.ErrSignInNeeded)
	assert.NotContains(t, err.Error(), e.AccessToken)
	assert.NotContains(t, err.Error(), e.RefreshToken)
}
