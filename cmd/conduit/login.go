package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// tokenStore is where the commands keep their tokens: the OS keyring where
// one answers, else the file (CONDUIT_TOKEN_FILE: that file only).
func tokenStore() *oauth.Store { return oauth.DefaultStore() }

func (a *app) loginCommand() *cobra.Command {
	var url, config, clientID, secretEnv string
	var noBrowser bool
	c := &cobra.Command{
		Use:   "login (--url URL | --config FILE SERVER) [--client-id ID [--client-secret-env VAR]]",
		Short: "Sign in to a remote server that needs it (OAuth), and keep the tokens",
		Long: `Sign in to the Streamable HTTP server at URL (or the server SERVER of the
configuration FILE): the browser opens on the authorization server's page
(the URL is printed when no browser can be opened, or with --no-browser);
its answer comes back to a listener on 127.0.0.1 at a random port, which
takes one request and closes. The tokens are kept in the OS keyring
where one answers, else in conduit/tokens.json under the user config dir
(mode 0600); the last line says which. Every other command, the host and
the gateway use them and refresh them. --client-id gives a client the
authorization server knows already (pre-registered; its secret in the
environment variable of --client-secret-env), in place of dynamic
registration. See docs/auth.md.`,
		Example: `  conduit login --url https://mcp.example.com/mcp
  conduit login --config servers.json github --no-browser
  conduit login --url https://mcp.example.com/mcp --client-id conduit-cli --client-secret-env MCP_SECRET`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resource, id, err := a.loginResource(url, config, args)
			if err != nil {
				return err
			}
			if id, err = withClientFlags(id, clientID, secretEnv); err != nil {
				return err
			}
			return a.runLogin(cmd.Context(), resource, id, noBrowser)
		},
	}
	c.Flags().StringVar(&clientID, "client-id", "", "a pre-registered client `ID` (no dynamic registration)")
	c.Flags().StringVar(&secretEnv, "client-secret-env", "", "the environment variable `VAR` that holds the client secret of --client-id")
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

// runLogin signs in anew and says where the tokens went.
func (a *app) runLogin(ctx context.Context, resource string, id host.OAuthSettings, noBrowser bool) error {
	where, signed, status, err := a.signIn(ctx, resource, id, noBrowser)
	if err != nil {
		return err
	}
	if !signed {
		fmt.Fprintf(a.std.out, "%s did not ask for sign-in (HTTP %d): nothing to keep\n", resource, status)
		return nil
	}
	fmt.Fprintf(a.std.out, "signed in to %s; the tokens are kept in %s for conduit's other commands\n", resource, where)
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
