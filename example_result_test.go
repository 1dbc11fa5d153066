package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// schemaScript is a legacy server whose tool "count" declares an
// outputSchema ({"n": integer}) and returns {"n": "three"}.
func schemaScript(conn transport.Conn) {
	ctx := context.Background()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(msg.Data, &m) != nil || m.ID == nil {
			continue
		}
		result := `{}`
		switch m.Method {
		case "server/discover":
			_ = conn.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`))
			continue
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"script","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"count","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"three"}],"structuredContent":{"n":"three"}}`
		}
		_ = conn.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`))
	}
}

// A tool result whose structuredContent breaks the tool's outputSchema (as
// the session's last tools/list gave it) is an error of its own kind,
// naming where; WithUnvalidatedResult takes the result as it came.
func ExampleWithUnvalidatedResult() {
	clientSide, serverSide := transport.NewMemoryPair()
	go schemaScript(serverSide)
	ctx := context.Background()
	c, err := conduit.Connect(ctx, transport.NewMemoryTransport(clientSide), conduit.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// The schemas are those of the session's last listing.
	if _, err := c.ListTools(ctx); err != nil {
		fmt.Println(err)
		return
	}
	_, err = c.CallTool(ctx, "count", nil)
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.Kind == conduit.KindInvalidResult {
		fmt.Println(ce.Message)
	}
	res, err := c.CallTool(ctx, "count", nil, conduit.WithUnvalidatedResult())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.StructuredContent))
	// Output:
	// tool "count": structuredContent does not match its outputSchema: at /n: keyword "type" (schema /properties/n/type): expected integer, but got string
	// {"n":"three"}
}

// A header on one call, over Streamable HTTP.
func ExampleWithHeader() {
	server := mcp.NewServer(&mcp.Implementation{Name: "tagged", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "whoami"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tag := r.Header.Get("X-Tenant"); tag != "" {
			fmt.Println("the server saw X-Tenant:", tag)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	defer ts.Close()

	ctx := context.Background()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Era: conduit.EraLegacy})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "whoami", nil, conduit.WithHeader("X-Tenant", "acme"), conduit.WithUnvalidatedResult()); err != nil {
		fmt.Println(err)
	}
	_, err = c.CallTool(ctx, "whoami", nil, conduit.WithHeader("Mcp-Session-Id", "forged"))
	fmt.Println(err)
	// Output:
	// the server saw X-Tenant: acme
	// conduit: tools/call: usage: WithHeader: Mcp-Session-Id is set by Conduit or the transport, not per call
}

// Middleware sees every request the client sends, on the caller's
// goroutine: here it logs the method and whether it failed.
func ExampleMiddleware() {
	clientSide, serverSide := transport.NewMemoryPair()
	go schemaScript(serverSide)
	logRequests := func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			res, err := next(ctx, method, params)
			fmt.Printf("%s failed=%v\n", method, err != nil)
			return res, err
		}
	}
	ctx := context.Background()
	c, err := conduit.Connect(ctx, transport.NewMemoryTransport(clientSide), conduit.Options{
		SendingMiddleware: []conduit.Middleware{logRequests},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_ = c.Ping(ctx)
	_, _ = c.ListTools(ctx)
	_, _ = c.CallTool(ctx, "count", nil)
	// Output:
	// ping failed=false
	// tools/list failed=false
	// tools/call failed=false
}
