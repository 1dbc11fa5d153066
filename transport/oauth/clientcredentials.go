package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// machineSignIn signs in without a person (a host, a gateway, a daemon):
// protected resource metadata, authorization server metadata, then the
// grant the configuration names (grant), with the resource indicator.
func (t *Transport) machineSignIn(ctx context.Context, resp *http.Response) error {
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
	var scopes []string
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			scopes = strings.Fields(c.Params["scope"])
		}
	}
	if scopes == nil {
		scopes = prm.ScopesSupported
	}
	g, err := t.newGrant(asm, prm.Resource, scopes)
	if err != nil {
		return err
	}
	ts := oauth2.ReuseTokenSource(nil, g)
	if _, err := ts.Token(); err != nil {
		return err
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
