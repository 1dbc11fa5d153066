package oauth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// MaxDPoPNonceBytes bounds a server's DPoP-Nonce: a longer one is not kept
// (the next proof goes without, and the server's challenge says so).
const MaxDPoPNonceBytes = 1024

// dpop holds one client's DPoP state (RFC 9449): its ES256 key pair, made
// once and kept with the tokens (Entry.DPoPKey) so that a refresh and every
// later request prove the same key, the token endpoints whose authorization
// server advertises DPoP, and the last nonce each origin sent.
type dpop struct {
	always bool // Config.DPoP: a proof on every token request

	mu        sync.Mutex
	key       *ecdsa.PrivateKey
	endpoints map[string]bool   // token endpoints of servers that advertise ES256
	nonces    map[string]string // origin → the last DPoP-Nonce it sent
}

func newDPoP(always bool) *dpop {
	return &dpop{always: always, endpoints: map[string]bool{}, nonces: map[string]string{}}
}

// signer returns the key's signer, making the key on first use.
func (d *dpop) signer() (jose.Signer, error) {
	d.mu.Lock()
	if d.key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			d.mu.Unlock()
			return nil, fmt.Errorf("oauth: cannot make a DPoP key: %w", err)
		}
		d.key = k
	}
	k := d.key
	d.mu.Unlock()
	return jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
}

// keyJSON is the private key as a JWK for the Store; "" when none was made.
func (d *dpop) keyJSON() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.key == nil {
		return ""
	}
	b, err := jose.JSONWebKey{Key: d.key, Algorithm: string(jose.ES256), Use: "sig"}.MarshalJSON()
	if err != nil {
		return ""
	}
	return string(b)
}

// restore takes the stored key of e (and its token endpoint, which then
// gets proofs): a refresh proves the key the token is bound to.
func (d *dpop) restore(e Entry) error {
	if e.DPoPKey == "" {
		if strings.EqualFold(e.TokenType, "dpop") {
			return errors.New("oauth: the stored DPoP-bound token has no DPoP key")
		}
		return nil
	}
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON([]byte(e.DPoPKey)); err != nil {
		return errors.New("oauth: the stored DPoP key is not a valid JWK")
	}
	ek, ok := k.Key.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return errors.New("oauth: the stored DPoP key is not a P-256 private key")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.key = ek
	d.endpoints[stripURL(e.TokenURL)] = true
	return nil
}

// proof is a DPoP proof JWT for a request: htm, htu (without query and
// fragment), iat, a new jti, ath when it presents accessToken, and the
// origin's last nonce.
func (d *dpop) proof(method string, u *url.URL, accessToken string) (string, error) {
	s, err := d.signer()
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	c := proofClaims{JTI: base64.RawURLEncoding.EncodeToString(jti), HTM: method, HTU: stripURL(u.String()),
		IAT: time.Now().Unix(), Nonce: d.nonce(origin(u))}
	if accessToken != "" {
		h := sha256.Sum256([]byte(accessToken))
		c.ATH = base64.RawURLEncoding.EncodeToString(h[:])
	}
	p, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		return "", errors.New("oauth: cannot sign a DPoP proof")
	}
	return p, nil
}

type proofClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

func (d *dpop) nonce(o string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[o]
}

// keepNonce keeps the DPoP-Nonce of resp for the next proof to its origin,
// and reports whether there was a new one.
func (d *dpop) keepNonce(resp *http.Response) bool {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" || len(n) > MaxDPoPNonceBytes || resp.Request == nil {
		return false
	}
	o := origin(resp.Request.URL)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nonces[o] == n {
		return false
	}
	d.nonces[o] = n
	return true
}

// wantsProof reports whether a token request to u carries a proof: DPoP
// configured, or its server advertises ES256 proofs.
func (d *dpop) wantsProof(u *url.URL) bool {
	if d.always {
		return true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.endpoints[stripURL(u.String())]
}

func (d *dpop) advertise(tokenEndpoint string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.endpoints[stripURL(tokenEndpoint)] = true
}

// stripURL is u without query and fragment (htu, and how token endpoints
// are compared).
func stripURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}

// bound reports whether tok must be presented with the DPoP scheme.
func bound(tok *oauth2.Token) bool { return strings.EqualFold(tok.TokenType, "dpop") }

// dpopAS is the authorization servers' transport under DPoP: it notes the
// token endpoints whose metadata advertises ES256 proofs, adds a proof to
// each token request that wants one, keeps the nonces, and sends a token
// request refused with use_dpop_nonce once more with the new nonce.
type dpopAS struct {
	base http.RoundTripper
	d    *dpop
}

func (a dpopAS) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && isASMetadata(req.URL.Path) {
		return a.sniff(req)
	}
	if req.Method != http.MethodPost || req.Body == nil || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || !a.d.wantsProof(req.URL) {
		return a.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	if form, err := url.ParseQuery(string(body)); err != nil || form.Get("grant_type") == "" {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		return a.base.RoundTrip(r)
	}
	for retried := false; ; retried = true {
		p, err := a.d.proof(http.MethodPost, req.URL, "")
		if err != nil {
			return nil, err
		}
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("DPoP", p)
		resp, err := a.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		fresh := a.d.keepNonce(resp)
		if retried || !fresh || resp.StatusCode != http.StatusBadRequest {
			return resp, nil
		}
		// Peek at the error: only use_dpop_nonce is sent again.
		data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		var e struct {
			Error string `json:"error"`
		}
		if err != nil || json.Unmarshal(data, &e) != nil || e.Error != "use_dpop_nonce" {
			resp.Body = io.NopCloser(bytes.NewReader(data))
			return resp, nil
		}
	}
}

// sniff passes authorization server metadata through, noting its token
// endpoint when it advertises ES256 DPoP proofs.
func (a dpopAS) sniff(req *http.Request) (*http.Response, error) {
	resp, err := a.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	data, err := io.ReadAll(resp.Body) // bounded by boundedTransport
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	var m struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Algs          []string `json:"dpop_signing_alg_values_supported"`
	}
	if json.Unmarshal(data, &m) == nil && m.TokenEndpoint != "" && slices.Contains(m.Algs, string(jose.ES256)) {
		a.d.advertise(m.TokenEndpoint)
	}
	return resp, nil
}

func isASMetadata(path string) bool {
	return strings.Contains(path, "/.well-known/oauth-authorization-server") || strings.Contains(path, "/.well-known/openid-configuration")
}

// sendDPoP sends r with the DPoP-bound tok (Authorization: DPoP, and a
// proof), keeps the nonce of the answer, and sends r once more with a new
// nonce when the server answers 401 use_dpop_nonce: once, so a server
// that wants a new nonce every time gets two requests, not a loop.
func (t *Transport) sendDPoP(r *http.Request, tok string) (*http.Response, error) {
	for retried := false; ; retried = true {
		p, err := t.dpop.proof(r.Method, r.URL, tok)
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", "DPoP "+tok)
		r.Header.Set("DPoP", p)
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		fresh := t.dpop.keepNonce(resp)
		if retried || !fresh || !nonceChallenge(resp) {
			return resp, nil
		}
		if r, err = rewind(r); err != nil {
			resp.Body.Close()
			return nil, err
		}
		drain(resp.Body)
	}
}

// nonceChallenge: a 401 whose DPoP challenge is error="use_dpop_nonce".
func nonceChallenge(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized {
		return false
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Scheme == "dpop" && c.Params["error"] == "use_dpop_nonce" {
			return true
		}
	}
	return false
}

// rewind is a copy of r to send again, with a new body.
func rewind(r *http.Request) (*http.Request, error) {
	c := r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return nil, errors.New("oauth: cannot send the request again (no GetBody)")
		}
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		c.Body = b
	}
	return c, nil
}
