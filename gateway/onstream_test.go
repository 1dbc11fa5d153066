//lint:file-ignore SA1019 the relay of sampling is what is tested: deprecated in 2026-07-28, not gone

package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A legacy client that opens no standalone GET stream (it is optional)
// gets a relayed sampling request on its call's own stream: the relay
// sends it related to the downstream request. Sent unrelated, it went to
// the standalone stream and was refused "rejected by transport" (also,
// under load, to clients whose GET stream was not open yet).
func TestGatewayRelaysInputOnTheCallsStream(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "no-get", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "on the call's stream"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__test_sampling", Arguments: map[string]any{"prompt": "hi"}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	require.Equal(t, "LLM response: on the call's stream", res.Content[0].(*mcp.TextContent).Text)
}
