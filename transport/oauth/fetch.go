package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// HeadlessFetcher is a CodeFetcher for an authorization server that
// answers at once (the conformance suite's): it GETs the authorization URL
// without following the redirect and reads code, state and iss from
// Location. client nil means a client with the DefaultTimeout.
func HeadlessFetcher(client *http.Client) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		c := http.Client{Timeout: DefaultTimeout}
		if client != nil {
			c = *client
		}
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		drain(resp.Body)
		loc := resp.Header.Get("Location")
		if loc == "" {
			return nil, fmt.Errorf("oauth: the authorization endpoint answered %d without a redirect", resp.StatusCode)
		}
		return ReadRedirect(loc)
	}
}

// ReadRedirect reads the authorization response from the redirect URL: an
// error (error=…) fails, and each of code, state, iss must appear at most
// once.
func ReadRedirect(raw string) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("oauth: the redirect is not a URL")
	}
	q := u.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("oauth: the authorization server refused: %.100q", e)
	}
	for _, k := range []string{"code", "state", "iss"} {
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("oauth: the redirect carries %d %q parameters", len(q[k]), k)
		}
	}
	if q.Get("code") == "" {
		return nil, errors.New("oauth: the redirect carries no code")
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
