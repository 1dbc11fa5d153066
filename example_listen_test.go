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

// changingServer is a go-sdk server over Streamable HTTP (2026-07-28,
// stateless) with one tool and one resource.
func changingServer() (*mcp.Server, *httptest.Server) {
	server := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	addTool(server, "first")
	server.AddResource(&mcp.Resource{URI: "test://notes", Name: "notes"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "hello"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	return server, ts
}

func addTool(server *mcp.Server, name string) {
	mcp.AddTool(server, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
}

// A ToolsChanged hook with RefreshLists gets the fresh list of tools once
// the server's notifications stop for a moment. In the modern era setting
// it makes the client open a subscriptions/listen stream (Listening says
// what the server acknowledged); in the legacy era the server sends its
// notifications unasked.
func ExampleHandlers_toolsChanged() {
	server, ts := changingServer()
	defer ts.Close()

	changed := make(chan []string, 1)
	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Handlers: conduit.Handlers{
		RefreshLists: true,
		ToolsChanged: func(ctx context.Context, nc conduit.NotificationContext, ch *conduit.ToolsChange) {
			var names []string
			for _, t := range ch.Items {
				names = append(names, t.Name)
			}
			changed <- names
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	acked, open := c.Listening()
	fmt.Println(c.Era(), open, acked.ToolsListChanged)

	addTool(server, "second")
	fmt.Println(<-changed)
	// Output:
	// modern true true
	// [first second]
}

// Subscribe to a resource: its updates reach the ResourceUpdated hook.
// In the modern era the client's listen stream is re-opened with the
// resource; in the legacy era it is resources/subscribe.
func ExampleClient_Subscribe() {
	server, ts := changingServer()
	defer ts.Close()

	updated := make(chan string, 1)
	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Handlers: conduit.Handlers{
		ResourceUpdated: func(ctx context.Context, nc conduit.NotificationContext, u *conduit.ResourceUpdate) {
			updated <- u.URI
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.Subscribe(ctx, "test://notes"); err != nil {
		fmt.Println(err)
		return
	}
	acked, _ := c.Listening()
	fmt.Println(acked.ResourceSubscriptions)

	_ = server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://notes"})
	fmt.Println(<-updated)
	// Output:
	// [test://notes]
	// test://notes
}
