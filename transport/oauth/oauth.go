// Package oauth signs Conduit in to remote MCP servers that need it (MCP
// authorization: OAuth 2.1 with PKCE, protected resource metadata,
// authorization server discovery, client ID metadata documents,
// pre-registration or dynamic registration, resource indicators, scope
// step-up). The flow itself is go-sdk's auth.AuthorizationCodeHandler and
// golang.org/x/oauth2; this package puts it under transport.HTTP as an
// http.RoundTripper (the request path stays Conduit's), bounds what the
// authorization servers send, and keeps the tokens (Store).
package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// MaxAuthorizeAttempts bounds the sign-ins one request may cause: the first
// (401) and the step-ups (403 insufficient_scope) together.
const MaxAuthorizeAttempts = 3

// Defaults of Config's bounds.
const (
	DefaultTimeout       = 30 * time.Second
	DefaultMaxBodyBytes  = 512 << 10
	defaultRedirectLimit = 5
)

// ErrSignInNeeded is the error of a CodeFetcher that cannot ask a person
// (no TTY, a host, a gateway): the server needs `conduit login` first.
var ErrSignInNeeded = errors.New("the server needs sign-in: run `conduit login` for it")

// Config configures the sign-in of one MCP server.
type Config struct {
	// Resource is the MCP endpoint URL: the protected resource, and the
	// only origin that receives the access token.
	Resource string
	// RedirectURL is where the authorization server sends the code (the
	// loopback listener of `conduit login`, or any URL for a headless
	// CodeFetcher that reads Location).
	RedirectURL string
	// CodeFetcher sends a person (or, headless, a GET) to the
	// authorization URL and returns the code, state and iss of the
	// redirect. Nil means ErrSignInNeeded.
	CodeFetcher auth.AuthorizationCodeFetcher
	// ClientIDMetadataURL is Conduit's client ID metadata document (an
	// https URL with a path), used where the authorization server
	// advertises support; empty: none.
	ClientIDMetadataURL string
	// ClientID and ClientSecret are pre-registered credentials (from the
	// config); empty: dynamic registration (RFC 7591) where offered.
	ClientID, ClientSecret string
	// ClientName is sent in a dynamic registration.
	ClientName string
	// Store keeps tokens between runs; nil keeps them in memory only.
	Store *Store
	// Timeout bounds each exchange with an authorization server
	// (metadata, registration, token); 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxBodyBytes caps each response of an authorization server; 0 means
	// DefaultMaxBodyBytes (512 KiB).
	MaxBodyBytes int64
	// ClientCredentials signs in with the client credentials grant
	// (ClientID and ClientSecret, no person; the OAuth client credentials
	// extension) in place of the authorization code flow.
	ClientCredentials bool
	// ClientKey authenticates the client with a JWT signed by its key
	// (private_key_jwt) in place of ClientSecret, in the sign-ins without
	// a person.
	ClientKey *ClientKey
	// WorkloadAssertion signs in with the JWT bearer grant (RFC 7523
	// §2.1), presenting the JWT it returns (workload identity): no person.
	WorkloadAssertion AssertionSource
	// Enterprise signs in through the enterprise's identity provider
	// (token exchange for an ID-JAG, then the JWT bearer grant): no person.
	Enterprise *Enterprise
	// IgnoreStored starts without the Store's tokens (a new sign-in, as
	// `conduit login` does); new tokens are stored all the same.
	IgnoreStored bool
	// DPoP sends a DPoP proof (RFC 9449) on every token request, whatever
	// the authorization server advertises; without it, only servers whose
	// metadata lists ES256 in dpop_signing_alg_values_supported get one. A
	// token whose token_type is DPoP goes with the DPoP scheme and a proof
	// on every request either way.
	DPoP bool
	// Base sends the requests (nil: http.DefaultTransport's settings with
	// dial and TLS handshake timeouts).
	Base http.RoundTripper
}

// Transport is an http.RoundTripper that sends the Bearer token to the
// resource's origin, and on a 401 (or a 403 insufficient_scope) with a
// Bearer challenge signs in and sends the request again, at most
// MaxAuthorizeAttempts times.
type Transport struct {
	cfg     Config
	origin  string
	base    http.RoundTripper
	asHTTP  *http.Client
	handler *auth.AuthorizationCodeHandler
	dpop    *dpop

	mu      sync.Mutex // serialises sign-ins
	gen     uint64     // counts completed sign-ins (under mu)
	ts      oauth2.TokenSource
	loadErr error // the Store could not be read (said when sign-in is needed)
}

// New returns the Transport for cfg, with the tokens the Store holds for
// the resource, if any.
func New(cfg Config) (*Transport, error) {
	u, err := url.Parse(cfg.Resource)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("oauth: invalid resource URL %q", cfg.Resource)
	}
	if err := checkGrants(cfg); err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg, origin: origin(u), base: cfg.Base, dpop: newDPoP(cfg.DPoP)}
	if t.base == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = 10 * time.Second
		t.base = tr
	}
	t.asHTTP = boundedClient(t.base, orDefault(cfg.Timeout, DefaultTimeout), orDefault(cfg.MaxBodyBytes, DefaultMaxBodyBytes), t.origin)
	t.asHTTP.Transport = dpopAS{base: t.asHTTP.Transport, d: t.dpop}
	redirect := cfg.RedirectURL
	if redirect == "" {
		redirect = "http://127.0.0.1/callback"
	}
	fetch := cfg.CodeFetcher
	if fetch == nil {
		fetch = func(context.Context, *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return nil, ErrSignInNeeded
		}
	}
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: cfg.ClientName,
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RequestRefreshToken:   true,
		AcceptUnadvertisedIss: true,
		Client:                t.asHTTP,
		NewTokenSource:        t.newTokenSource,
	}
	if cfg.ClientIDMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: cfg.ClientIDMetadataURL}
	}
	if cfg.ClientID != "" {
		pre := &oauthex.ClientCredentials{ClientID: cfg.ClientID}
		if cfg.ClientSecret != "" {
			pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: cfg.ClientSecret}
		}
		hc.PreregisteredClient = pre
	}
	if cfg.Store != nil && !cfg.IgnoreStored {
		if e, ok, err := cfg.Store.Load(cfg.Resource); err != nil {
			t.loadErr = err
		} else if ok {
			if err := t.dpop.restore(e); err != nil {
				t.loadErr = err
			} else {
				t.ts = t.persisting(e.config(), e.token(), e.AuthServer)
			}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	t.handler = h
	return t, nil
}

// Client returns an http.Client for transport.HTTP.Client: requests go
// through t, redirects to another origin are refused (the token stays with
// the resource).
func (t *Transport) Client() *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if origin(req.URL) != origin(via[0].URL) {
			return fmt.Errorf("refusing a redirect to another origin (%s)", req.URL.Redacted())
		}
		return nil
	}}
}

// SignedIn reports whether t holds a token (it may need a refresh).
func (t *Transport) SignedIn() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ts != nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	refreshed := false // a 401 refreshes the token once before a new sign-in
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(ctx)
			if req.Body != nil && req.Body != http.NoBody {
				if req.GetBody == nil {
					return nil, errors.New("oauth: cannot send the request again after sign-in (no GetBody)")
				}
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		same := origin(r.URL) == t.origin
		gen := uint64(0)
		var tok *oauth2.Token
		if same {
			tok, gen = t.token()
			if tok != nil {
				if r == req {
					r = req.Clone(ctx)
				}
				r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			}
		}
		var resp *http.Response
		var err error
		if tok != nil && bound(tok) {
			resp, err = t.sendDPoP(r, tok.AccessToken)
		} else {
			resp, err = t.base.RoundTrip(r)
		}
		if err != nil || !same || attempt >= MaxAuthorizeAttempts || !wantsSignIn(resp) {
			return resp, err
		}
		if err := t.authorize(ctx, r, resp, gen, &refreshed); err != nil {
			return nil, err
		}
	}
}

// wantsSignIn: a 401 with a Bearer or DPoP challenge (but not DPoP's
// use_dpop_nonce, which sendDPoP answered), or a 403 insufficient_scope.
func wantsSignIn(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return false
	}
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Scheme != "bearer" && (c.Scheme != "dpop" || c.Params["error"] == "use_dpop_nonce") {
			continue
		}
		if resp.StatusCode == http.StatusUnauthorized || c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// authorize signs in once for the 401/403 resp to r, unless another
// request signed in since r took its token (then r is simply sent again).
// A 401 to a token that has a refresh token refreshes it first (once per
// request): an access token the server no longer takes (expired early,
// revoked) needs no person.
func (t *Transport) authorize(ctx context.Context, r *http.Request, resp *http.Response, gen uint64, refreshed *bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen && resp.StatusCode == http.StatusUnauthorized {
		drain(resp.Body)
		return nil
	}
	if p, ok := t.ts.(*persistSource); ok && resp.StatusCode == http.StatusUnauthorized && !*refreshed {
		*refreshed = true
		if p.forceRefresh() == nil {
			drain(resp.Body)
			t.gen++
			return nil
		}
	}
	if t.machine() {
		err := t.machineSignIn(ctx, resp)
		drain(resp.Body)
		if err != nil {
			return &Error{Resource: t.cfg.Resource, Err: err}
		}
		return nil
	}
	if t.cfg.CodeFetcher == nil {
		// No person to ask: tokens stored since (conduit login), else no
		// discovery, no registration, fail at once.
		drain(resp.Body)
		if resp.StatusCode == http.StatusUnauthorized && t.reloadStored() {
			return nil
		}
		err := ErrSignInNeeded
		if t.loadErr != nil {
			err = fmt.Errorf("%w (%w)", err, t.loadErr)
		}
		return &Error{Resource: t.cfg.Resource, Err: err}
	}
	if err := t.checkNamedMetadata(ctx, resp); err != nil {
		drain(resp.Body)
		return &Error{Resource: t.cfg.Resource, Err: err}
	}
	if err := t.handler.Authorize(ctx, r, resp); err != nil {
		if t.loadErr != nil && errors.Is(err, ErrSignInNeeded) {
			err = fmt.Errorf("%w (%w)", err, t.loadErr)
		}
		return &Error{Resource: t.cfg.Resource, Err: err}
	}
	ts, err := t.handler.TokenSource(ctx)
	if err != nil {
		return &Error{Resource: t.cfg.Resource, Err: err}
	}
	t.ts = ts
	t.gen++
	return nil
}

// checkNamedMetadata refuses the protected resource metadata the challenge
// names when it describes another resource or names a plain-http
// authorization server: go-sdk would skip it and try the well-known URLs,
// then the server's root as its own authorization server (2025-03-26),
// which hides the server's mistake (or an attack) behind a later error.
func (t *Transport) checkNamedMetadata(ctx context.Context, resp *http.Response) error {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil
	}
	for _, c := range cs {
		u := c.Params["resource_metadata"]
		if (c.Scheme != "bearer" && c.Scheme != "dpop") || u == "" {
			continue
		}
		_, err := oauthex.GetProtectedResourceMetadata(ctx, u, t.cfg.Resource, t.asHTTP)
		if err != nil && (strings.Contains(err.Error(), "got metadata resource") || strings.Contains(err.Error(), "does not use HTTPS")) {
			return fmt.Errorf("refusing the protected resource metadata: %w", err)
		}
		return nil
	}
	return nil
}

// token returns the current token (nil if none or its refresh failed: the
// request goes without, and its 401 signs in again) and the sign-in
// generation it belongs to.
func (t *Transport) token() (*oauth2.Token, uint64) {
	t.mu.Lock()
	ts, gen := t.ts, t.gen
	t.mu.Unlock()
	if ts == nil {
		return nil, gen
	}
	tok, err := ts.Token()
	if err != nil || tok == nil || tok.AccessToken == "" {
		return nil, gen
	}
	return tok, gen
}

// newTokenSource is go-sdk's hook after a code exchange: a token source
// that refreshes with the resource indicator and persists every new token.
func (t *Transport) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	as := ""
	if u, err := url.Parse(cfg.Endpoint.TokenURL); err == nil {
		as = origin(u)
	}
	return t.persisting(cfg, tok, as), nil
}

// Error is a sign-in that failed. It never holds a token.
type Error struct {
	Resource string
	Err      error
}

func (e *Error) Error() string {
	return "oauth: sign-in to " + redact(e.Resource) + " failed: " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// NeedsSignIn reports whether the sign-in failed for want of a person
// (ErrSignInNeeded): the host shows such a server as needing sign-in.
func (e *Error) NeedsSignIn() bool { return errors.Is(e.Err, ErrSignInNeeded) }

// Redacted is the resource URL without credentials.
func (e *Error) Redacted() string { return redact(e.Resource) }

func origin(u *url.URL) string { return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) }

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}

func orDefault[T int64 | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// drain reads and closes a body we do not use.
func drain(b io.ReadCloser) { _, _ = io.Copy(io.Discard, io.LimitReader(b, 4096)); b.Close() }
