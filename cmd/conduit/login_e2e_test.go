package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/oauthtest"
	"github.com/conduitmcp/conduit/restart"
)

// signedInServer is a go-sdk MCP server with one tool, "hello", behind the
// real authorization server of internal/oauthtest.
func signedInServer(t *testing.T) *oauthtest.Server {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "signed-in", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, signed in"}}}, nil, nil
	})
	return oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
}

// loginE2E runs the built `conduit login ARGS --no-browser` as a person
// would: reads the URL it prints, signs in at the provider like a browser
// (Browse), follows the provider's redirect to conduit's loopback listener
// and reads the page; it returns the run and that page.
func loginE2E(t *testing.T, as *oauthtest.Server, args ...string) (result, string) {
	t.Helper()
	cli, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append(append([]string{"login"}, args...), "--no-browser")...)
	cmd.Dir = t.TempDir()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	require.NoError(t, cmd.Start())
	var stderr strings.Builder // written by the reader below until done
	urls, done := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(done)
		lines := bufio.NewScanner(pr)
		for lines.Scan() {
			stderr.WriteString(lines.Text() + "\n")
			if u, ok := strings.CutPrefix(lines.Text(), "  "); ok && strings.HasPrefix(u, as.AS.URL) {
				select {
				case urls <- u:
				default:
				}
			}
		}
	}()
	page := ""
	select {
	case u := <-urls:
		loc, err := as.Browse(ctx, u)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(loc, "http://127.0.0.1:"), loc)
		resp, err := http.Get(loc) // the browser follows the redirect to conduit
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		page = string(b)
	case <-done:
	}
	err := cmd.Wait()
	pw.Close()
	<-done
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r, page
}

// conduit login (the binary, --no-browser, a pre-registered client) against
// a real authorization server, then conduit call with the stored token;
// conduit logout, and the call fails naming conduit login.
func TestE2ELoginThenCall(t *testing.T) {
	as := signedInServer(t)
	tokens := filepath.Join(t.TempDir(), "conduit", "tokens.json")
	t.Setenv("CONDUIT_TOKEN_FILE", tokens)

	r, page := loginE2E(t, as, "--url", as.Resource, "--client-id", oauthtest.ClientID)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "signed in to "+as.Resource+"; the tokens are kept in the file "+tokens+" for conduit's other commands\n", r.stdout)
	assert.Regexp(t, `^To sign in to `+as.Resource+`, open this URL in a browser:\n\n  `+as.AS.URL+`/auth\?\S+\n\nWaiting for the sign-in \(5m0s\)\.\.\.\n$`, r.stderr)
	assert.Contains(t, page, "<h1>Signed in</h1><p>Conduit has what it needs: the sign-in is done, and you can close this page.</p>")
	fi, err := os.Stat(tokens)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(tokens)
	require.NoError(t, err)
	var kept map[string]struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
	}
	require.NoError(t, json.Unmarshal(data, &kept))
	require.Len(t, kept, 1)

	r = runCLI(t, "call", "--url", as.Resource, "hello")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "hello, signed in\n", r.stdout)
	for _, e := range kept {
		assert.NotContains(t, r.String(), e.AccessToken)
		assert.NotContains(t, r.String(), e.RefreshToken)
	}

	r = runCLI(t, "logout", "--url", as.Resource)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "signed out of "+as.Resource+"\n", r.stdout)
	r = runCLI(t, "call", "--url", as.Resource, "hello")
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Equal(t, "conduit: the server "+as.Resource+" needs sign-in: run `conduit login --url "+as.Resource+"` (or `conduit login --config FILE SERVER`), then again\n", r.stderr)
}

// A running `conduit host --json` whose server needs sign-in shows it in a
// state of its own, without using its restart budget, and starts it once
// `conduit login --config FILE SERVER` stores a token: no restart of the
// host.
func TestE2EHostStartsAfterLogin(t *testing.T) {
	as := signedInServer(t)
	t.Setenv("CONDUIT_TOKEN_FILE", filepath.Join(t.TempDir(), "tokens.json"))
	config := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `{"mcpServers":{"remote":{"url":%q,"conduit":{"oauth":{"clientId":%q}}}}}`, as.Resource, oauthtest.ClientID), 0o600))

	cli, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	host := exec.CommandContext(ctx, cli, "host", "--config", config, "--json")
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	errPath := filepath.Join(t.TempDir(), "stderr")
	errFile, err := os.Create(errPath)
	require.NoError(t, err)
	defer errFile.Close()
	host.Stderr = errFile // read while the host runs: a file, not a buffer
	stderr := func() string { b, _ := os.ReadFile(errPath); return string(b) }
	require.NoError(t, host.Start())
	events := make(chan hostEvent, 64)
	go func() {
		defer close(events)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			var ev hostEvent
			if json.Unmarshal(lines.Bytes(), &ev) == nil && ev.Server != "" {
				events <- ev
			}
		}
	}()
	var seen []hostEvent
	waitFor := func(state string) hostEvent {
		t.Helper()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("the host ended: %s", stderr())
				}
				seen = append(seen, ev)
				if string(ev.State) == state {
					return ev
				}
			case <-ctx.Done():
				t.Fatalf("no %q event; saw %+v\n%s", state, seen, stderr())
			}
		}
	}
	ev := waitFor(string(restart.NeedsSignIn))
	assert.Equal(t, "remote", ev.Server)
	assert.Equal(t, 0, ev.Restarts)
	assert.Equal(t, "server/discover: transport: the request failed: transport: Post \""+as.Resource+"\": oauth: sign-in to "+as.Resource+" failed: the server needs sign-in: run `conduit login` for it", ev.Error)
	require.NotNil(t, ev.NextRetry)

	r, _ := loginE2E(t, as, "--config", config, "remote")
	require.Equal(t, exitOK, r.code, r.String())
	ready := waitFor("ready")
	assert.Equal(t, 1, ready.Tools)

	require.NoError(t, host.Process.Signal(syscall.SIGINT))
	for ev := range events {
		seen = append(seen, ev)
	}
	require.NoError(t, host.Wait(), stderr())
	var states []string
	for _, ev := range seen {
		states = append(states, string(ev.State))
		assert.LessOrEqual(t, ev.Restarts, 1, "one retry after the sign-in")
	}
	assert.NotContains(t, states, "parked")
	assert.NotContains(t, states, "restarting")
	assert.Equal(t, "stopped", states[len(states)-1])
}
