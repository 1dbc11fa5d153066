//lint:file-ignore SA1019 sampling and roots are narrowed here: deprecated in 2026-07-28 (SEP-2577), not gone

package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// WithCapabilities narrows a modern call's _meta clientCapabilities (as sent; never
// widens it), every round's, and an input request of the call for a
// method left out is refused as undeclared before any handler runs.
func TestWithCapabilitiesNarrowsModernCall(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "seen"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		data, _ := json.Marshal(req.Params.GetMeta()["io.modelcontextprotocol/clientCapabilities"])
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil, nil
	})
	// ask asks for an elicitation whatever the client declared, then
	// (its answer in) reports the capabilities of the retry.
	mcp.AddTool(server, &mcp.Tool{Name: "ask"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}}, nil, nil
		}
		data, _ := json.Marshal(req.Params.GetMeta()["io.modelcontextprotocol/clientCapabilities"])
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	var asked atomic.Int64
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, conduit.Options{Sampling: conduit.SamplingOptions{Context: true}, Handlers: conduit.Handlers{
		Sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return nil, errors.New("unused")
		},
		SamplingTools:    true,
		ElicitationModes: []string{"form", "url"},
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			asked.Add(1)
			return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{}}, nil
		},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.Equal(t, conduit.EraModern, c.Era())
	seen := func(tool string, opts ...conduit.CallOption) string {
		t.Helper()
		res, err := c.CallTool(ctx, tool, nil, opts...)
		require.NoError(t, err)
		return res.Content[0].Text
	}
	assert.JSONEq(t, `{"sampling":{"context":{},"tools":{}},"elicitation":{"form":{},"url":{}}}`, seen("seen"))
	assert.JSONEq(t, `{"sampling":{"tools":{}},"elicitation":{"form":{}}}`, seen("seen", conduit.WithCapabilities("sampling.tools", "elicitation.form", "roots")), "roots: the client has no roots handler")
	assert.JSONEq(t, `{}`, seen("seen", conduit.WithCapabilities()))
	assert.JSONEq(t, `{"elicitation":{"url":{}}}`, seen("ask", conduit.WithCapabilities("elicitation.url")), "the retry's _meta narrowed too")
	assert.Equal(t, int64(1), asked.Load())

	before := c.Stats().Refused
	_, err = c.CallTool(ctx, "ask", nil, conduit.WithCapabilities("sampling"))
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	require.NotNil(t, ce.RPC)
	assert.Equal(t, -32601, ce.RPC.Code)
	assert.Equal(t, "Method not found: elicitation/create (the client did not declare this capability)", ce.RPC.Message)
	assert.Equal(t, `input request "who" asks for elicitation/create, which the client did not declare`, ce.Message)
	assert.Equal(t, int64(1), asked.Load(), "no handler ran")
	assert.Equal(t, before+1, c.Stats().Refused)
}
