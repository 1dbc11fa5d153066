package actors_test

import (
	"context"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// BenchmarkLegacySampling answers one legacy sampling/createMessage per op:
// a tools/call of test_sampling on the go-sdk everything-server over stdio,
// whose tool asks the client for a completion. The same trivial handler runs
// under Conduit and under the go-sdk client, in the same run.
func BenchmarkLegacySampling(b *testing.B) {
	b.Run("conduit", func(b *testing.B) {
		h := &handler{} // answers "hi"
		// The input budget (10/s) would refuse most of them: lift it here.
		c := connectEverything(b, conduit.Options{Handler: h, InputRateLimit: rate.Inf})
		ctx := context.Background()
		args := map[string]any{"prompt": "hi"}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := c.CallTool(ctx, "test_sampling", args)
			if err != nil || r.IsError {
				b.Fatalf("call failed: %v %+v", err, r)
			}
		}
	})
	b.Run("gosdk", func(b *testing.B) {
		bin, err := everythingServer()
		if err != nil {
			b.Fatal(err)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-bench", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}, Model: "test"}, nil
			},
		})
		ctx := context.Background()
		session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer session.Close()
		params := &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := session.CallTool(ctx, params)
			if err != nil || r.IsError {
				if r != nil && len(r.Content) > 0 {
					if tc, ok := r.Content[0].(*mcp.TextContent); ok {
						b.Fatalf("call failed: %s", tc.Text)
					}
				}
				b.Fatalf("call failed: %v", err)
			}
		}
	})
}

var _ = messages.MethodCallTool
