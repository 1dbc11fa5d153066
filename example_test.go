package conduit_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

type assistant struct{}

// HandleSampling is the approval point for sampling: r.Params went through
// the guards, r.Assigns are the assigns of the call the request belongs to.
func (assistant) HandleSampling(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("hello, " + r.Assigns["user"].(string)), Model: "example"}, nil
}

// A client whose handler answers a server's sampling request in the middle
// of a tool call. The "server" here is a script on an in-memory pair.
func Example() {
	clientSide, serverSide := transport.NewMemoryPair()
	go scriptedServer(serverSide)

	ctx := context.Background()
	c, err := conduit.Connect(ctx, transport.NewMemoryTransport(clientSide), conduit.Options{
		Name: "my-host", ServerID: "demo", Handler: assistant{},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "greet", nil, conduit.WithAssigns(map[string]any{"user": "ada"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.ProtocolVersion(), res.Content[0].Text)
	// Output: 2025-11-25 the model said: hello, ada
}

// scriptedServer answers initialize, then answers tools/call by asking the
// client for a completion and returning its text.
func scriptedServer(conn transport.Conn) {
	ctx := context.Background()
	send := func(v any) { b, _ := json.Marshal(v); _ = conn.Write(ctx, b) }
	var callID any
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m map[string]any
		_ = json.Unmarshal(msg.Data, &m)
		switch {
		case m["method"] == "server/discover": // a legacy server: fall back to initialize
			send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
		case m["method"] == "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{
				"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "script", "version": "1"}}})
		case m["method"] == "tools/call":
			callID = m["id"]
			send(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": map[string]any{
				"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "greet"}}}, "maxTokens": 50}})
		case m["id"] == "s1":
			text := m["result"].(map[string]any)["content"].(map[string]any)["text"]
			send(map[string]any{"jsonrpc": "2.0", "id": callID, "result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprint("the model said: ", text)}}}})
		}
	}
}
