package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
)

// A --url that is not an http(s) URL with a host is a usage error, found
// before anything is dialled.
func TestURLThatIsNotAURLIsAUsageError(t *testing.T) {
	for _, url := range []string{"not-a-url", "localhost:8080/mcp", "ftp://example.com/mcp", "http://", "http:///mcp", "://x", "file:///tmp/mcp"} {
		t.Run(url, func(t *testing.T) {
			r := runInProcess(t, "tools", "--url", url)
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Contains(t, r.stderr, `conduit: --url "`+url+`": want an http:// or https:// URL with a host`, r.String())
			assert.NotContains(t, r.stderr, "could not connect", r.String())
			assert.Empty(t, r.stdout)
		})
	}
	r := runInProcess(t, "tools", "--json", "--url", "not-a-url")
	assert.Equal(t, exitUsage, r.code, r.String())
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, exitUsage, rep.Exit)
	assert.Equal(t, `--url "not-a-url": want an http:// or https:// URL with a host`, rep.Error)
}

func TestUnreachableURLIsCouldNotConnect(t *testing.T) {
	url := testpeer.ClosedURL(t)
	r := runInProcess(t, "tools", "--url", url)
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Contains(t, r.stderr, "conduit: could not connect: server/discover: transport: the request failed: transport: Post \""+url+"\": dial tcp", r.String())
	assert.Contains(t, r.stderr, "connection refused", r.String())

	r = runInProcess(t, "call", "--json", "--url", url, "anything")
	assert.Equal(t, exitConnect, r.code, r.String())
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, conduit.KindTransport, rep.Kind)
	assert.Equal(t, exitConnect, rep.Exit)
	assert.Nil(t, rep.Code, "no JSON-RPC code: the server never answered")
	assert.Contains(t, rep.Error, "connection refused")
}

func TestURLThatIsNotAnMCPEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html>hello</html>")
	}))
	defer srv.Close()
	r := runInProcess(t, "tools", "--json", "--url", srv.URL)
	assert.Equal(t, exitConnect, r.code, r.String())
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, conduit.KindTransport, rep.Kind)
	assert.Equal(t, `could not connect: server/discover: transport: `+srv.URL+` is not an MCP endpoint: transport: HTTP 200 OK with Content-Type "text/html", neither JSON nor an event stream`, rep.Error)
}

// A stdio server that exits at once: exit 3, naming its exit status.
func TestServerThatExitsAtOnceNamesItsStatus(t *testing.T) {
	r := runInProcess(t, "tools", "--json", "--era", "auto", "--", "sh", "-c", "exit 3")
	assert.Equal(t, exitConnect, r.code, r.String())
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, conduit.KindTransport, rep.Kind)
	assert.Contains(t, rep.Error, "transport: the server exited (exit status 3)")
	assert.NotContains(t, rep.Error, "broken pipe")

	// Its last stderr lines are in the error, said once.
	r = runInProcess(t, "tools", "--era", "auto", "--", "sh", "-c", "echo 'fatal: no config' >&2; exit 4")
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Contains(t, r.stderr, "transport: the server exited (exit status 4); its last stderr: fatal: no config\n", r.String())
	assert.Equal(t, 1, strings.Count(r.stderr, "fatal: no config"), r.String())
}
