package conduit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// Reach a server of 2024-11-05 on the deprecated HTTP+SSE transport:
// transport.SSE opens the event stream and POSTs to the endpoint it
// announces. Here the client also pins that revision, so what it lacks
// (elicitation, structured tool output, tasks) is not offered. The server
// is the go-sdk one on its SSE handler, in process.
func ExampleConnect_httpSSE() {
	server := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello over HTTP+SSE"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer srv.Close()

	ctx := context.Background()
	// transport.HTTP{URL: …, SSEFallback: true} would find it too: its
	// initialize gets a 400, and it moves to HTTP+SSE at the same URL.
	c, err := conduit.Connect(ctx, &transport.SSE{URL: srv.URL + "/sse"}, conduit.Options{ProtocolVersion: "2024-11-05"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "hello", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ProtocolVersion(), res.Content[0].Text)
	// Output: 2024-11-05 hello over HTTP+SSE
}
