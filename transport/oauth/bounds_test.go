package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// hostile is a resource server and authorization server on one origin whose
// parts a test replaces.
type hostile struct {
	srv     *httptest.Server
	prm     http.HandlerFunc // /.well-known/oauth-protected-resource/mcp
	asMeta  http.HandlerFunc // /.well-known/oauth-authorization-server
	token   http.HandlerFunc // /token
	fetched atomic.Int32
}

func newHostile(t *testing.T) *hostile {
	h := &hostile{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+h.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		case "/.well-known/oauth-protected-resource/mcp":
			h.prm(w, r)
		case "/.well-known/oauth-authorization-server":
			h.asMeta(w, r)
		case "/token":
			h.token(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.srv.Close)
	h.prm = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": h.srv.URL + "/mcp", "authorization_servers": []string{h.srv.URL}})
	}
	h.asMeta = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"issuer": h.srv.URL, "authorization_endpoint": h.srv.URL + "/authorize",
			"token_endpoint": h.srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
	}
	h.token = func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusBadRequest) }
	return h
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// signIn runs one request to /mcp; the fetcher answers with a code at once.
func (h *hostile) signIn(t *testing.T, timeout time.Duration) error {
	t.Helper()
	tr, err := oauth.New(oauth.Config{Resource: h.srv.URL + "/mcp", RedirectURL: "http://127.0.0.1/cb", ClientID: "pre", Timeout: timeout,
		CodeFetcher: func(_ context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			h.fetched.Add(1)
			return &auth.AuthorizationResult{Code: "c", State: stateOf(a.URL)}, nil
		}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+"/mcp", strings.NewReader("{}"))
	resp, err := tr.Client().Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("the sign-in succeeded (HTTP %d)", resp.StatusCode)
	}
	require.NoError(t, ctx.Err(), "bounded by the sign-in, not by the test's deadline")
	return err
}

func stateOf(raw string) string {
	i := strings.Index(raw, "state=")
	s := raw[i+len("state="):]
	if j := strings.IndexByte(s, '&'); j >= 0 {
		s = s[:j]
	}
	return s
}

func TestTwentyMegabyteMetadataIsRefused(t *testing.T) {
	h := newHostile(t)
	var written atomic.Int64
	h.asMeta = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"issuer":"`)
		chunk := strings.Repeat("a", 64<<10)
		for range 20 << 4 { // 20 MiB
			n, err := io.WriteString(w, chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}
	err := h.signIn(t, 0)
	assert.Contains(t, err.Error(), "is over 524288 bytes (Config.MaxBodyBytes)")
	assert.Zero(t, h.fetched.Load(), "no sign-in on bad metadata")
}

func TestRedirectLoopAtTheWellKnownURL(t *testing.T) {
	h := newHostile(t)
	loop := func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) }
	h.prm, h.asMeta = loop, loop
	err := h.signIn(t, 0)
	assert.Contains(t, err.Error(), "stopped after 5 redirects")
	assert.Zero(t, h.fetched.Load())
}

func TestHangingTokenEndpointTimesOut(t *testing.T) {
	h := newHostile(t)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // before the server's Close
	h.token = func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
	start := time.Now()
	err := h.signIn(t, 300*time.Millisecond)
	assert.Contains(t, err.Error(), "token exchange failed")
	// The timeout is the client's and the request context's at once:
	// either may be the one that fires.
	assert.Regexp(t, `context deadline exceeded|Client\.Timeout exceeded`, err.Error())
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, int32(1), h.fetched.Load())
}

func TestMetadataNamingAnotherResourceIsRefused(t *testing.T) {
	h := newHostile(t)
	var other atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Add(1)
		http.NotFound(w, r)
	}))
	defer elsewhere.Close()
	h.prm = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": elsewhere.URL + "/mcp", "authorization_servers": []string{elsewhere.URL}})
	}
	h.asMeta = func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }
	err := h.signIn(t, 0)
	assert.Contains(t, err.Error(), "oauth: sign-in to "+h.srv.URL+"/mcp failed: refusing the protected resource metadata")
	assert.Contains(t, err.Error(), `got metadata resource "`+elsewhere.URL+`/mcp"`)
	assert.Zero(t, other.Load(), "nothing went to the origin the metadata named")
	assert.Zero(t, h.fetched.Load())
}

func TestLocationWithTwoCodesIsRefused(t *testing.T) {
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1/cb?code=a&code=b&state=s", http.StatusFound)
	}))
	defer as.Close()
	_, err := oauth.HeadlessFetcher(nil)(context.Background(), &auth.AuthorizationArgs{URL: as.URL + "/authorize"})
	require.EqualError(t, err, `oauth: the redirect carries 2 "code" parameters`)
	_, err = oauth.ReadRedirect("http://127.0.0.1/cb?code=a&state=s&state=t")
	require.EqualError(t, err, `oauth: the redirect carries 2 "state" parameters`)
	_, err = oauth.ReadRedirect("http://127.0.0.1/cb?error=access_denied&state=s")
	require.EqualError(t, err, `oauth: the authorization server refused: "access_denied"`)
	r, err := oauth.ReadRedirect("http://127.0.0.1/cb?code=a&state=s&iss=https%3A%2F%2Fas")
	require.NoError(t, err)
	assert.Equal(t, auth.AuthorizationResult{Code: "a", State: "s", Iss: "https://as"}, *r)
}

// The token goes to the resource's origin only: a request to another
// origin through the same client carries no Authorization.
func TestTokenOnlyToTheResourceOrigin(t *testing.T) {
	r := newRealAS(t)
	tr := r.transport(t, newStore(t), true)
	c := tr.Client()
	require.Equal(t, http.StatusOK, post(t, c, r.Resource))
	var got atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		got.Store(req.Header.Get("Authorization") + "|")
	}))
	defer other.Close()
	post(t, c, other.URL)
	assert.Equal(t, "|", got.Load())
}

func TestPlainHTTPAuthorizationServerIsRefused(t *testing.T) {
	h := newHostile(t)
	h.prm = func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": h.srv.URL + "/mcp", "authorization_servers": []string{"http://as.example.com"}})
	}
	err := h.signIn(t, 0)
	assert.Contains(t, err.Error(), "oauth: sign-in to "+h.srv.URL+"/mcp failed: refusing the protected resource metadata")
	assert.Contains(t, err.Error(), `"http://as.example.com" does not use HTTPS`)
	assert.Zero(t, h.fetched.Load())
}
