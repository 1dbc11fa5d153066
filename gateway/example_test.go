package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
)

// A server behind the gateway, its tool called through it under the
// catalog's name, SERVER__TOOL.
func Example() {
	// An upstream server: the go-sdk's, over Streamable HTTP.
	up := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	up.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from upstream"}}}, nil
	})
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer upstream.Close()
	defer upstream.CloseClientConnections()

	g, err := gateway.New(host.Config{Servers: map[string]host.Server{
		"greeter": {URL: upstream.URL, Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}}, gateway.Options{})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	events, cancel := g.Host().Subscribe()
	for ev := range events {
		if ev.State == host.StateReady {
			break
		}
	}
	cancel()
	g.Sync()
	front := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	defer front.Close()
	defer front.CloseClientConnections()

	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: front.URL}, conduit.Options{Era: conduit.EraLegacy})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "greeter__hello", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].Text)
	// Output: hello from upstream
}
