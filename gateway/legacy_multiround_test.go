package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// The go-sdk everything-server, pinned legacy, asks a legacy client for
// its multi-round tool's first round as a server→client request and for
// the second in the tool's result (inputRequests, requestState): both
// reach a modern client as input_required rounds (the second under the
// server's key, with a new requestState of the gateway's) and a legacy
// client as server→client requests, and the call completes upstream.
func TestGatewayLegacyUpstreamMultiRound(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const tool = "a__test_input_required_result_multi_round"

	t.Run("modern client", func(t *testing.T) {
		cs := rawClient(t, ctx, url)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		require.NoError(t, err)
		require.True(t, res.NeedsInput())
		require.Len(t, res.InputRequests, 1)
		require.Contains(t, res.InputRequests, "input-1", "a legacy server's first round has no key")
		first := res.RequestState
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: first,
			InputResponses: mcp.InputResponseMap{"input-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}}}})
		require.NoError(t, err)
		require.True(t, res.NeedsInput(), "the second round")
		require.Contains(t, res.InputRequests, "step2", "the server's key")
		assert.Equal(t, "Step 2: What is your favorite color?", res.InputRequests["step2"].(*mcp.ElicitParams).Message)
		assert.NotEqual(t, first, res.RequestState)
		// The first round's state, replayed, does not resume the second.
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: first,
			InputResponses: mcp.InputResponseMap{"step2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "red"}}}})
		assert.Equal(t, int64(-32602), rpcCode(err))
		assert.ErrorContains(t, err, "requestState is not pending: already answered, or its call ended")
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{"step2": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "blue"}}}})
		require.NoError(t, err)
		require.False(t, res.NeedsInput())
		require.Len(t, res.Content, 1)
		assert.Equal(t, "Multi-round complete: Alice likes blue", res.Content[0].(*mcp.TextContent).Text)
	})

	t.Run("legacy client", func(t *testing.T) {
		var asked atomic.Int64
		c := connect(t, url+"/mcp", conduit.EraLegacy, conduit.Handlers{
			Elicitation: func(_ context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				if asked.Add(1) == 1 {
					return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"name": "Bob"}}, nil
				}
				return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"color": "green"}}, nil
			},
		})
		res, err := c.CallTool(ctx, tool, nil)
		require.NoError(t, err)
		assert.Equal(t, "Multi-round complete: Bob likes green", text(t, res))
		assert.Equal(t, int64(2), asked.Load())
	})
}

// roundsUpstream is a scripted legacy upstream over Streamable HTTP (plain
// JSON answers): tool "malformed" answers with inputRequests that are no
// input requests, tool "endless" asks for a form in every result. It
// counts the tools/call it gets.
func roundsUpstream(t *testing.T, calls *atomic.Int64) string {
	t.Helper()
	form := `{"method":"elicitation/create","params":{"mode":"form","message":"Again?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if req.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		result := `{}`
		switch req.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"rounds","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"malformed","inputSchema":{"type":"object"}},{"name":"endless","inputSchema":{"type":"object"}}]}`
		case "tools/call":
			calls.Add(1)
			result = `{"content":[],"requestState":"again","inputRequests":{"k":` + form + `}}`
			if req.Params.Name == "malformed" {
				result = `{"content":[],"requestState":"x","inputRequests":{"k":"elicitation/create"}}`
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A hostile legacy upstream: inputRequests that cannot be read fail the
// call (-32603) with nothing relayed; a server asking in every result is
// cut off after 10 rounds (Options.MaxRounds' default), counted in the
// upstream's Stats.RoundsCapped; the downstream client answered 9 of them.
func TestGatewayHostileLegacyRounds(t *testing.T) {
	var calls atomic.Int64
	g, url := serve(t, host.Config{Servers: map[string]host.Server{
		"h": {URL: roundsUpstream(t, &calls), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	var asked atomic.Int64
	c := connect(t, url+"/mcp", conduit.EraLegacy, conduit.Handlers{
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			asked.Add(1)
			return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"ok": true}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := c.CallTool(ctx, "h__malformed", nil)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	require.NotNil(t, ce.RPC)
	assert.Equal(t, -32603, ce.RPC.Code)
	assert.Equal(t, `conduit: tools/call: protocol: input request "k" is malformed`, ce.RPC.Message)
	assert.Equal(t, int64(0), asked.Load(), "nothing relayed")
	assert.Equal(t, int64(1), calls.Load())

	_, err = c.CallTool(ctx, "h__endless", nil)
	require.ErrorAs(t, err, &ce)
	require.NotNil(t, ce.RPC)
	assert.Equal(t, -32603, ce.RPC.Code)
	assert.Equal(t, "conduit: tools/call: protocol: still input_required after 10 rounds", ce.RPC.Message)
	assert.Equal(t, int64(9), asked.Load())
	assert.Equal(t, int64(11), calls.Load(), "the first call, then the endless one and its 9 retries")
	var capped int64
	for _, st := range g.Host().Status() {
		capped += st.Stats.RoundsCapped
	}
	assert.Equal(t, int64(1), capped)
}
