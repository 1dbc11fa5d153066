package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/transport/oauth"
)

// tokenRequest is what a token endpoint received.
type tokenRequest struct {
	form                url.Values
	basicUser, basicPwd string
	basic               bool
}

// machineAS is an MCP server, its authorization server (one origin) and an
// enterprise identity provider (another), recording every token request.
type machineAS struct {
	srv, idp *httptest.Server
	asMeta   map[string]any
	scopes   []string                                    // the protected resource metadata's scopes_supported
	idpMeta  bool                                        // the IdP serves /.well-known/openid-configuration
	token    func(w http.ResponseWriter, r tokenRequest) // the AS's answer (default: a token)
	exchange func(w http.ResponseWriter, r tokenRequest) // the IdP's answer (default: an ID-JAG)
	mu       sync.Mutex
	tokens   []tokenRequest // at the AS
	exchs    []tokenRequest // at the IdP
	bearers  []string       // Authorization headers /mcp received
}

func newMachineAS(t *testing.T) *machineAS {
	m := &machineAS{}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			m.mu.Lock()
			m.bearers = append(m.bearers, r.Header.Get("Authorization"))
			m.mu.Unlock()
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer at-") {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+m.srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			w.WriteHeader(http.StatusOK)
		case "/.well-known/oauth-protected-resource/mcp":
			writeJSON(w, map[string]any{"resource": m.srv.URL + "/mcp", "authorization_servers": []string{m.srv.URL}, "scopes_supported": m.scopes})
		case "/.well-known/oauth-authorization-server":
			meta := map[string]any{"issuer": m.srv.URL, "token_endpoint": m.srv.URL + "/token", "code_challenge_methods_supported": []string{"S256"}}
			for k, v := range m.asMeta {
				meta[k] = v
			}
			writeJSON(w, meta)
		case "/token":
			tr := readTokenRequest(r)
			m.mu.Lock()
			m.tokens = append(m.tokens, tr)
			n := len(m.tokens)
			m.mu.Unlock()
			if m.token != nil {
				m.token(w, tr)
				return
			}
			writeJSON(w, map[string]any{"access_token": fmt.Sprintf("at-%d", n), "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	m.idp = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			if !m.idpMeta {
				http.NotFound(w, r)
				return
			}
			writeJSON(w, map[string]any{"issuer": m.idp.URL, "authorization_endpoint": m.idp.URL + "/authorize",
				"token_endpoint": m.idp.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
		case "/token":
			tr := readTokenRequest(r)
			m.mu.Lock()
			m.exchs = append(m.exchs, tr)
			n := len(m.exchs)
			m.mu.Unlock()
			if m.exchange != nil {
				m.exchange(w, tr)
				return
			}
			writeJSON(w, map[string]any{"access_token": fmt.Sprintf("jag-%d", n), "token_type": "N_A",
				"issued_token_type": oauth.TokenTypeIDJAG})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.idp.Close)
	return m
}

func readTokenRequest(r *http.Request) tokenRequest {
	_ = r.ParseForm()
	tr := tokenRequest{form: r.PostForm}
	tr.basicUser, tr.basicPwd, tr.basic = r.BasicAuth()
	return tr
}

// call sends one request to /mcp through a Transport for cfg.
func (m *machineAS) call(t *testing.T, cfg oauth.Config) error {
	t.Helper()
	cfg.Resource = m.srv.URL + "/mcp"
	tr, err := oauth.New(cfg)
	require.NoError(t, err)
	return m.callWith(t, tr)
}

func (m *machineAS) callWith(t *testing.T, tr *oauth.Transport) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.srv.URL+"/mcp", strings.NewReader("{}"))
	resp, err := tr.Client().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

func (m *machineAS) tokenRequests() []tokenRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tokenRequest(nil), m.tokens...)
}

func (m *machineAS) exchanges() []tokenRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tokenRequest(nil), m.exchs...)
}

// writeKey writes key as a PEM file of the given type, mode 0600.
func writeKey(t *testing.T, typ string, der []byte) string {
	p := filepath.Join(t.TempDir(), "key.pem")
	require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return p
}

func ecKey(t *testing.T) (*ecdsa.PrivateKey, string) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return k, writeKey(t, "PRIVATE KEY", der)
}

// The client credentials grant with private_key_jwt: the form has no
// secret, and the assertion is signed with the key, kid in the header,
// iss and sub the client id, aud the issuer (a single string), a minute
// of life and a new jti for each token request.
func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	m := newMachineAS(t)
	m.asMeta = map[string]any{"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported": []string{"ES256"}}
	// A token of 1 s is expired at once (the refresh margin is 10 s):
	// each request asks for a new one, with a new assertion.
	m.token = func(w http.ResponseWriter, _ tokenRequest) {
		writeJSON(w, map[string]any{"access_token": fmt.Sprintf("at-%d", len(m.tokenRequests())), "token_type": "Bearer", "expires_in": 1})
	}
	key, file := ecKey(t)
	tr, err := oauth.New(oauth.Config{Resource: m.srv.URL + "/mcp", ClientID: "svc-1", ClientCredentials: true,
		ClientKey: &oauth.ClientKey{KeyFile: file, KeyID: "k1", Algorithm: "ES256"}})
	require.NoError(t, err)
	require.NoError(t, m.callWith(t, tr)) // sign-in, then the token for the retry
	require.NoError(t, m.callWith(t, tr))
	reqs := m.tokenRequests()
	require.Len(t, reqs, 3)
	var jtis []string
	for _, r := range reqs {
		assert.False(t, r.basic, "no Basic authentication with private_key_jwt")
		assert.Equal(t, "client_credentials", r.form.Get("grant_type"))
		assert.Equal(t, oauth.ClientAssertionType, r.form.Get("client_assertion_type"))
		assert.Equal(t, m.srv.URL+"/mcp", r.form.Get("resource"))
		assert.Equal(t, "svc-1", r.form.Get("client_id"))
		assert.Empty(t, r.form.Get("client_secret"))
		assert.ElementsMatch(t, []string{"grant_type", "client_assertion_type", "client_assertion", "resource", "client_id"}, keys(r.form))
		claims := jwt.MapClaims{}
		tok, err := jwt.ParseWithClaims(r.form.Get("client_assertion"), claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil },
			jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience(m.srv.URL), jwt.WithIssuer("svc-1"), jwt.WithSubject("svc-1"), jwt.WithExpirationRequired())
		require.NoError(t, err)
		assert.Equal(t, "k1", tok.Header["kid"])
		assert.Equal(t, m.srv.URL, claims["aud"], "aud is the issuer, a single string")
		assert.Equal(t, 60.0, claims["exp"].(float64)-claims["iat"].(float64))
		assert.InDelta(t, float64(time.Now().Unix()), claims["iat"], 5)
		jti, _ := claims["jti"].(string)
		assert.GreaterOrEqual(t, len(jti), 16)
		jtis = append(jtis, jti)
	}
	assert.Len(t, map[string]bool{jtis[0]: true, jtis[1]: true, jtis[2]: true}, 3, "a new jti for each assertion")
	m.mu.Lock()
	assert.Equal(t, []string{"", "Bearer at-2", "Bearer at-3"}, m.bearers)
	m.mu.Unlock()
}

// signInError is the message of the *oauth.Error in err.
func signInError(t *testing.T, err error) string {
	t.Helper()
	var oe *oauth.Error
	require.ErrorAs(t, err, &oe)
	return oe.Error()
}

func keys(v url.Values) []string {
	var out []string
	for k := range v {
		out = append(out, k)
	}
	return out
}

// An RSA key in PKCS #1 signs with the algorithm asked (PS256), and with
// none asked, the key's own (RS256); no kid header without a KeyID.
func TestPrivateKeyJWTRSA(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	file := writeKey(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))
	for _, alg := range []string{"PS256", ""} {
		m := newMachineAS(t)
		require.NoError(t, m.call(t, oauth.Config{ClientID: "svc", ClientCredentials: true, ClientKey: &oauth.ClientKey{KeyFile: file, Algorithm: alg}}))
		reqs := m.tokenRequests()
		require.Len(t, reqs, 1)
		want := alg
		if want == "" {
			want = "RS256"
		}
		tok, err := jwt.Parse(reqs[0].form.Get("client_assertion"), func(*jwt.Token) (any, error) { return &k.PublicKey, nil }, jwt.WithValidMethods([]string{want}))
		require.NoError(t, err, alg)
		assert.NotContains(t, tok.Header, "kid")
	}
}

// A key that cannot be read or does not fit fails the sign-in with what
// is wrong, before any token request.
func TestPrivateKeyJWTBadKey(t *testing.T) {
	_, ecFile := ecKey(t)
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rsaFile := writeKey(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk))
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "key.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a key"), 0o600))
	cert := writeKey(t, "CERTIFICATE", []byte{1, 2, 3})
	missing := filepath.Join(dir, "missing.pem")
	for _, c := range []struct {
		name   string
		key    oauth.ClientKey
		asMeta map[string]any
		want   string
	}{
		{"missing", oauth.ClientKey{KeyFile: missing}, nil, "reading the client key: open " + missing + ": no such file or directory"},
		{"a directory", oauth.ClientKey{KeyFile: dir}, nil, "reading the client key: reading " + dir + ": read " + dir + ": is a directory"},
		{"not PEM", oauth.ClientKey{KeyFile: notPEM}, nil, "the client key file " + notPEM + " holds no PEM block"},
		{"a certificate", oauth.ClientKey{KeyFile: cert}, nil, `the client key file ` + cert + ` holds a "CERTIFICATE", not a private key`},
		{"EC key, RSA algorithm", oauth.ClientKey{KeyFile: ecFile, Algorithm: "RS256"}, nil, "the client key file " + ecFile + " is an EC P-256 key: it signs ES256, not RS256"},
		{"EC key, larger curve", oauth.ClientKey{KeyFile: ecFile, Algorithm: "ES384"}, nil, "is an EC P-256 key: it signs ES256, not ES384"},
		{"HMAC", oauth.ClientKey{KeyFile: ecFile, Algorithm: "HS256"}, nil, `signing algorithm "HS256" is not one of ES256, ES384, ES512, RS256, RS384, RS512, PS256, PS384, PS512, EdDSA`},
		{"none", oauth.ClientKey{KeyFile: ecFile, Algorithm: "none"}, nil, `signing algorithm "none" is not one of`},
		{"server takes ES256 only", oauth.ClientKey{KeyFile: rsaFile}, map[string]any{"token_endpoint_auth_signing_alg_values_supported": []string{"ES256"}},
			"the authorization server takes client assertions signed with ES256, not RS256"},
		{"server takes secrets only", oauth.ClientKey{KeyFile: ecFile}, map[string]any{"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}},
			"the authorization server does not take private_key_jwt (it takes client_secret_basic)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMachineAS(t)
			m.asMeta = c.asMeta
			err := m.call(t, oauth.Config{ClientID: "svc", ClientCredentials: true, ClientKey: &c.key})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "oauth: sign-in to "+m.srv.URL+"/mcp failed: ")
			assert.Empty(t, m.tokenRequests())
		})
	}
}

// Workload identity: the JWT bearer grant with the assertion the file
// holds, read again for each token request (the file is rotated).
func TestWorkloadAssertionFile(t *testing.T) {
	m := newMachineAS(t)
	m.token = func(w http.ResponseWriter, _ tokenRequest) {
		writeJSON(w, map[string]any{"access_token": "at-x", "token_type": "Bearer", "expires_in": 1})
	}
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("eyJ.workload.one\n"), 0o600))
	tr, err := oauth.New(oauth.Config{Resource: m.srv.URL + "/mcp", ClientID: "wl", WorkloadAssertion: oauth.AssertionFile(file)})
	require.NoError(t, err)
	require.NoError(t, m.callWith(t, tr))
	require.NoError(t, os.WriteFile(file, []byte("eyJ.workload.two"), 0o600))
	require.NoError(t, m.callWith(t, tr))
	reqs := m.tokenRequests()
	require.Len(t, reqs, 3) // sign-in and retry, then the second request
	for i, want := range []string{"eyJ.workload.one", "eyJ.workload.one", "eyJ.workload.two"} {
		r := reqs[i]
		assert.Equal(t, url.Values{"grant_type": {oauth.GrantJWTBearer}, "assertion": {want}, "resource": {m.srv.URL + "/mcp"}, "client_id": {"wl"}}, r.form)
		assert.False(t, r.basic)
	}
}

// The assertion may come from an environment variable; with a secret the
// client authenticates as the server prefers (client_secret_post here).
func TestWorkloadAssertionEnv(t *testing.T) {
	t.Setenv("CONDUIT_TEST_WORKLOAD_JWT", " eyJ.env ")
	m := newMachineAS(t)
	m.asMeta = map[string]any{"token_endpoint_auth_methods_supported": []string{"client_secret_post"}}
	require.NoError(t, m.call(t, oauth.Config{ClientID: "wl", ClientSecret: "s3cret", WorkloadAssertion: oauth.AssertionEnv("CONDUIT_TEST_WORKLOAD_JWT")}))
	reqs := m.tokenRequests()
	require.Len(t, reqs, 1)
	assert.Equal(t, url.Values{"grant_type": {oauth.GrantJWTBearer}, "assertion": {"eyJ.env"}, "resource": {m.srv.URL + "/mcp"},
		"client_id": {"wl"}, "client_secret": {"s3cret"}}, reqs[0].form)
}

// A refused assertion fails the sign-in once (no retry, no other grant),
// with the server's error and without the assertion, even when the
// server's description echoes it; a missing assertion sends nothing.
func TestWorkloadAssertionErrors(t *testing.T) {
	const secret = "eyJ.secret-workload-assertion"
	m := newMachineAS(t)
	m.token = func(w http.ResponseWriter, r tokenRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"expired: %s"}`, r.form.Get("assertion"))
	}
	err := m.call(t, oauth.Config{WorkloadAssertion: func(context.Context) (string, error) { return secret, nil }})
	require.Error(t, err)
	assert.Equal(t, "oauth: sign-in to "+m.srv.URL+"/mcp failed: the JWT bearer grant failed: HTTP 400: invalid_grant (expired: [redacted])", signInError(t, err))
	assert.Len(t, m.tokenRequests(), 1)

	// A body that is not a JSON error is not quoted.
	m.token = func(w http.ResponseWriter, r tokenRequest) {
		http.Error(w, "<html>"+r.form.Get("assertion")+"</html>", http.StatusBadGateway)
	}
	err = m.call(t, oauth.Config{WorkloadAssertion: func(context.Context) (string, error) { return secret, nil }})
	require.Error(t, err)
	assert.Equal(t, "oauth: sign-in to "+m.srv.URL+"/mcp failed: the JWT bearer grant failed: HTTP 502", signInError(t, err))

	m2 := newMachineAS(t)
	missing := filepath.Join(t.TempDir(), "none")
	err = m2.call(t, oauth.Config{WorkloadAssertion: oauth.AssertionFile(missing)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the workload's assertion: open "+missing+": no such file or directory")
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	err = m2.call(t, oauth.Config{WorkloadAssertion: oauth.AssertionFile(empty)})
	assert.ErrorContains(t, err, "the assertion file "+empty+" is empty")
	big := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("a", 64<<10+1)), 0o600))
	err = m2.call(t, oauth.Config{WorkloadAssertion: oauth.AssertionFile(big)})
	assert.ErrorContains(t, err, "the workload's assertion: "+big+" is over 65536 bytes")
	err = m2.call(t, oauth.Config{WorkloadAssertion: oauth.AssertionEnv("CONDUIT_TEST_UNSET_VARIABLE")})
	assert.ErrorContains(t, err, "the environment variable CONDUIT_TEST_UNSET_VARIABLE that holds the assertion is empty or unset")
	assert.Empty(t, m2.tokenRequests())
}

// Enterprise-managed authorization: the ID token is exchanged at the IdP
// (RFC 8693) for an ID-JAG whose audience is the authorization server and
// whose resource is the MCP server; the ID-JAG is the assertion of the JWT
// bearer grant, with the client's secret in Basic authentication.
func TestEnterpriseManagedAuthorization(t *testing.T) {
	m := newMachineAS(t)
	m.asMeta = map[string]any{"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}}
	idToken := "eyJ.id-token"
	require.NoError(t, m.call(t, oauth.Config{ClientID: "mcp-client", ClientSecret: "mcp-secret",
		Enterprise: &oauth.Enterprise{TokenEndpoint: m.idp.URL + "/token", ClientID: "idp-client",
			IDToken: func(context.Context) (string, error) { return idToken, nil }}}))
	ex := m.exchanges()
	require.Len(t, ex, 1)
	assert.Equal(t, url.Values{"grant_type": {oauth.GrantTokenExchange}, "requested_token_type": {oauth.TokenTypeIDJAG},
		"audience": {m.srv.URL}, "resource": {m.srv.URL + "/mcp"}, "subject_token": {idToken},
		"subject_token_type": {oauth.TokenTypeIDToken}, "client_id": {"idp-client"}}, ex[0].form)
	assert.False(t, ex[0].basic)
	reqs := m.tokenRequests()
	require.Len(t, reqs, 1)
	assert.Equal(t, url.Values{"grant_type": {oauth.GrantJWTBearer}, "assertion": {"jag-1"}, "resource": {m.srv.URL + "/mcp"}}, reqs[0].form)
	assert.True(t, reqs[0].basic)
	assert.Equal(t, []string{"mcp-client", "mcp-secret"}, []string{reqs[0].basicUser, reqs[0].basicPwd})
}

// The IdP's token endpoint may be discovered from its issuer; a secret at
// the IdP goes in Basic authentication; scopes of the challenge go to both.
func TestEnterpriseIssuerDiscovery(t *testing.T) {
	m := newMachineAS(t)
	m.idpMeta = true
	require.NoError(t, m.call(t, oauth.Config{ClientID: "mcp-client", ClientSecret: "mcp-secret",
		Enterprise: &oauth.Enterprise{Issuer: m.idp.URL, ClientID: "idp-client", ClientSecret: "idp-secret",
			IDToken: func(context.Context) (string, error) { return "eyJ.id", nil }}}))
	ex := m.exchanges()
	require.Len(t, ex, 1)
	assert.Equal(t, []string{"idp-client", "idp-secret"}, []string{ex[0].basicUser, ex[0].basicPwd})
	assert.Empty(t, ex[0].form.Get("client_id"))
	require.Len(t, m.tokenRequests(), 1)
}

// An IdP that refuses, answers garbage or issues something else than an
// ID-JAG fails the sign-in naming it; the authorization server is not
// asked, and neither the ID token nor the secrets appear in the error.
func TestEnterpriseIdPErrors(t *testing.T) {
	const idToken, idpSecret = "eyJ.secret-id-token", "idp-s3cret"
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, r tokenRequest)
		idp    func(m *machineAS) oauth.Enterprise
		want   string
	}{
		{"refused", func(w http.ResponseWriter, r tokenRequest) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"bad token %s"}`, r.form.Get("subject_token"))
		}, nil, "the token exchange at the identity provider failed: HTTP 400: invalid_grant (bad token [redacted])"},
		{"server error", func(w http.ResponseWriter, r tokenRequest) {
			http.Error(w, r.form.Get("subject_token")+" "+idpSecret, http.StatusInternalServerError)
		}, nil, "the token exchange at the identity provider failed: HTTP 500"},
		{"not an ID-JAG", func(w http.ResponseWriter, r tokenRequest) {
			writeJSON(w, map[string]any{"access_token": "idp-access", "token_type": "Bearer", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
		}, nil, "the identity provider issued a urn:ietf:params:oauth:token-type:access_token, not an ID-JAG"},
		{"no token endpoint", nil, func(m *machineAS) oauth.Enterprise {
			return oauth.Enterprise{Issuer: m.idp.URL, IDToken: oauth.AssertionEnv("PATH")}
		}, "the identity provider IDP publishes no token endpoint"},
		{"no ID token", nil, func(m *machineAS) oauth.Enterprise {
			return oauth.Enterprise{TokenEndpoint: m.idp.URL + "/token", IDToken: oauth.AssertionEnv("CONDUIT_TEST_UNSET_VARIABLE")}
		}, "the identity provider's ID token: the environment variable CONDUIT_TEST_UNSET_VARIABLE that holds the assertion is empty or unset"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newMachineAS(t)
			m.exchange = c.answer
			e := oauth.Enterprise{TokenEndpoint: m.idp.URL + "/token", ClientID: "idp-client", ClientSecret: idpSecret,
				IDToken: func(context.Context) (string, error) { return idToken, nil }}
			if c.idp != nil {
				e = c.idp(m)
			}
			err := m.call(t, oauth.Config{ClientID: "mcp-client", ClientSecret: "mcp-secret", Enterprise: &e})
			require.Error(t, err)
			assert.Contains(t, err.Error(), strings.ReplaceAll(c.want, "IDP", m.idp.URL))
			for _, s := range []string{idToken, idpSecret, "mcp-secret", "idp-access"} {
				assert.NotContains(t, err.Error(), s)
			}
			assert.Empty(t, m.tokenRequests())
		})
	}
}

// Two sign-ins without a person at once are refused; the client
// credentials grant needs a secret or a key.
func TestMachineGrantConfig(t *testing.T) {
	_, err := oauth.New(oauth.Config{Resource: "https://example.com/mcp", ClientCredentials: true,
		WorkloadAssertion: oauth.AssertionEnv("X")})
	assert.EqualError(t, err, "oauth: give one of ClientCredentials, WorkloadAssertion and Enterprise")
	m := newMachineAS(t)
	err = m.call(t, oauth.Config{ClientID: "svc", ClientCredentials: true})
	assert.ErrorContains(t, err, "the client credentials grant needs a client id with a client secret or a client key")
	err = m.call(t, oauth.Config{ClientCredentials: true, ClientKey: &oauth.ClientKey{KeyPEM: []byte("x")}})
	assert.ErrorContains(t, err, "a client key (private_key_jwt) needs the client id")
	assert.Empty(t, m.tokenRequests())
}

// The client credentials grant with a secret: Basic authentication, the
// resource and the metadata's scopes in the form; a refusal names the
// server's error without the secret.
func TestClientCredentialsSecret(t *testing.T) {
	m := newMachineAS(t)
	m.scopes = []string{"read", "write"}
	require.NoError(t, m.call(t, oauth.Config{ClientID: "svc", ClientSecret: "s3cret", ClientCredentials: true}))
	reqs := m.tokenRequests()
	require.Len(t, reqs, 1)
	assert.Equal(t, url.Values{"grant_type": {"client_credentials"}, "resource": {m.srv.URL + "/mcp"}, "scope": {"read write"}}, reqs[0].form)
	assert.Equal(t, []string{"svc", "s3cret"}, []string{reqs[0].basicUser, reqs[0].basicPwd})

	m.token = func(w http.ResponseWriter, r tokenRequest) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"no client with secret %s"}`, r.basicPwd)
	}
	err := m.call(t, oauth.Config{ClientID: "svc", ClientSecret: "s3cret", ClientCredentials: true})
	assert.Equal(t, "oauth: sign-in to "+m.srv.URL+"/mcp failed: the client credentials grant failed: HTTP 401: invalid_client (no client with secret [redacted])", signInError(t, err))
}
