package conduit_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conduitmcp/conduit"
)

// A receiving middleware sees only the method and params of an input
// request; InputContext gives it the asking server and the assigns of the
// call the request belongs to: here the session the call was made for.
func ExampleInputContext() {
	var call any
	server := examplePeer(func(send func(any), m map[string]any) {
		switch {
		case m["method"] == "tools/call":
			call = m["id"]
			send(map[string]any{"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": map[string]any{
				"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Hi."}}}, "maxTokens": 10}})
		case m["id"] == "s-1":
			send(map[string]any{"jsonrpc": "2.0", "id": call, "result": map[string]any{"content": []any{}}})
		}
	})
	seen := func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if rc, ok := conduit.InputContext(ctx); ok {
				fmt.Println(method, "from", rc.ServerID, "for session", rc.Assigns[conduit.AssignSession])
			}
			return next(ctx, method, params)
		}
	}
	c, err := conduit.Connect(context.Background(), server, conduit.Options{ServerID: "notes", ReceivingMiddleware: []conduit.Middleware{seen},
		Handlers: conduit.Handlers{Sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("Hello."), Model: "m"}, nil
		}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, _ = c.CallTool(context.Background(), "greet", nil, conduit.WithAssigns(map[string]any{conduit.AssignSession: "s-42"}))
	// Output: sampling/createMessage from notes for session s-42
}
