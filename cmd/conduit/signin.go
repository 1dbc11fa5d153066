package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// signInTimeout bounds a sign-in at the browser: its own, never the
// connection's (the probe waits 3 s for its answer headers; a person
// needs minutes).
const signInTimeout = 5 * time.Minute

// personAtTerminal says whether a person can sign in: standard input and
// standard error are terminals (tests replace it).
var personAtTerminal = func(a *app) bool { return isTerminal(a.std.in) && writerIsTerminal(a.std.err) }

// withClientFlags puts login's --client-id and the secret of
// --client-secret-env over id.
func withClientFlags(id host.OAuthSettings, clientID, secretEnv string) (host.OAuthSettings, error) {
	switch {
	case secretEnv != "" && clientID == "":
		return id, usagef("--client-secret-env needs --client-id")
	case clientID == "":
		return id, nil
	}
	id.ClientID, id.ClientSecret, id.ClientMetadataURL = clientID, "", ""
	if secretEnv != "" {
		v, ok := os.LookupEnv(secretEnv)
		if !ok || v == "" {
			return id, usagef("--client-secret-env %s: the variable is not set", secretEnv)
		}
		id.ClientSecret = v
	}
	return id, nil
}

// signIn sends one request with no token to resource; its 401 starts the
// browser sign-in (loopback redirect, signInTimeout), whose tokens the
// store keeps. It returns where they went, whether the server asked for a
// sign-in at all, and the status of its answer when it did not.
func (a *app) signIn(ctx context.Context, resource string, id host.OAuthSettings, noBrowser bool) (where string, signed bool, status int, err error) {
	lb, err := oauth.NewLoopback()
	if err != nil {
		return "", false, 0, &exitError{code: exitFailed, err: err}
	}
	defer lb.Close()
	show := func(u string) {
		msg := fmt.Sprintf("To sign in to %s, open this URL in a browser:\n\n  %s\n\nWaiting for the sign-in (%v)...\n", resource, u, signInTimeout)
		if !noBrowser {
			if xdg, err := exec.LookPath("xdg-open"); err == nil && exec.Command(xdg, u).Start() == nil {
				msg = fmt.Sprintf("Opened the browser to sign in to %s. If it did not open, visit:\n\n  %s\n\n", resource, u)
			}
		}
		a.signingIn.Store(&msg)
		fmt.Fprint(a.stderr, msg)
	}
	defer a.signingIn.Store(nil)
	st := tokenStore()
	t, err := oauth.New(oauth.Config{Resource: resource, RedirectURL: lb.RedirectURL(), CodeFetcher: lb.Fetcher(show),
		ClientName: "Conduit", Store: st, IgnoreStored: true,
		ClientID: id.ClientID, ClientSecret: id.ClientSecret, ClientIDMetadataURL: id.ClientMetadataURL, DPoP: id.DPoP})
	if err != nil {
		return "", false, 0, usagef("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, resource, bytes.NewReader(body))
	if err != nil {
		return "", false, 0, usagef("invalid URL %q: %v", resource, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := t.Client().Do(req)
	if err != nil {
		var oe *oauth.Error
		if errors.As(err, &oe) {
			return "", false, 0, &exitError{code: exitConnect, err: oe}
		}
		return "", false, 0, &exitError{code: exitConnect, msg: "could not reach the server: " + plain(err), err: err}
	}
	resp.Body.Close()
	if !t.SignedIn() {
		return "", false, resp.StatusCode, nil
	}
	return st.Where(), true, resp.StatusCode, nil
}

// browserSignIn is the sign-in of signInAndRetry (tests replace it).
var browserSignIn = func(ctx context.Context, a *app, resource string, id host.OAuthSettings) (where string, err error) {
	where, _, _, err = a.signIn(ctx, resource, id, false)
	return where, err
}

// signInAndRetry runs connect; when it fails for want of a sign-in and a
// person is at the terminal, it signs in (signInTimeout of its own, after
// the connection attempt is over) and runs connect once more, which finds
// the stored tokens. Without a person the error stands (exit 3, naming
// conduit login).
func signInAndRetry[T any](ctx context.Context, a *app, id host.OAuthSettings, connect func(context.Context) (T, error)) (T, error) {
	v, err := connect(ctx)
	var oe *oauth.Error
	if err == nil || !errors.As(err, &oe) || !oe.NeedsSignIn() || !personAtTerminal(a) {
		return v, err
	}
	fmt.Fprintf(a.stderr, "%s needs sign-in.\n", oe.Redacted())
	sctx, cancel := context.WithTimeout(ctx, signInTimeout)
	defer cancel()
	where, serr := browserSignIn(sctx, a, oe.Resource, id)
	if serr != nil {
		return v, serr
	}
	fmt.Fprintf(a.stderr, "Signed in to %s; the tokens are kept in %s.\n", oe.Redacted(), where)
	return connect(ctx)
}

// oauthOf is the client identity of the --config server t ("conduit":
// {"oauth": …}); none for --url.
func oauthOf(t *configTarget) host.OAuthSettings {
	if t == nil {
		return host.OAuthSettings{}
	}
	return t.cfg.Servers[t.name].Conduit.OAuth
}

// signInServers, with a person at the terminal, signs in to each server of
// h that needs it (one at a time, once per server for the run, each with
// signInTimeout of its own) and starts it again at once; without a person
// it does nothing (the servers wait in "needs sign-in" for `conduit login`,
// tried every restart.SignInRetry). stop ends it: call it before h.Close.
func (a *app) signInServers(ctx context.Context, h *host.Host) (stop func()) {
	if !personAtTerminal(a) {
		return func() {}
	}
	events, unsubscribe := h.Subscribe()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tried := map[string]bool{}
		for ev := range events {
			st := ev.Status
			var oe *oauth.Error
			if st.State != host.StateNeedsSignIn || tried[st.Server] || ctx.Err() != nil || !errors.As(st.Err, &oe) {
				continue
			}
			tried[st.Server] = true
			fmt.Fprintf(a.stderr, "The server %s (%s) needs sign-in.\n", st.Server, oe.Redacted())
			sctx, done := context.WithTimeout(ctx, signInTimeout)
			where, err := browserSignIn(sctx, a, oe.Resource, a.configOAuth(st.Server))
			done()
			if err != nil {
				fmt.Fprintf(a.stderr, "The sign-in to %s failed: %s\n", st.Server, oneLine(plain(err)))
				continue
			}
			fmt.Fprintf(a.stderr, "Signed in to %s (the tokens are kept in %s); starting it.\n", st.Server, where)
			_ = h.Restart(st.Server)
		}
	}()
	return func() { cancel(); unsubscribe(); <-done }
}

// configOAuth is the client identity of the server name of --config as the
// file says now (none when it is gone, or unreadable).
func (a *app) configOAuth(name string) host.OAuthSettings {
	cfg, _, err := host.Load(a.opts.config)
	if err != nil {
		return host.OAuthSettings{}
	}
	return cfg.Servers[name].Conduit.OAuth
}
