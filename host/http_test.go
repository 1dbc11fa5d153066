package host

import (
	"context"
	"net"
	"net/http"
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
