package oauth_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/conduitmcp/conduit/transport/oauth"
)

const redirect = "http://localhost/callback"

// realAS is an OpenID provider built on zitadel's op package (its example
// in-memory storage: refresh tokens rotate, revocation works), with a
// resource server in front that checks each Bearer token at the provider's
// userinfo endpoint.
type realAS struct {
	as, rs   *httptest.Server
	store    *storage.Storage
	refresh  atomic.Int32 // refresh_token grants the provider answered
	signIns  atomic.Int32 // authorization codes the fetcher obtained
	resource string
}

func newRealAS(t *testing.T) *realAS {
	t.Helper()
	r := &realAS{}
	var handler http.Handler
	r.as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/oauth/token" && req.Method == http.MethodPost {
			_ = req.ParseForm()
			if req.PostForm.Get("grant_type") == "refresh_token" {
				r.refresh.Add(1)
			}
		}
		handler.ServeHTTP(w, req)
	}))
	t.Cleanup(r.as.Close)
	clients := map[string]*storage.Client{"native": storage.NativeClient("native", redirect)}
	r.store = storage.NewStorageWithClients(storage.NewUserStore(r.as.URL), clients)
	handler = exampleop.SetupServer(r.as.URL, r.store, slog.New(slog.DiscardHandler), false)
	r.rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		prm := "http://" + req.Host + "/.well-known/oauth-protected-resource/mcp"
		switch req.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": r.resource, "authorization_servers": []string{r.as.URL},
				"scopes_supported": []string{"openid"}})
		case "/mcp":
			if !r.valid(req.Header.Get("Authorization")) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.rs.Close)
	r.resource = r.rs.URL + "/mcp"
	return r
}

// valid asks the provider's userinfo endpoint about the token.
func (r *realAS) valid(authz string) bool {
	if !strings.HasPrefix(authz, "Bearer ") {
		return false
	}
	req, _ := http.NewRequest(http.MethodGet, r.as.URL+"/userinfo", nil)
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// revoke revokes a token at the provider's revocation endpoint (RFC 7009).
func (r *realAS) revoke(t *testing.T, token string) {
	t.Helper()
	resp, err := http.PostForm(r.as.URL+"/revoke", url.Values{"token": {token}, "client_id": {"native"}})
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.False(t, r.valid("Bearer "+token), "revoked")
}

// fetcher signs in as the provider's test user through its login form.
func (r *realAS) fetcher() auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		next, method, form := args.URL, http.MethodGet, url.Values(nil)
		for range 10 {
			var body io.Reader
			if form != nil {
				body = strings.NewReader(form.Encode())
			}
			req, err := http.NewRequestWithContext(ctx, method, next, body)
			if err != nil {
				return nil, err
			}
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := c.Do(req)
			if err != nil {
				return nil, err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(next, "/login/username") {
				u, _ := url.Parse(next)
				id := u.Query().Get("authRequestID")
				next, method = r.as.URL+"/login/username", http.MethodPost
				form = url.Values{"username": {"test-user@127.0.0.1"}, "password": {"verysecure"}, "id": {id}}
				continue
			}
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("status %d at %s without a redirect", resp.StatusCode, next)
			}
			if strings.HasPrefix(loc.String(), redirect) {
				r.signIns.Add(1)
				return oauth.ReadRedirect(loc.String())
			}
			next, method, form = loc.String(), http.MethodGet, nil
		}
		return nil, fmt.Errorf("no code after 10 steps")
	}
}

func (r *realAS) transport(t *testing.T, st *oauth.Store, fetch bool) *oauth.Transport {
	t.Helper()
	cfg := oauth.Config{Resource: r.resource, RedirectURL: redirect, ClientID: "native", Store: st}
	if fetch {
		cfg.CodeFetcher = r.fetcher()
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
	assert.Equal(t, http.StatusOK, post(t, tr.Client(), r.resource))
	assert.Equal(t, int32(1), r.signIns.Load())
	e, ok, err := st.Load(r.resource)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotEmpty(t, e.RefreshToken, "offline_access asked for: a refresh token")
	assert.Equal(t, r.as.URL, e.AuthServer)
	fi, err := os.Stat(st.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The stored access token has expired: the next run refreshes first.
	e.Expiry = time.Now().Add(-time.Minute)
	require.NoError(t, st.Save(e))
	tr2 := r.transport(t, st, false) // no person: a sign-in would fail
	assert.Equal(t, http.StatusOK, post(t, tr2.Client(), r.resource))
	assert.Equal(t, int32(1), r.refresh.Load())
	assert.Equal(t, int32(1), r.signIns.Load(), "no new sign-in")
	e2, _, err := st.Load(r.resource)
	require.NoError(t, err)
	assert.NotEqual(t, e.RefreshToken, e2.RefreshToken, "the refresh token rotated")
	assert.NotEqual(t, e.AccessToken, e2.AccessToken)
	_, err = r.store.TokenRequestByRefreshToken(context.Background(), e.RefreshToken)
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
	require.Equal(t, http.StatusOK, post(t, c, r.resource))
	e, _, _ := st.Load(r.resource)
	r.revoke(t, e.AccessToken)
	assert.Equal(t, http.StatusOK, post(t, c, r.resource))
	assert.Equal(t, int32(1), r.refresh.Load(), "the 401 refreshed")
	assert.Equal(t, int32(1), r.signIns.Load(), "without a new sign-in")

	e, _, _ = st.Load(r.resource)
	r.revoke(t, e.AccessToken)
	r.revoke(t, e.RefreshToken)
	assert.Equal(t, http.StatusOK, post(t, c, r.resource))
	assert.Equal(t, int32(2), r.refresh.Load(), "the refresh was tried and refused")
	assert.Equal(t, int32(2), r.signIns.Load(), "then a new sign-in")

	// Without a person, the same revocation fails at once naming login.
	e, _, _ = st.Load(r.resource)
	r.revoke(t, e.AccessToken)
	r.revoke(t, e.RefreshToken)
	tr3 := r.transport(t, st, false)
	req, _ := http.NewRequest(http.MethodPost, r.resource, strings.NewReader(`{}`))
	_, err := tr3.Client().Do(req)
	require.ErrorIs(t, err, oauth.ErrSignInNeeded)
	assert.NotContains(t, err.Error(), e.AccessToken)
	assert.NotContains(t, err.Error(), e.RefreshToken)
}
