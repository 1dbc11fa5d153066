package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// loginTimeout bounds a sign-in at the browser.
const loginTimeout = 5 * time.Minute

// tokenStore is where the commands keep their tokens: the OS keyring, else
// the file (CONDUIT_TOKEN_FILE
// moves it: tests, a second identity).
func tokenStore() *oauth.Store { return oauth.DefaultStore() }

func (a *app) loginCommand() *cobra.Command {
	var url, config string
	var noBrowser bool
	c := &cobra.Command{
		Use:   "login (--url URL | --config FILE SERVER)",
		Short: "Sign in to a remote server that needs it (OAuth), and keep the tokens",
		Long: `Sign in to the Streamable HTTP server at URL (or the server SERVER of the
configuration FILE): the browser opens on the authorization server's page
(the URL is printed when no browser can be opened, or with --no-browser);
its answer comes back to a listener on 127.0.0.1 at a random port, which
takes one request and closes. The tokens are kept in conduit/tokens.json
under the user config dir (mode 0600) and used, and refreshed, by every
other command, the host and the gateway. See docs/auth.md.`,
		Example: `  conduit login --url https://mcp.example.com/mcp
  conduit login --config servers.json github --no-browser`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource, id, err := a.loginResource(url, config, args)
			if err != nil {
				return err
			}
			return a.runLogin(cmd.Context(), resource, id, noBrowser)
		},
	}
	c.Flags().StringVar(&url, "url", "", "the server's Streamable HTTP `URL`")
	c.Flags().StringVar(&config, "config", "", "the configuration `FILE` that names SERVER")
	c.Flags().BoolVar(&noBrowser, "no-browser", false, "print the sign-in URL, do not open a browser")
	return c
}

func (a *app) logoutCommand() *cobra.Command {
	var url, config string
	c := &cobra.Command{
		Use:   "logout (--url URL | --config FILE SERVER)",
		Short: "Forget the tokens of a server",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource, _, err := a.loginResource(url, config, args)
			if err != nil {
				return err
			}
			found, err := tokenStore().Delete(resource)
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if found {
				fmt.Fprintf(a.std.out, "signed out of %s\n", resource)
			} else {
				fmt.Fprintf(a.std.out, "no tokens kept for %s\n", resource)
			}
			return nil
		},
	}
	c.Flags().StringVar(&url, "url", "", "the server's Streamable HTTP `URL`")
	c.Flags().StringVar(&config, "config", "", "the configuration `FILE` that names SERVER")
	return c
}

// loginResource is the URL of --url, or of the server args[0] of --config
// with its client identity ("conduit": {"oauth": …}).
func (a *app) loginResource(url, config string, args []string) (string, host.OAuthSettings, error) {
	var none host.OAuthSettings
	switch {
	case url != "" && config != "":
		return "", none, usagef("give either --url URL or --config FILE SERVER, not both")
	case url != "":
		if len(args) > 0 {
			return "", none, usagef("--url takes no SERVER")
		}
		return url, none, nil
	case config == "":
		return "", none, usagef("give --url URL or --config FILE SERVER")
	case len(args) == 0:
		return "", none, usagef("--config FILE needs the SERVER to sign in to")
	}
	a.opts.config = config
	cfg, err := a.readConfig(newLogger(a.stderr, a.opts.verbose, false))
	if err != nil {
		return "", none, err
	}
	s, ok := cfg.Servers[args[0]]
	if !ok {
		return "", none, usagef("%s names no server %q", config, args[0])
	}
	if s.URL == "" {
		return "", none, usagef("server %q of %s runs a command: only a remote (URL) server signs in", args[0], config)
	}
	return s.URL, s.Conduit.OAuth, nil
}

// runLogin signs in anew: one request to the server with no token; its
// 401 starts the sign-in, whose tokens the store keeps.
func (a *app) runLogin(ctx context.Context, resource string, id host.OAuthSettings, noBrowser bool) error {
	lb, err := oauth.NewLoopback()
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	defer lb.Close()
	show := func(u string) {
		if !noBrowser {
			if xdg, err := exec.LookPath("xdg-open"); err == nil {
				if exec.Command(xdg, u).Start() == nil {
					fmt.Fprintf(a.stderr, "Opened the browser to sign in. If it did not open, visit:\n\n  %s\n\n", u)
					return
				}
			}
		}
		fmt.Fprintf(a.stderr, "To sign in, open this URL in a browser:\n\n  %s\n\nWaiting for the sign-in (%v)...\n", u, loginTimeout)
	}
	t, err := oauth.New(oauth.Config{Resource: resource, RedirectURL: lb.RedirectURL(), CodeFetcher: lb.Fetcher(show),
		ClientName: "Conduit", Store: tokenStore(), IgnoreStored: true,
		ClientID: id.ClientID, ClientSecret: id.ClientSecret, ClientIDMetadataURL: id.ClientMetadataURL})
	if err != nil {
		return usagef("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, loginTimeout)
	defer cancel()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, bytes.NewReader(body))
	if err != nil {
		return usagef("invalid URL %q: %v", resource, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := t.Client().Do(req)
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) {
			return &exitError{code: exitConnect, err: oe}
		}
		return &exitError{code: exitConnect, msg: "could not reach the server: " + plain(err), err: err}
	}
	resp.Body.Close()
	if !t.SignedIn() {
		fmt.Fprintf(a.std.out, "%s did not ask for sign-in (HTTP %d): nothing to keep\n", resource, resp.StatusCode)
		return nil
	}
	fmt.Fprintf(a.std.out, "signed in to %s; the tokens are kept for conduit's other commands\n", resource)
	return nil
}

// needsSignIn says what to run when err is a server that wants a sign-in
// this command cannot do ("" otherwise).
func needsSignIn(err error) string {
	var oe *oauth.Error
	if errors.As(err, &oe) && errors.Is(err, oauth.ErrSignInNeeded) {
		msg := "the server " + oe.Redacted() + " needs sign-in: run `conduit login --url " + oe.Redacted() + "` (or `conduit login --config FILE SERVER`), then again"
		if why := oe.Err.Error(); why != oauth.ErrSignInNeeded.Error() {
			msg += " " + strings.TrimPrefix(why, oauth.ErrSignInNeeded.Error()+" ")
		}
		return msg
	}
	var se *transport.HTTPStatusError
	if errors.As(err, &se) && se.NeedsSignIn() {
		return "the server " + se.URL + " needs sign-in: run `conduit login --url " + se.URL + "` (or `conduit login --config FILE SERVER`), then again"
	}
	return ""
}
