//lint:file-ignore SA1019 an upstream's sampling request is what is refused here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// asksSampling is a legacy upstream (go-sdk, Streamable HTTP) whose tool
// "sample" asks for sampling at once and "name_then_sample" for a form
// first, then for sampling; each tells ended how its call ended.
func asksSampling(t *testing.T, ended chan<- string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
	sample := func(ctx context.Context, ss *mcp.ServerSession) (*mcp.CallToolResult, error) {
		_, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			// Refused: the tool waits to be cancelled, as a tool that
			// goes on would; it never returns on its own.
			<-ctx.Done()
			ended <- "cancelled"
			return nil, ctx.Err()
		}
		ended <- "sampled"
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled"}}}, nil
	}
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return sample(ctx, req.Session)
	})
	s.AddTool(&mcp.Tool{Name: "name_then_sample", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}); err != nil {
			return nil, err
		}
		return sample(ctx, req.Session)
	})
	return serveSDK(t, s, nil)
}

// elicitingClient is a modern go-sdk client that declares elicitation (a
// form handler) and nothing else, and answers rounds itself.
func elicitingClient(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, assert.AnError
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// missing32021 checks err is -32021 naming what in requiredCapabilities.
func missing32021(t *testing.T, err error, data string) {
	t.Helper()
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, int64(-32021), je.Code)
	assert.Equal(t, "Missing required client capability: the upstream server asked for sampling/createMessage, which the client did not declare", je.Message)
	assert.JSONEq(t, data, string(je.Data))
}

// A legacy upstream that asks a modern client's call for input the client
// did not declare (its connection was told the client's capabilities, the
// host's variant, and asks anyway) is refused upstream, its call is cancelled, and the client's call is
// answered -32021 MissingRequiredClientCapability with the capability in
// data.requiredCapabilities: at once, and on the retry of a round the
// client was given before the upstream asked.
func TestGatewayMissingCapabilityOfAModernClient(t *testing.T) {
	ended := make(chan string, 4)
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"u": {URL: asksSampling(t, ended), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := elicitingClient(t, ctx, url)
	const want = `{"requiredCapabilities":{"sampling":{}}}`

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "u__sample", Arguments: map[string]any{}})
	missing32021(t, err, want)
	assert.Equal(t, "cancelled", waitFor(t, ended, "the upstream call's end"))

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "u__name_then_sample", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	require.Contains(t, res.InputRequests, "input-1")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "u__name_then_sample", Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{"input-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}}})
	missing32021(t, err, want)
	assert.Equal(t, "cancelled", waitFor(t, ended, "the upstream call's end"))

	// A legacy client is refused upstream as before: the tool goes on.
	c := connect(t, url+"/mcp", conduit.EraLegacy, conduit.Handlers{})
	done := make(chan error, 1)
	cctx, ccancel := context.WithCancel(ctx)
	go func() {
		_, err := c.CallTool(cctx, "u__sample", nil)
		done <- err
	}()
	select {
	case got := <-ended:
		t.Fatalf("the legacy client's call ended upstream: %s", got)
	case err := <-done:
		t.Fatalf("the legacy client's call ended: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	ccancel()
	require.Error(t, <-done)
	assert.Equal(t, "cancelled", waitFor(t, ended, "the upstream call's end"))
}

// The legacy everything-server's capabilities tool asks for the input
// kinds its session declared: through the gateway, a modern client that
// declared sampling and roots (a go-sdk client declares roots whatever
// its options) reaches a connection of the server told exactly those
// (host variants, decision 78), so it gets a round of sampling and roots,
// never elicitation, as it would direct, and its answers end the call.
func TestGatewayCapabilityCheckThroughLegacyUpstream(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, assert.AnError
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	require.NoError(t, err)
	defer cs.Close()
	const tool = "a__test_input_required_result_capabilities"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	answers := mcp.InputResponseMap{}
	var kinds []string
	for k, ir := range res.InputRequests {
		switch ir.(type) {
		case *mcp.CreateMessageWithToolsParams:
			kinds = append(kinds, "sampling")
			answers[k] = &mcp.CreateMessageResult{Role: "assistant", Model: "raw", Content: &mcp.TextContent{Text: "hi"}}
		case *mcp.ListRootsParams:
			kinds = append(kinds, "roots")
			answers[k] = &mcp.ListRootsResult{Roots: []*mcp.Root{}}
		default:
			t.Fatalf("input %s is a %T", k, ir)
		}
	}
	slices.Sort(kinds)
	assert.Equal(t, []string{"roots", "sampling"}, kinds)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answers, RequestState: res.RequestState})
	require.NoError(t, err)
	require.False(t, res.NeedsInput())
	assert.Equal(t, "Capability-aware input requests fulfilled", res.Content[0].(*mcp.TextContent).Text)
}
