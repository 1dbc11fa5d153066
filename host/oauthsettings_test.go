package host

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/transport/oauth"
)

func loadOAuth(t *testing.T, block string) (OAuthSettings, []string, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"mcpServers":{"web":{"url":"https://example.com/mcp","conduit":{"oauth":`+block+`}}}}`), 0o600))
	cfg, warnings, err := Load(p)
	if err != nil {
		return OAuthSettings{}, warnings, err
	}
	return cfg.Servers["web"].Conduit.OAuth, warnings, nil
}

// The three sign-ins without a secret are keys of the oauth block.
func TestOAuthMachineSettings(t *testing.T) {
	o, warnings, err := loadOAuth(t, `{"clientId":"svc","clientCredentials":true,"privateKeyJwt":{"keyFile":"/etc/conduit/svc.pem","keyId":"k1","algorithm":"ES256","x":1}}`)
	require.NoError(t, err)
	assert.Equal(t, OAuthSettings{ClientID: "svc", ClientCredentials: true, PrivateKeyJWT: &PrivateKeyJWT{KeyFile: "/etc/conduit/svc.pem", KeyID: "k1", Algorithm: "ES256"}}, o)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "conduit.oauth.privateKeyJwt.x")
	c := o.OAuthConfig()
	assert.True(t, c.ClientCredentials)
	assert.Equal(t, &oauth.ClientKey{KeyFile: "/etc/conduit/svc.pem", KeyID: "k1", Algorithm: "ES256"}, c.ClientKey)

	o, _, err = loadOAuth(t, `{"clientId":"wl","jwtBearer":{"assertionFile":"/var/run/secrets/tokens/mcp"}}`)
	require.NoError(t, err)
	assert.Equal(t, OAuthSettings{ClientID: "wl", JWTBearer: &JWTBearer{AssertionFile: "/var/run/secrets/tokens/mcp"}}, o)

	t.Setenv("CONDUIT_TEST_ID_TOKEN", "eyJ.id")
	o, _, err = loadOAuth(t, `{"clientId":"c","clientSecret":"s","enterprise":{"idpIssuer":"https://idp.example.com","idpClientId":"ic","idpClientSecret":"is","idTokenEnv":"CONDUIT_TEST_ID_TOKEN"}}`)
	require.NoError(t, err)
	assert.Equal(t, &EnterpriseIdP{Issuer: "https://idp.example.com", ClientID: "ic", ClientSecret: "is", IDTokenEnv: "CONDUIT_TEST_ID_TOKEN"}, o.Enterprise)
	c = o.OAuthConfig()
	require.NotNil(t, c.Enterprise)
	assert.Equal(t, "https://idp.example.com", c.Enterprise.Issuer)
	tok, err := c.Enterprise.IDToken(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "eyJ.id", tok)
}

// Settings that cannot sign in are refused with the key at fault.
func TestOAuthMachineSettingsRefused(t *testing.T) {
	for block, want := range map[string]string{
		`{"clientId":"svc","clientCredentials":true,"privateKeyJwt":{"keyFile":"/k.pem","algorithm":"HS256"}}`: `key "conduit.oauth.privateKeyJwt.algorithm": signing algorithm "HS256" is not one of ES256`,
		`{"clientId":"svc","clientCredentials":true,"privateKeyJwt":{"keyId":"k1"}}`:                           `key "conduit.oauth.privateKeyJwt": want keyFile, the PEM private key`,
		`{"clientCredentials":true,"privateKeyJwt":{"keyFile":"/k.pem"}}`:                                      `key "conduit.oauth": privateKeyJwt needs clientId`,
		`{"clientId":"svc","clientSecret":"s","privateKeyJwt":{"keyFile":"/k.pem"}}`:                           `key "conduit.oauth": give clientSecret or privateKeyJwt, not both`,
		`{"clientId":"svc","clientCredentials":true}`:                                                          `key "conduit.oauth": clientCredentials needs clientId with clientSecret or privateKeyJwt`,
		`{"jwtBearer":{}}`: `key "conduit.oauth.jwtBearer": want one of assertionFile and assertionEnv`,
		`{"jwtBearer":{"assertionFile":"/a","assertionEnv":"A"}}`:                                    `key "conduit.oauth.jwtBearer": want one of assertionFile and assertionEnv`,
		`{"enterprise":{"idTokenFile":"/t"}}`:                                                        `key "conduit.oauth.enterprise": want idpTokenEndpoint or idpIssuer`,
		`{"enterprise":{"idpIssuer":"https://idp"}}`:                                                 `key "conduit.oauth.enterprise": want one of idTokenFile and idTokenEnv`,
		`{"jwtBearer":{"assertionEnv":"A"},"enterprise":{"idpIssuer":"https://i","idTokenEnv":"T"}}`: `key "conduit.oauth": give one of clientCredentials, jwtBearer and enterprise, not [jwtBearer enterprise]`,
	} {
		_, _, err := loadOAuth(t, block)
		assert.ErrorContains(t, err, want, block)
	}
}

// A host's server with a jwtBearer block signs in with the workload's
// assertion from the file (no person, no stored token) and serves tools.
func TestHostWorkloadIdentity(t *testing.T) {
	t.Setenv("CONDUIT_TOKEN_FILE", t.TempDir()+"/tokens.json")
	server := mcp.NewServer(&mcp.Implementation{Name: "wif", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var assertions []string
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON := func(v any) { w.Header().Set("Content-Type", "application/json"); _ = json.NewEncoder(w).Encode(v) }
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			writeJSON(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{srv.URL}})
		case "/.well-known/oauth-authorization-server":
			writeJSON(map[string]any{"issuer": srv.URL, "token_endpoint": srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"},
				"grant_types_supported": []string{oauth.GrantJWTBearer}})
		case "/token":
			_ = r.ParseForm()
			mu.Lock()
			assertions = append(assertions, r.PostForm.Get("grant_type")+" "+r.PostForm.Get("assertion"))
			mu.Unlock()
			writeJSON(map[string]any{"access_token": "wif-token", "token_type": "Bearer", "expires_in": 3600})
		case "/mcp":
			if r.Header.Get("Authorization") != "Bearer wif-token" {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			mcpHandler.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("eyJ.workload\n"), 0o600))
	settings := fast(100)
	settings.OAuth = OAuthSettings{ClientID: "wl", JWTBearer: &JWTBearer{AssertionFile: file}}
	h, events := newHost(t, Config{Servers: map[string]Server{"web": {URL: srv.URL + "/mcp", Conduit: settings}}}, Options{})
	waitFor(t, events, map[string]State{"web": StateReady})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.CallTool(ctx, "web", "hello", nil)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, assertions)
	assert.Equal(t, oauth.GrantJWTBearer+" eyJ.workload", assertions[0])
	assert.Equal(t, 1, strings.Count(strings.Join(assertions, "\n"), "eyJ.workload"), "one sign-in")
}
