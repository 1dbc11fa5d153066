//lint:file-ignore SA1019 sampling is the capability narrowed here: deprecated in 2026-07-28 (SEP-2577), not gone

package conduit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// A call made on behalf of another client declares only what that client
// declared: the server (2026-07-28, go-sdk) reads the call's capabilities
// from its _meta, here sampling alone, though this client also handles
// elicitation.
func ExampleWithCapabilities() {
	server := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "seen"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		var seen []string
		if c := req.ClientCapabilities(); c != nil {
			if c.Sampling != nil {
				seen = append(seen, "sampling")
			}
			if c.Elicitation != nil {
				seen = append(seen, "elicitation")
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(seen, " ")}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()

	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Handlers: conduit.Handlers{
		Sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return nil, fmt.Errorf("not asked here")
		},
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return nil, fmt.Errorf("not asked here")
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for _, opts := range [][]conduit.CallOption{nil, {conduit.WithCapabilities("sampling")}} {
		res, err := c.CallTool(ctx, "seen", nil, opts...)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", c.Era(), res.Content[0].Text)
	}
	_, err = c.CallTool(ctx, "seen", nil, conduit.WithCapabilities("smell"))
	fmt.Println(err)
	// Output:
	// modern: sampling elicitation
	// modern: sampling
	// conduit: tools/call: usage: WithCapabilities: unknown capability "smell" (want sampling, sampling.tools, sampling.context, elicitation.form, elicitation.url, roots or roots.listChanged)
}
