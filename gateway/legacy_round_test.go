//lint:file-ignore SA1019 a legacy round of sampling, elicitation and roots is relayed here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A legacy server's input requests that come together (the go-sdk server
// sends a round's requests to a legacy client at once) reach a modern
// client as one round, each under a key of the gateway's, and the answers
// go up together.
func TestGatewayLegacyInputsInOneRound(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := rawClient(t, ctx, url)
	const tool = "a__test_input_required_result_multiple_inputs"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	methods := map[string]string{}
	for k, ir := range res.InputRequests {
		switch ir.(type) {
		case *mcp.ElicitParams:
			methods[k] = "elicitation/create"
		case *mcp.CreateMessageWithToolsParams:
			methods[k] = "sampling/createMessage"
		case *mcp.ListRootsParams:
			methods[k] = "roots/list"
		}
	}
	require.Len(t, methods, len(res.InputRequests))
	got := map[string]int{}
	answers := mcp.InputResponseMap{}
	for k, m := range methods {
		got[m]++
		switch m {
		case "elicitation/create":
			answers[k] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}
		case "sampling/createMessage":
			answers[k] = &mcp.CreateMessageResult{Role: "assistant", Model: "raw", Content: &mcp.TextContent{Text: "hello"}}
		case "roots/list":
			answers[k] = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
		}
	}
	assert.Equal(t, map[string]int{"elicitation/create": 1, "sampling/createMessage": 1, "roots/list": 1}, got, "one round of three")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answers, RequestState: res.RequestState})
	require.NoError(t, err)
	assert.False(t, res.NeedsInput(), "no further round: %v", res.InputRequests)
}
