package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// clientCredentials signs in without a person (the OAuth client
// credentials extension, for a host or a gateway): protected resource
// metadata, authorization server metadata, then a client_credentials
// grant with the configured ClientID and ClientSecret, authenticated as
// the server prefers (client_secret_basic, else client_secret_post), with
// the resource indicator.
func (t *Transport) clientCredentials(ctx context.Context, resp *http.Response) error {
	cs, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	var prm *oauthex.ProtectedResourceMetadata
	var errs []error
	for _, u := range t.prmURLs(cs) {
		p, err := oauthex.GetProtectedResourceMetadata(ctx, u.url, u.resource, t.asHTTP)
		if err == nil && p != nil && len(p.AuthorizationServers) > 0 {
			prm = p
			break
		}
		errs = append(errs, err)
	}
	if prm == nil {
		return fmt.Errorf("no protected resource metadata: %w", errors.Join(errs...))
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], t.asHTTP)
	if err != nil {
		return err
	}
	if asm == nil {
		return errors.New("no authorization server metadata")
	}
	style := oauth2.AuthStyleInHeader
	if m := asm.TokenEndpointAuthMethodsSupported; len(m) > 0 && !slices.Contains(m, "client_secret_basic") && slices.Contains(m, "client_secret_post") {
		style = oauth2.AuthStyleInParams
	}
	var scopes []string
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			scopes = strings.Fields(c.Params["scope"])
		}
	}
	if scopes == nil {
		scopes = prm.ScopesSupported
	}
	cc := &clientcredentials.Config{ClientID: t.cfg.ClientID, ClientSecret: t.cfg.ClientSecret, TokenURL: asm.TokenEndpoint,
		Scopes: scopes, AuthStyle: style, EndpointParams: url.Values{"resource": {prm.Resource}}}
	tctx := context.WithValue(context.Background(), oauth2.HTTPClient, t.asHTTP)
	ts := cc.TokenSource(tctx)
	if _, err := ts.Token(); err != nil {
		return fmt.Errorf("client credentials grant failed: %w", err)
	}
	t.ts = ts
	t.gen++
	return nil
}

type prmURL struct{ url, resource string }

// prmURLs are the places of the protected resource metadata, in the
// spec's order: the challenge's, the path-based well-known URL, the root.
func (t *Transport) prmURLs(cs []oauthex.Challenge) []prmURL {
	var out []prmURL
	for _, c := range cs {
		if u := c.Params["resource_metadata"]; u != "" {
			out = append(out, prmURL{u, t.cfg.Resource})
			break
		}
	}
	ru, err := url.Parse(t.cfg.Resource)
	if err != nil {
		return out
	}
	mu := *ru
	mu.RawQuery = ""
	mu.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(ru.Path, "/")
	out = append(out, prmURL{mu.String(), t.cfg.Resource})
	mu.Path = "/.well-known/oauth-protected-resource"
	root := *ru
	root.Path, root.RawQuery = "", ""
	return append(out, prmURL{mu.String(), root.String()})
}
