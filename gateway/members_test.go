//lint:file-ignore SA1019 the test answers a server's sampling request, deprecated in 2026-07-28 (SEP-2577) but not gone

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// peers are two gateways' Members: one key, each its own name; a retry
// for the other's state goes to its Gateway.Resume, or fails as a lost
// member when gone is set.
type peers struct {
	self    string
	members map[string]*Gateway
	gone    bool
	handed  int
}

func (p *peers) StateKey() []byte { return []byte("members-test-key-0123456789abcdef") }
func (p *peers) Self() string     { return p.self }
func (p *peers) Resume(ctx context.Context, member string, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	p.handed++
	if p.gone {
		return nil, errors.New("cluster member " + member + " holding the call was lost")
	}
	return p.members[member].Resume(ctx, params)
}

// A retry whose state another member sealed goes to that member and
// completes there; once that member is lost, a retry is refused as
// expired; a state sealed under another key is refused as altered.
func TestGatewayMembersResumeWhereTheCallIs(t *testing.T) {
	bin := everything(t)
	cfg := host.Config{Servers: map[string]host.Server{"b": {Command: bin, Conduit: host.Settings{Era: conduit.EraModern}}}}
	a, b := &peers{self: "a"}, &peers{self: "b"}
	ga, urlA := serveWith(t, cfg, Options{Members: a})
	gb, urlB := serveWith(t, cfg, Options{Members: b})
	a.members = map[string]*Gateway{"b": gb}
	b.members = map[string]*Gateway{"a": ga}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	csA, csB := rawClient(t, ctx, urlA), rawClient(t, ctx, urlB)
	const tool = "b__test_input_required_result_sampling"
	answer := mcp.InputResponseMap{"capital_question": &mcp.CreateMessageResult{Role: "assistant", Model: "raw", Content: &mcp.TextContent{Text: "Paris-7"}}}

	res, err := csA.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	res, err = csB.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
	require.NoError(t, err)
	data, _ := json.Marshal(res.Content)
	assert.JSONEq(t, `[{"type":"text","text":"Sampling response: Paris-7"}]`, string(data))
	assert.Equal(t, 1, b.handed)

	res, err = csA.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	b.gone = true
	_, err = csB.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState has expired"}, je)
	assert.Equal(t, int64(1), gb.relay.lostStates.Load())

	_, urlC := serve(t, cfg) // its own random key
	csC := rawClient(t, ctx, urlC)
	res, err = csC.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	require.NoError(t, err)
	_, err = csB.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
	require.ErrorAs(t, err, &je)
	assert.Equal(t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one this gateway issued, or was altered"}, je)
	assert.Equal(t, 2, b.handed)
}
