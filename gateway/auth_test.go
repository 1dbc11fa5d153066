package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// An upstream that needs sign-in gets the gateway's own stored token; the
// downstream client's token never reaches it (no token passthrough).
func TestGatewayUpstreamUsesItsOwnTokenNeverTheDownstreamOne(t *testing.T) {
	store := &oauth.Store{Path: filepath.Join(t.TempDir(), "tokens.json")}
	t.Setenv("CONDUIT_TOKEN_FILE", store.Path)
	server := mcp.NewServer(&mcp.Implementation{Name: "signed", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
	})
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	seen := map[string]int{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Header.Get("Authorization")]++
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer upstream-token" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer up.Close()
	require.NoError(t, store.Save(oauth.Entry{Resource: up.URL + "/mcp", AuthServer: up.URL, AccessToken: "upstream-token",
		TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)}))

	_, url := serve(t, host.Config{Servers: map[string]host.Server{"signed": {URL: up.URL + "/mcp"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: url, Header: http.Header{"Authorization": {"Bearer downstream-token"}}}, conduit.Options{})
	require.NoError(t, err)
	defer c.Close()
	res, err := c.CallTool(ctx, "signed__hello", map[string]any{})
	require.NoError(t, err)
	assert.Equal(t, "hello", text(t, res))
	mu.Lock()
	defer mu.Unlock()
	assert.Zero(t, seen["Bearer downstream-token"], "the downstream token never went upstream")
	assert.Positive(t, seen["Bearer upstream-token"])
}
