package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/restart"
	"github.com/conduitmcp/conduit/transport/oauth"
)

const signInURL = "https://mcp.example.com/mcp"

// fakeSignIn replaces the terminal check and the browser sign-in.
func fakeSignIn(t *testing.T, tty bool, signIn func(ctx context.Context) error) *int {
	t.Helper()
	tt, bs := personAtTerminal, browserSignIn
	t.Cleanup(func() { personAtTerminal, browserSignIn = tt, bs })
	personAtTerminal = func(*app) bool { return tty }
	n := new(int)
	browserSignIn = func(ctx context.Context, _ *app, resource string, _ host.OAuthSettings) (string, error) {
		*n++
		assert.Equal(t, signInURL, resource)
		return "the file tokens.json", signIn(ctx)
	}
	return n
}

// probe is a connection whose probe waits at most 3 s for its answer
// headers and gets a 401 until signedIn.
func probe(signedIn *bool, calls *int) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		*calls++
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if !*signedIn {
			return "", &oauth.Error{Resource: signInURL, Err: oauth.ErrSignInNeeded}
		}
		return "connected", ctx.Err()
	}
}

// Without a terminal: the error at once, no sign-in, one attempt.
func TestNoTerminalNoSignIn(t *testing.T) {
	n := fakeSignIn(t, false, func(context.Context) error { t.Error("signed in"); return nil })
	var signed bool
	var calls int
	var stderr bytes.Buffer
	a := newApp(streams{in: bytes.NewReader(nil), out: &bytes.Buffer{}, err: &stderr})
	_, err := signInAndRetry(context.Background(), a, host.OAuthSettings{}, probe(&signed, &calls))
	require.ErrorIs(t, err, oauth.ErrSignInNeeded)
	assert.Equal(t, 0, *n)
	assert.Equal(t, 1, calls)
	assert.Empty(t, stderr.String())
	assert.Equal(t, "the server "+signInURL+" needs sign-in: run `conduit login --url "+signInURL+"` (or `conduit login --config FILE SERVER`), then again", needsSignIn(err))
}

// At a terminal: the probe's 401 ends the probe; the sign-in runs after it
// with 5 minutes of its own (a person taking 4 is not cut short by the
// probe's 3 s), then the probe runs again and connects.
func TestTerminalSignsInOutsideTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var signed bool
		start := time.Now()
		n := fakeSignIn(t, true, func(ctx context.Context) error {
			dl, ok := ctx.Deadline()
			assert.True(t, ok)
			assert.Equal(t, 5*time.Minute, dl.Sub(start))
			time.Sleep(4 * time.Minute) // the person at the browser
			assert.NoError(t, ctx.Err())
			signed = true
			return nil
		})
		var calls int
		var stderr bytes.Buffer
		a := newApp(streams{in: bytes.NewReader(nil), out: &bytes.Buffer{}, err: &stderr})
		v, err := signInAndRetry(context.Background(), a, host.OAuthSettings{}, probe(&signed, &calls))
		require.NoError(t, err)
		assert.Equal(t, "connected", v)
		assert.Equal(t, 1, *n)
		assert.Equal(t, 2, calls)
		assert.Equal(t, 4*time.Minute, time.Since(start))
		assert.Equal(t, signInURL+" needs sign-in.\nSigned in to "+signInURL+"; the tokens are kept in the file tokens.json.\n", stderr.String())
	})
}

// A person who never comes back: the sign-in ends after 5 minutes, its
// error stands, the probe is not run again.
func TestTerminalSignInTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var signed bool
		start := time.Now()
		fakeSignIn(t, true, func(ctx context.Context) error {
			<-ctx.Done()
			return errors.Join(errors.New("oauth: no answer on the loopback redirect"), context.Cause(ctx))
		})
		var calls int
		a := newApp(streams{in: bytes.NewReader(nil), out: &bytes.Buffer{}, err: &bytes.Buffer{}})
		_, err := signInAndRetry(context.Background(), a, host.OAuthSettings{}, probe(&signed, &calls))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 1, calls)
		assert.Equal(t, 5*time.Minute, time.Since(start))
	})
}

// conduit host at a terminal: a server that needs sign-in gets the browser
// sign-in (here headless, at the real authorization server) with its
// configured client, once, and starts at once, not at the next retry.
func TestHostAtTerminalSignsIn(t *testing.T) {
	as := signedInServer(t)
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(t.TempDir(), "tokens.json"))
	config := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `{"mcpServers":{"remote":{"url":%q,"conduit":{"oauth":{"clientId":%q}}}}}`, as.Resource, oauthtest.ClientID), 0o600))
	var ids []string
	tt, bs := personAtTerminal, browserSignIn
	t.Cleanup(func() { personAtTerminal, browserSignIn = tt, bs })
	personAtTerminal = func(*app) bool { return true }
	browserSignIn = func(ctx context.Context, _ *app, resource string, id host.OAuthSettings) (string, error) {
		ids = append(ids, id.ClientID)
		tr, err := oauth.New(oauth.Config{Resource: resource, RedirectURL: oauthtest.Redirect, CodeFetcher: as.Fetcher(),
			ClientID: id.ClientID, Store: tokenStore(), IgnoreStored: true})
		if err != nil {
			return "", err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, resource, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := tr.Client().Do(req)
		if err != nil {
			return "", err
		}
		resp.Body.Close()
		return "the file tokens.json", nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := &watchedBuffer{match: []*regexp.Regexp{regexp.MustCompile(`"state":"ready"`)}, matched: make(chan struct{})}
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"host", "--config", config, "--json"}, streams{in: bytes.NewReader(nil), out: out, err: &stderr})
	}()
	select {
	case <-out.matched:
	case <-time.After(restart.SignInRetry * 2 / 3): // well before the retry would have started it
		t.Fatalf("not ready:\n%s\n%s", out, stderr.String())
	}
	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
	assert.Equal(t, []string{oauthtest.ClientID}, ids)
	assert.Equal(t, "The server remote ("+as.Resource+") needs sign-in.\nSigned in to remote (the tokens are kept in the file tokens.json); starting it.\n", stderr.String())
	assert.Equal(t, int32(1), as.SignIns.Load())
}

// login's --client-id and --client-secret-env: the secret comes from the
// environment only, and a missing one is a usage error that names the
// variable, not a value.
func TestLoginClientFlags(t *testing.T) {
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(t.TempDir(), "tokens.json"))
	r := runInProcess(t, "login", "--url", signInURL, "--client-secret-env", "MCP_SECRET")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: --client-secret-env needs --client-id\nRun 'conduit login --help' for usage.\n", r.stderr)
	r = runInProcess(t, "login", "--url", signInURL, "--client-id", "cli", "--client-secret-env", "CONDUIT_TEST_UNSET_SECRET")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: --client-secret-env CONDUIT_TEST_UNSET_SECRET: the variable is not set\nRun 'conduit login --help' for usage.\n", r.stderr)

	t.Setenv("MCP_SECRET", "s3cret")
	id, err := withClientFlags(host.OAuthSettings{ClientID: "from-config", ClientMetadataURL: "https://c.example/m.json"}, "cli", "MCP_SECRET")
	require.NoError(t, err)
	assert.Equal(t, host.OAuthSettings{ClientID: "cli", ClientSecret: "s3cret"}, id)
	id, err = withClientFlags(host.OAuthSettings{ClientID: "from-config"}, "", "")
	require.NoError(t, err)
	assert.Equal(t, host.OAuthSettings{ClientID: "from-config"}, id)
}

// conduit load at a terminal signs in too (its error keeps the sign-in's).
func TestLoadAtTerminalSignsIn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(t.TempDir(), "tokens.json"))
	tt, bs := personAtTerminal, browserSignIn
	t.Cleanup(func() { personAtTerminal, browserSignIn = tt, bs })
	personAtTerminal = func(*app) bool { return true }
	var asked []string
	browserSignIn = func(_ context.Context, _ *app, resource string, _ host.OAuthSettings) (string, error) {
		asked = append(asked, resource)
		return "", errors.New("the person closed the browser")
	}
	r := runInProcess(t, "load", "--calls", "1", "--url", srv.URL+"/mcp", "echo")
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Equal(t, []string{srv.URL + "/mcp"}, asked)
	assert.Equal(t, srv.URL+"/mcp needs sign-in.\nconduit: could not connect: the person closed the browser\n", r.stderr)
}
