// Package oauthtest is a real authorization server for tests: an OpenID
// provider built on zitadel's op package (its example in-memory storage:
// refresh tokens rotate, revocation works), with a resource server in front
// of an MCP handler that checks each Bearer token at the provider's
// userinfo endpoint. transport/oauth's tests and the CLI's end-to-end tests
// share it.
package oauthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// Redirect is the redirect URI of a headless Fetcher. The client ClientID
// may also redirect to a loopback listener on any port (RFC 8252), as
// `conduit login` does.
const Redirect = "http://localhost/callback"

// ClientID is the pre-registered public client (PKCE, no secret).
const ClientID = "native"

// Server is the provider (AS) and the resource server (RS) at Resource.
type Server struct {
	AS, RS    *httptest.Server
	Storage   *storage.Storage
	Refreshes atomic.Int32 // refresh_token grants the provider answered
	SignIns   atomic.Int32 // authorization codes Fetcher obtained
	// Authorized counts the requests to Resource with a valid token.
	Authorized atomic.Int32
	Resource   string
}

// New starts both servers (closed at the end of t). mcp serves Resource's
// authorized requests; nil answers every one with an empty JSON-RPC
// result.
func New(t testing.TB, mcp http.Handler) *Server {
	t.Helper()
	r := &Server{}
	if mcp == nil {
		mcp = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		})
	}
	var handler http.Handler
	// Unstarted until the handlers' variables are set (no race with a request).
	r.AS = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/oauth/token" && req.Method == http.MethodPost {
			_ = req.ParseForm()
			if req.PostForm.Get("grant_type") == "refresh_token" {
				r.Refreshes.Add(1)
			}
		}
		handler.ServeHTTP(w, req)
	}))
	asURL := "http://" + r.AS.Listener.Addr().String()
	t.Cleanup(r.AS.Close)
	clients := map[string]*storage.Client{ClientID: storage.NativeClient(ClientID, Redirect, "http://127.0.0.1/callback")}
	r.Storage = storage.NewStorageWithClients(storage.NewUserStore(asURL), clients)
	handler = exampleop.SetupServer(asURL, r.Storage, slog.New(slog.DiscardHandler), false)
	r.AS.Start()
	r.RS = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		prm := "http://" + req.Host + "/.well-known/oauth-protected-resource/mcp"
		switch req.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": r.Resource, "authorization_servers": []string{asURL},
				"scopes_supported": []string{"openid"}})
		case "/mcp":
			if !r.Valid(req.Header.Get("Authorization")) {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+prm+`"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			r.Authorized.Add(1)
			mcp.ServeHTTP(w, req)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(r.RS.Close)
	r.Resource = "http://" + r.RS.Listener.Addr().String() + "/mcp"
	r.RS.Start()
	return r
}

// Valid asks the provider's userinfo endpoint about the Authorization
// header authz.
func (r *Server) Valid(authz string) bool {
	if !strings.HasPrefix(authz, "Bearer ") {
		return false
	}
	req, _ := http.NewRequest(http.MethodGet, r.AS.URL+"/userinfo", nil)
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode == http.StatusOK
}

// Revoke revokes a token at the provider's revocation endpoint (RFC 7009).
func (r *Server) Revoke(t testing.TB, token string) {
	t.Helper()
	resp, err := http.PostForm(r.AS.URL+"/revoke", url.Values{"token": {token}, "client_id": {ClientID}})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || r.Valid("Bearer "+token) {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
}

// Browse does what a person at a browser does with the authorization URL
// authURL: signs in as the provider's test user through its login form,
// and returns the URL the provider finally redirects to (the client's
// redirect URI with code, state and iss), without following it.
func (r *Server) Browse(ctx context.Context, authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next, method, form := authURL, http.MethodGet, url.Values(nil)
	for range 10 {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, next, body)
		if err != nil {
			return "", err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && strings.Contains(next, "/login/username") {
			u, _ := url.Parse(next)
			id := u.Query().Get("authRequestID")
			next, method = r.AS.URL+"/login/username", http.MethodPost
			form = url.Values{"username": {"test-user@127.0.0.1"}, "password": {"verysecure"}, "id": {id}}
			continue
		}
		loc, err := resp.Location()
		if err != nil {
			return "", fmt.Errorf("status %d at %s without a redirect", resp.StatusCode, next)
		}
		if !strings.HasPrefix(loc.String(), r.AS.URL) {
			return loc.String(), nil
		}
		next, method, form = loc.String(), http.MethodGet, nil
	}
	return "", fmt.Errorf("no redirect to the client after 10 steps")
}

// Fetcher signs in headless (Browse) and reads the redirect's code.
func (r *Server) Fetcher() auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		loc, err := r.Browse(ctx, args.URL)
		if err != nil {
			return nil, err
		}
		r.SignIns.Add(1)
		return oauth.ReadRedirect(loc)
	}
}
