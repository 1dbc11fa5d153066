package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// The grant and token types of the sign-ins without a person.
const (
	GrantClientCredentials = "client_credentials"
	// GrantJWTBearer presents a JWT as the grant (RFC 7523 §2.1).
	GrantJWTBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	// GrantTokenExchange is RFC 8693's token exchange.
	GrantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	// TokenTypeIDToken is an OpenID Connect ID token as a subject token.
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	// TokenTypeIDJAG is an identity assertion authorization grant (ID-JAG).
	TokenTypeIDJAG = "urn:ietf:params:oauth:token-type:id-jag"
)

// Enterprise signs in through the enterprise's identity provider
// (enterprise-managed authorization, the identity assertion authorization
// grant): the person's or the service's ID token from that provider is
// exchanged there (RFC 8693) for an ID-JAG whose audience is the MCP
// server's authorization server and whose resource is the MCP server;
// the ID-JAG is then the assertion of a JWT bearer grant (RFC 7523 §2.1)
// at that authorization server, with the client's own credentials
// (Config.ClientID and ClientSecret or ClientKey).
type Enterprise struct {
	// TokenEndpoint is the identity provider's token endpoint; empty: it
	// is read from Issuer's metadata (RFC 8414, then OpenID discovery).
	TokenEndpoint string
	// Issuer is the identity provider's issuer identifier.
	Issuer string
	// ClientID and ClientSecret are Conduit's client at the identity
	// provider (no secret: client_id in the form, no authentication).
	ClientID, ClientSecret string
	// IDToken returns the ID token the identity provider issued (the
	// subject token of the exchange).
	IDToken AssertionSource
}

// machine reports whether t signs in without a person, and how.
func (t *Transport) machine() bool {
	return t.cfg.ClientCredentials || t.cfg.WorkloadAssertion != nil || t.cfg.Enterprise != nil
}

// checkGrants refuses a Config that names two sign-ins without a person.
func checkGrants(cfg Config) error {
	n := 0
	for _, on := range []bool{cfg.ClientCredentials, cfg.WorkloadAssertion != nil, cfg.Enterprise != nil} {
		if on {
			n++
		}
	}
	if n > 1 {
		return errors.New("oauth: give one of ClientCredentials, WorkloadAssertion and Enterprise")
	}
	return nil
}

// grant gets tokens from one authorization server with the grant the
// configuration names; each Token call is a new token request with new
// assertions (oauth2.ReuseTokenSource calls it when the token expires).
type grant struct {
	t          *Transport
	tokenURL   string
	issuer     string // the authorization server's: aud of a client assertion, audience of an ID-JAG
	resource   string
	scopes     []string
	authMethod string // client_secret_basic, client_secret_post, private_key_jwt or none
	idpToken   string // Enterprise: the identity provider's token endpoint
}

// newGrant checks what the sign-in needs before the first request: the
// client identity, the client key (read and matched to its algorithm and
// to what the server takes), the identity provider's token endpoint.
func (t *Transport) newGrant(asm *oauthex.AuthServerMeta, resource string, scopes []string) (*grant, error) {
	cfg := t.cfg
	g := &grant{t: t, tokenURL: asm.TokenEndpoint, issuer: asm.Issuer, resource: resource, scopes: scopes, authMethod: "none"}
	methods := asm.TokenEndpointAuthMethodsSupported
	switch {
	case cfg.ClientKey != nil:
		if cfg.ClientID == "" {
			return nil, errors.New("a client key (private_key_jwt) needs the client id")
		}
		if len(methods) > 0 && !slices.Contains(methods, "private_key_jwt") {
			return nil, fmt.Errorf("the authorization server does not take private_key_jwt (it takes %s)", strings.Join(methods, ", "))
		}
		_, method, err := cfg.ClientKey.signer()
		if err != nil {
			return nil, err
		}
		if algs := asm.TokenEndpointAuthSigningAlgValuesSupported; len(algs) > 0 && !slices.Contains(algs, method.Alg()) {
			return nil, fmt.Errorf("the authorization server takes client assertions signed with %s, not %s", strings.Join(algs, ", "), method.Alg())
		}
		g.authMethod = "private_key_jwt"
	case cfg.ClientSecret != "":
		g.authMethod = "client_secret_basic"
		if len(methods) > 0 && !slices.Contains(methods, "client_secret_basic") && slices.Contains(methods, "client_secret_post") {
			g.authMethod = "client_secret_post"
		}
	case cfg.ClientCredentials:
		return nil, errors.New("the client credentials grant needs a client id with a client secret or a client key")
	}
	if e := cfg.Enterprise; e != nil {
		if e.IDToken == nil {
			return nil, errors.New("enterprise-managed authorization needs the identity provider's ID token")
		}
		g.idpToken = e.TokenEndpoint
		if g.idpToken == "" {
			if e.Issuer == "" {
				return nil, errors.New("enterprise-managed authorization needs the identity provider's token endpoint or issuer")
			}
			ctx, cancel := context.WithTimeout(context.Background(), orDefault(cfg.Timeout, DefaultTimeout))
			defer cancel()
			m, err := auth.GetAuthServerMetadata(ctx, e.Issuer, t.asHTTP)
			if err != nil {
				return nil, fmt.Errorf("the identity provider's metadata: %w", err)
			}
			if m == nil || m.TokenEndpoint == "" {
				return nil, fmt.Errorf("the identity provider %s publishes no token endpoint", redact(e.Issuer))
			}
			g.idpToken = m.TokenEndpoint
		}
	}
	return g, nil
}

// Token implements oauth2.TokenSource: one token request (after a token
// exchange at the identity provider, for Enterprise).
func (g *grant) Token() (*oauth2.Token, error) {
	cfg := g.t.cfg
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, g.t.asHTTP)
	v := url.Values{"grant_type": {GrantClientCredentials}, "resource": {g.resource}}
	var secrets []string
	switch {
	case cfg.Enterprise != nil:
		jag, err := g.exchange(ctx)
		if err != nil {
			return nil, err
		}
		v.Set("grant_type", GrantJWTBearer)
		v.Set("assertion", jag)
		secrets = append(secrets, jag)
	case cfg.WorkloadAssertion != nil:
		a, err := cfg.WorkloadAssertion(ctx)
		if err != nil {
			return nil, fmt.Errorf("the workload's assertion: %w", err)
		}
		v.Set("grant_type", GrantJWTBearer)
		v.Set("assertion", a)
		secrets = append(secrets, a)
	}
	cc := &clientcredentials.Config{ClientID: cfg.ClientID, TokenURL: g.tokenURL, Scopes: g.scopes, EndpointParams: v, AuthStyle: oauth2.AuthStyleInParams}
	switch g.authMethod {
	case "private_key_jwt":
		a, err := cfg.ClientKey.assertion(cfg.ClientID, g.issuer, time.Now())
		if err != nil {
			return nil, err
		}
		v.Set("client_assertion_type", ClientAssertionType)
		v.Set("client_assertion", a)
		secrets = append(secrets, a)
	case "client_secret_basic":
		cc.ClientSecret, cc.AuthStyle = cfg.ClientSecret, oauth2.AuthStyleInHeader
	case "client_secret_post":
		cc.ClientSecret = cfg.ClientSecret
	}
	secrets = append(secrets, cfg.ClientSecret)
	tok, err := cc.Token(ctx)
	if err != nil {
		return nil, tokenError(grantName(v.Get("grant_type")), err, secrets)
	}
	return tok, nil
}

// exchange trades the identity provider's ID token for an ID-JAG for this
// authorization server and resource (RFC 8693).
func (g *grant) exchange(ctx context.Context) (string, error) {
	e := g.t.cfg.Enterprise
	idt, err := e.IDToken(ctx)
	if err != nil {
		return "", fmt.Errorf("the identity provider's ID token: %w", err)
	}
	v := url.Values{"grant_type": {GrantTokenExchange}, "requested_token_type": {TokenTypeIDJAG},
		"audience": {g.issuer}, "resource": {g.resource}, "subject_token": {idt}, "subject_token_type": {TokenTypeIDToken}}
	cc := &clientcredentials.Config{ClientID: e.ClientID, ClientSecret: e.ClientSecret, TokenURL: g.idpToken, Scopes: g.scopes,
		EndpointParams: v, AuthStyle: oauth2.AuthStyleInParams}
	if e.ClientSecret != "" {
		cc.AuthStyle = oauth2.AuthStyleInHeader
	}
	tok, err := cc.Token(ctx)
	if err != nil {
		return "", tokenError("the token exchange at the identity provider", err, []string{idt, e.ClientSecret})
	}
	if it, _ := tok.Extra("issued_token_type").(string); it != "" && it != TokenTypeIDJAG {
		return "", fmt.Errorf("the identity provider issued a %s, not an ID-JAG", it)
	}
	return tok.AccessToken, nil
}

func grantName(grantType string) string {
	if grantType == GrantJWTBearer {
		return "the JWT bearer grant"
	}
	return "the client credentials grant"
}

// tokenError says why a token request failed without what was sent: a
// server's error_description that echoes an assertion or a secret has it
// redacted, and a body without a JSON error is not quoted at all.
func tokenError(step string, err error, secrets []string) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := step + " failed"
		if re.Response != nil {
			msg += fmt.Sprintf(": HTTP %d", re.Response.StatusCode)
		}
		if re.ErrorCode != "" {
			msg += ": " + re.ErrorCode
		}
		if d := re.ErrorDescription; d != "" {
			if len(d) > 300 {
				d = d[:300] + "…"
			}
			msg += " (" + d + ")"
		}
		return errors.New(redactSecrets(msg, secrets))
	}
	msg := err.Error()
	if red := redactSecrets(msg, secrets); red != msg {
		return errors.New(step + " failed: " + red)
	}
	return fmt.Errorf("%s failed: %w", step, err)
}

func redactSecrets(s string, secrets []string) string {
	for _, x := range secrets {
		if len(x) >= 4 {
			s = strings.ReplaceAll(s, x, "[redacted]")
		}
	}
	return s
}
