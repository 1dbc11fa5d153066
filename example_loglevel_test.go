//lint:file-ignore SA1019 logging is what is asked here: deprecated in 2026-07-28 (SEP-2577), not gone

package conduit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// A call that asks for its own log level: the server (2026-07-28, go-sdk)
// sends the call's entries at that level and above, here info but not
// debug, though the client asked for none (SetLogLevel).
func ExampleWithLogLevel() {
	server := mcp.NewServer(&mcp.Implementation{Name: "logs", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info"} {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Data: "working at " + string(l)})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()

	entries := make(chan string, 8)
	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Handlers: conduit.Handlers{
		Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
			entries <- fmt.Sprintf("%s %s", e.Level, e.Data)
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "work", nil); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.CallTool(ctx, "work", nil, conduit.WithLogLevel("info")); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case e := <-entries:
		fmt.Println(e)
	case <-time.After(10 * time.Second):
		fmt.Println("no entry")
	}
	_, err = c.CallTool(ctx, "work", nil, conduit.WithLogLevel("loud"))
	fmt.Println(err)
	fmt.Println(len(entries), "more")
	// Output:
	// info working at info
	// conduit: tools/call: usage: WithLogLevel: unknown log level "loud": want one of debug, info, notice, warning, error, critical, alert, emergency
	// 0 more
}
