package oauth_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// dpopServer is a resource server and its authorization server (on
// another origin) that check DPoP proofs (RFC 9449) and record them.
type dpopServer struct {
	srv, as   *httptest.Server
	advertise bool   // dpop_signing_alg_values_supported: ["ES256"]
	bearer    bool   // token_type Bearer whatever the request
	asNonce   string // the token endpoint wants this nonce ("": none)
	rsNonce   string // the resource wants this nonce ("": none)
	forever   bool   // the resource wants a new nonce every time
	expiresIn int
	rejected  map[string]bool // access tokens the resource answers 401 invalid_token
	mcp       http.Handler    // answers an accepted request to /mcp (nil: an empty result)

	mu       sync.Mutex
	tokenReq []dpopReq // every token request
	mcpReq   []dpopReq // every request to /mcp that carried a token
	issued   int
	nonceN   int
}

type dpopReq struct {
	auth, proof, grant string
	header             map[string]any // the proof's protected header
	claims             map[string]any // its claims (verified with its jwk)
	thumb              string
}

func newDPoPServer(t *testing.T, s *dpopServer) *dpopServer {
	if s.expiresIn == 0 {
		s.expiresIn = 3600
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.as = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.as.Close)
	return s
}

func (s *dpopServer) serve(w http.ResponseWriter, r *http.Request) {
	u, a := s.srv.URL, s.as.URL
	switch r.URL.Path {
	case "/.well-known/oauth-protected-resource/mcp":
		writeJSON(w, map[string]any{"resource": u + "/mcp", "authorization_servers": []string{a}})
	case "/.well-known/oauth-authorization-server":
		m := map[string]any{"issuer": a, "authorization_endpoint": a + "/authorize", "token_endpoint": a + "/token",
			"code_challenge_methods_supported": []string{"S256"}}
		if s.advertise {
			m["dpop_signing_alg_values_supported"] = []string{"ES256"}
		}
		writeJSON(w, m)
	case "/token":
		_ = r.ParseForm()
		d := readProof(r.Header.Get("DPoP"))
		d.grant = r.PostForm.Get("grant_type")
		s.mu.Lock()
		s.tokenReq = append(s.tokenReq, d)
		if s.asNonce != "" && d.claims["nonce"] != s.asNonce {
			s.mu.Unlock()
			w.Header().Set("DPoP-Nonce", s.asNonce)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"use_dpop_nonce"}`)
			return
		}
		s.issued++
		n := s.issued
		s.mu.Unlock()
		typ := "DPoP"
		if s.bearer || d.proof == "" {
			typ = "Bearer"
		}
		writeJSON(w, map[string]any{"access_token": fmt.Sprintf("at-%d", n), "refresh_token": fmt.Sprintf("rt-%d", n),
			"token_type": typ, "expires_in": s.expiresIn})
	case "/mcp":
		if r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `DPoP resource_metadata="`+u+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		d := readProof(r.Header.Get("DPoP"))
		d.auth = r.Header.Get("Authorization")
		s.mu.Lock()
		s.mcpReq = append(s.mcpReq, d)
		want := s.rsNonce
		if tok, _ := strings.CutPrefix(d.auth, "DPoP "); s.rejected[tok] {
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `DPoP error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if s.forever {
			s.nonceN++
			want = fmt.Sprintf("rs-%d", s.nonceN)
		}
		s.mu.Unlock()
		if want != "" && (s.forever || d.claims["nonce"] != want) {
			w.Header().Set("DPoP-Nonce", want)
			w.Header().Set("WWW-Authenticate", `DPoP error="use_dpop_nonce", error_description="nonce"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if s.mcp != nil {
			s.mcp.ServeHTTP(w, r)
			return
		}
		writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
	default:
		http.NotFound(w, r)
	}
}

// readProof parses and verifies a proof with the jwk of its header.
func readProof(p string) dpopReq {
	d := dpopReq{proof: p}
	if p == "" {
		return d
	}
	raw, _ := base64.RawURLEncoding.DecodeString(strings.Split(p, ".")[0])
	_ = json.Unmarshal(raw, &d.header)
	jws, err := jose.ParseSignedCompact(p, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(jws.Signatures) != 1 || jws.Signatures[0].Protected.JSONWebKey == nil {
		return d
	}
	k := jws.Signatures[0].Protected.JSONWebKey
	payload, err := jws.Verify(k)
	if err != nil {
		return d
	}
	_ = json.Unmarshal(payload, &d.claims)
	tb, _ := k.Thumbprint(crypto.SHA256)
	d.thumb = base64.RawURLEncoding.EncodeToString(tb)
	return d
}

func (s *dpopServer) transport(t *testing.T, cfg oauth.Config) *oauth.Transport {
	t.Helper()
	cfg.Resource = s.srv.URL + "/mcp"
	cfg.RedirectURL = "http://127.0.0.1/cb"
	cfg.ClientID = "pre"
	cfg.CodeFetcher = func(_ context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return &auth.AuthorizationResult{Code: "c", State: stateOf(a.URL)}, nil
	}
	tr, err := oauth.New(cfg)
	require.NoError(t, err)
	return tr
}

// dpopPost sends one request to url through tr; it returns the status.
func dpopPost(t *testing.T, tr *oauth.Transport, url string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	resp, err := tr.Client().Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func ath(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func TestDPoPProofs(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true})
	tr := s.transport(t, oauth.Config{})
	before := time.Now().Unix()
	code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	code, err = dpopPost(t, tr, s.srv.URL+"/mcp?tenant=a#frag")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	require.Len(t, s.tokenReq, 1)
	require.Len(t, s.mcpReq, 2)
	all := append(append([]dpopReq{}, s.tokenReq...), s.mcpReq...)
	jtis := map[any]bool{}
	for i, d := range all {
		require.NotNil(t, d.claims, "proof %d does not verify with its jwk", i)
		assert.Equal(t, "dpop+jwt", d.header["typ"])
		assert.Equal(t, "ES256", d.header["alg"])
		jwk, _ := d.header["jwk"].(map[string]any)
		assert.ElementsMatch(t, []string{"kty", "crv", "x", "y"}, jwkKeys(jwk), "the jwk is the public key only")
		assert.Equal(t, s.tokenReq[0].thumb, d.thumb, "one key for every proof")
		assert.Equal(t, "POST", d.claims["htm"])
		iat, _ := d.claims["iat"].(float64)
		assert.InDelta(t, float64(before), iat, 60)
		assert.NotEmpty(t, d.claims["jti"])
		jtis[d.claims["jti"]] = true
		assert.NotContains(t, d.claims, "nonce")
	}
	assert.Len(t, jtis, 3, "a new jti for every proof")
	assert.Equal(t, "authorization_code", s.tokenReq[0].grant)
	assert.Equal(t, s.as.URL+"/token", s.tokenReq[0].claims["htu"])
	assert.NotContains(t, s.tokenReq[0].claims, "ath")
	for _, d := range s.mcpReq {
		assert.Equal(t, "DPoP at-1", d.auth)
		assert.Equal(t, s.srv.URL+"/mcp", d.claims["htu"], "htu has no query or fragment")
		assert.Equal(t, ath("at-1"), d.claims["ath"])
	}
}

func jwkKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Without advertisement or configuration no proof goes to the token
// endpoint, and a Bearer token goes as Bearer; Config.DPoP sends a proof
// to a server that does not advertise DPoP.
func TestDPoPSelection(t *testing.T) {
	for _, tc := range []struct {
		name       string
		advertise  bool
		dpop       bool
		bearer     bool
		wantProof  bool
		wantScheme string
	}{
		{"plain", false, false, false, false, "Bearer at-1"},
		{"configured", false, true, false, true, "DPoP at-1"},
		{"advertised, Bearer issued", true, false, true, true, "Bearer at-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDPoPServer(t, &dpopServer{advertise: tc.advertise, bearer: tc.bearer})
			tr := s.transport(t, oauth.Config{DPoP: tc.dpop})
			code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, code)
			require.Len(t, s.tokenReq, 1)
			assert.Equal(t, tc.wantProof, s.tokenReq[0].proof != "")
			require.Len(t, s.mcpReq, 1)
			assert.Equal(t, tc.wantScheme, s.mcpReq[0].auth)
			assert.Equal(t, strings.HasPrefix(tc.wantScheme, "DPoP"), s.mcpReq[0].proof != "")
		})
	}
}

// Both servers want a nonce: each refusal is answered by exactly one more
// request with the nonce, and later requests carry the nonce at once.
func TestDPoPNonce(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true, asNonce: "as-n", rsNonce: "rs-n"})
	tr := s.transport(t, oauth.Config{})
	for range 2 {
		code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	require.Len(t, s.tokenReq, 2)
	assert.NotContains(t, s.tokenReq[0].claims, "nonce")
	assert.Equal(t, "as-n", s.tokenReq[1].claims["nonce"])
	assert.NotEqual(t, s.tokenReq[0].claims["jti"], s.tokenReq[1].claims["jti"])
	require.Len(t, s.mcpReq, 3, "the refused request, its retry, the second request")
	assert.NotContains(t, s.mcpReq[0].claims, "nonce", "the authorization server's nonce stays with its origin")
	assert.Equal(t, "rs-n", s.mcpReq[1].claims["nonce"])
	assert.Equal(t, "rs-n", s.mcpReq[2].claims["nonce"])
}

// A resource that wants a new nonce every time gets two requests per
// request, and its 401 comes back: no loop, no new sign-in.
func TestDPoPNonceForever(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true, forever: true})
	tr := s.transport(t, oauth.Config{})
	code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Len(t, s.mcpReq, 2)
	assert.Len(t, s.tokenReq, 1)
	assert.Equal(t, "rs-1", s.mcpReq[1].claims["nonce"])
}

// A token endpoint that wants a new nonce every time gets two token
// requests per exchange (oauth2 tries two client authentication styles:
// four in all); the error names neither the proofs nor the key.
func TestDPoPTokenNonceForever(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true})
	n := 0
	var mu sync.Mutex
	s.as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			_ = r.ParseForm()
			mu.Lock()
			n++
			s.tokenReq = append(s.tokenReq, readProof(r.Header.Get("DPoP")))
			w.Header().Set("DPoP-Nonce", fmt.Sprintf("as-%d", n))
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"use_dpop_nonce"}`)
			return
		}
		s.serve(w, r)
	})
	store := &oauth.Store{Path: filepath.Join(t.TempDir(), "tokens.json")}
	tr := s.transport(t, oauth.Config{Store: store})
	_, err := dpopPost(t, tr, s.srv.URL+"/mcp")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use_dpop_nonce")
	require.Len(t, s.tokenReq, 4)
	assert.Equal(t, []any{nil, "as-1", "as-2", "as-3"}, []any{s.tokenReq[0].claims["nonce"], s.tokenReq[1].claims["nonce"],
		s.tokenReq[2].claims["nonce"], s.tokenReq[3].claims["nonce"]})
	for _, d := range s.tokenReq {
		assert.NotContains(t, err.Error(), d.proof)
		assert.NotContains(t, err.Error(), d.header["jwk"].(map[string]any)["x"])
	}
	assert.NoFileExists(t, store.Path, "nothing is stored for a failed sign-in")
}

// The key is stored with the tokens; a refresh (in this process, and in
// the next one that reads the store) proves the same key.
func TestDPoPKeyAcrossRefresh(t *testing.T) {
	// A token the resource no longer takes (401 invalid_token) is
	// refreshed before any new sign-in.
	s := newDPoPServer(t, &dpopServer{advertise: true, rejected: map[string]bool{}})
	store := &oauth.Store{Path: filepath.Join(t.TempDir(), "tokens.json")}
	tr := s.transport(t, oauth.Config{Store: store})
	for _, revoke := range []string{"", "at-1"} {
		s.mu.Lock()
		s.rejected[revoke] = true
		s.mu.Unlock()
		code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
	}
	e, ok, err := store.Load(s.srv.URL + "/mcp")
	require.NoError(t, err)
	require.True(t, ok)
	var jwk map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.DPoPKey), &jwk))
	assert.Contains(t, jwk, "d", "the stored key is the private key")
	assert.Equal(t, "DPoP", e.TokenType)
	assert.Equal(t, "at-2", e.AccessToken)
	fi, err := os.Stat(store.Path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	// The next process: no person, the stored key.
	s.mu.Lock()
	s.rejected["at-2"] = true
	s.mu.Unlock()
	next, err := oauth.New(oauth.Config{Resource: s.srv.URL + "/mcp", Store: store})
	require.NoError(t, err)
	code, err := dpopPost(t, next, s.srv.URL+"/mcp")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)

	require.Len(t, s.tokenReq, 3)
	assert.Equal(t, []string{"authorization_code", "refresh_token", "refresh_token"},
		[]string{s.tokenReq[0].grant, s.tokenReq[1].grant, s.tokenReq[2].grant})
	for _, d := range append(s.tokenReq, s.mcpReq...) {
		assert.Equal(t, s.tokenReq[0].thumb, d.thumb, "one key across refreshes and runs")
	}
	require.Len(t, s.mcpReq, 5, "at-1, at-1 refused, at-2, at-2 refused, at-3")
	assert.Equal(t, "DPoP at-3", s.mcpReq[4].auth)
	assert.Equal(t, ath("at-3"), s.mcpReq[4].claims["ath"])
}

// A DPoP-bound token in the store without its key is not used (it could
// not be presented), and the error says why without the token.
func TestDPoPStoredTokenWithoutKey(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true})
	store := &oauth.Store{Path: filepath.Join(t.TempDir(), "tokens.json")}
	require.NoError(t, store.Save(oauth.Entry{Resource: s.srv.URL + "/mcp", AuthServer: s.srv.URL, ClientID: "pre",
		TokenURL: s.as.URL + "/token", TokenType: "DPoP", AccessToken: "secret-at", RefreshToken: "secret-rt", Expiry: time.Now().Add(time.Hour)}))
	tr, err := oauth.New(oauth.Config{Resource: s.srv.URL + "/mcp", Store: store})
	require.NoError(t, err)
	_, err = dpopPost(t, tr, s.srv.URL+"/mcp")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "the stored DPoP-bound token has no DPoP key"), err.Error())
	assert.NotContains(t, err.Error(), "secret-")
	assert.Empty(t, s.mcpReq)
}

// A nonce over MaxDPoPNonceBytes is not kept: no retry, the 401 comes back.
func TestDPoPNonceTooLong(t *testing.T) {
	s := newDPoPServer(t, &dpopServer{advertise: true, rsNonce: strings.Repeat("n", oauth.MaxDPoPNonceBytes+1)})
	tr := s.transport(t, oauth.Config{})
	code, err := dpopPost(t, tr, s.srv.URL+"/mcp")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code)
	require.Len(t, s.mcpReq, 1)
	assert.NotContains(t, s.mcpReq[0].claims, "nonce")
}

// A whole session over transport.HTTP with a debug log: neither the log
// nor the error of a refused request holds a token, a proof or the key.
func TestDPoPNothingSecretInLogsOrErrors(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "dpop", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	s := newDPoPServer(t, &dpopServer{advertise: true, rsNonce: "rs-n",
		mcp: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)})
	store := &oauth.Store{Path: filepath.Join(t.TempDir(), "tokens.json")}
	var logs bytes.Buffer
	h := &transport.HTTP{URL: s.srv.URL + "/mcp", Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	h.Client = s.transport(t, oauth.Config{Store: store}).Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, h, conduit.Options{Name: "t", Logger: h.Logger})
	require.NoError(t, err)
	_, err = c.ListTools(ctx)
	require.NoError(t, err)
	s.mu.Lock()
	s.forever = true // every request refused from now on
	s.mu.Unlock()
	_, callErr := c.ListTools(ctx)
	require.Error(t, callErr)
	require.NoError(t, c.Close()) // its DELETE is refused too, and logged
	for ss := range srv.Sessions() {
		ss.Close()
	}

	e, ok, err := store.Load(s.srv.URL + "/mcp")
	require.NoError(t, err)
	require.True(t, ok)
	var key map[string]string
	require.NoError(t, json.Unmarshal([]byte(e.DPoPKey), &key))
	secrets := []string{e.AccessToken, e.RefreshToken, key["d"], key["x"], ath(e.AccessToken)}
	s.mu.Lock()
	for _, d := range append(s.tokenReq, s.mcpReq...) {
		secrets = append(secrets, d.proof)
	}
	s.mu.Unlock()
	require.Greater(t, len(secrets), 6)
	require.Contains(t, logs.String(), "ending the HTTP session failed", "the log has the refusals")
	for _, sec := range secrets {
		require.NotEmpty(t, sec)
		assert.NotContains(t, logs.String(), sec)
		assert.NotContains(t, callErr.Error(), sec)
	}
}
