package host

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A host started before its HTTP server is up reaches it as it comes up:
// each refused connection is a failure under the backoff.
func TestHTTPServerComingUpLater(t *testing.T) {
	if testing.Short() {
		t.Skip("binds a local port")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there yet

	h, events := newHost(t, Config{Servers: map[string]Server{"web": {URL: "http://" + addr + "/mcp", Conduit: fast(100)}}}, Options{})
	waitFor(t, events, map[string]State{"web": StateRestarting})
	assert.ErrorContains(t, h.Status()[0].Err, "connection refused")

	server := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	l, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.CallTool(ctx, "web", "hello", nil) // waits until it is ready
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
	assert.Equal(t, "web__hello", h.Tools()[0].Name)
	assert.Positive(t, h.Status()[0].Restarts)
}

// serveHello serves a go-sdk Streamable HTTP server (sessions kept, as a
// real remote service does) with one tool on l, until the returned stop.
func serveHello(t *testing.T, l net.Listener) (stop func()) {
	server := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	srv := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = srv.Close()
			for ss := range server.Sessions() { // the HTTP server's close leaves them
				_ = ss.Close()
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A remote server that dies is seen (the default keep-alive of an HTTP
// server, here every 200 ms), restarted under the backoff and parked; once
// it is back, a reload (Apply with the same configuration) revives it. It
// used to stay ready for over 80 s after it died, and parked for good.
func TestRemoteServerDiesAndComesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("binds a local port")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	stop := serveHello(t, l)

	settings := fast(2)
	settings.Ping = PingPolicy{Interval: 200 * time.Millisecond, Failures: 2}
	cfg := Config{Servers: map[string]Server{"web": {URL: "http://" + addr + "/mcp", Conduit: settings}}}
	h, events := newHost(t, cfg, Options{})
	waitFor(t, events, map[string]State{"web": StateReady})

	stop()
	waitFor(t, events, map[string]State{"web": StateParked})
	st := h.Status()[0]
	assert.Equal(t, StateParked, st.State)
	assert.False(t, st.NextRetry.IsZero(), "a parked server says when it revives")

	l, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	serveHello(t, l)
	h.Apply(cfg) // a reload, the same configuration
	waitFor(t, events, map[string]State{"web": StateReady})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.CallTool(ctx, "web", "hello", nil)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
}

// A server of "type": "sse" (the go-sdk server on its HTTP+SSE handler) is
// supervised and called like any other.
func TestHostSSEServer(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello over sse"}}}, nil
	})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	cfg, _, err := Parse("c.json", []byte(`{"servers": {"old": {"type": "sse", "url": "`+srv.URL+`/sse"}}}`), nil)
	require.NoError(t, err)
	h, events := newHost(t, cfg, Options{})
	waitFor(t, events, map[string]State{"old": StateReady})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := h.CallTool(ctx, "old", "hello", nil)
	require.NoError(t, err)
	assert.Equal(t, "hello over sse", res.Content[0].Text)
	assert.Equal(t, "old__hello", h.Tools()[0].Name)
}

// A remote server that needs sign-in, with no stored tokens: the host shows
// it as needing sign-in, naming conduit login, and spends no restart on it.
func TestHTTPServerThatNeedsSignIn(t *testing.T) {
	t.Setenv("CONDUIT_TOKEN_FILE", t.TempDir()+"/tokens.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	h, events := newHost(t, Config{Servers: map[string]Server{"web": {URL: srv.URL + "/mcp", Conduit: fast(100)}}}, Options{})
	waitFor(t, events, map[string]State{"web": StateNeedsSignIn})
	st := h.Status()[0]
	assert.Equal(t, StateNeedsSignIn, st.State)
	assert.ErrorContains(t, st.Err, "the server needs sign-in: run `conduit login` for it")
	assert.Zero(t, st.Restarts)
}
