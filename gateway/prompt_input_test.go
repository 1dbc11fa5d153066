package gateway

import (
	"context"
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

// A prompt whose server asks for input (prompts/get answered with
// input_required) has its input relayed as a tool call's is: a modern
// client gets the round under the server's key and a requestState of the
// gateway's, whose retry resumes the upstream request; Conduit's client
// answers it in both eras downstream (legacy: elicitation/create on its
// session).
func TestGatewayRelaysPromptInput(t *testing.T) {
	url := serveEverything(t, "b", conduit.EraModern)
	const prompt = "b__test_input_required_result_prompt"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	cs := rawClient(t, ctx, url)
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt})
	require.NoError(t, err)
	require.Len(t, res.InputRequests, 1)
	ir, ok := res.InputRequests["user_context"]
	require.True(t, ok, "the upstream's own key: %v", res.InputRequests)
	assert.Equal(t, "Please provide context for the prompt", ir.(*mcp.ElicitParams).Message)
	require.NotEmpty(t, res.RequestState)
	answer := mcp.InputResponseMap{"user_context": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "raw"}}}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__test_simple_text", Arguments: map[string]any{}, InputResponses: answer, RequestState: res.RequestState})
	require.Error(t, err, "a prompt's state does not resume a tool call")
	assert.Contains(t, err.Error(), `requestState belongs to a call of prompt "b__test_input_required_result_prompt"`)

	res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt})
	require.NoError(t, err)
	res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, InputResponses: answer, RequestState: res.RequestState})
	require.NoError(t, err)
	require.Empty(t, res.InputRequests)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "Context: raw", res.Messages[0].Content.(*mcp.TextContent).Text)

	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			var asked atomic.Int64
			c := connect(t, url+"/mcp", era, conduit.Handlers{Elicitation: func(_ context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				asked.Add(1)
				return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"context": string(era)}}, nil
			}})
			p, err := c.GetPrompt(ctx, prompt, nil)
			require.NoError(t, err)
			require.Len(t, p.Messages, 1)
			assert.Equal(t, "Context: "+string(era), p.Messages[0].Content.Text)
			assert.Equal(t, int64(1), asked.Load())
		})
	}
}

// A resource whose server asks for input on resources/read (a modern
// go-sdk server answering input_required) has its input relayed as a
// tool call's is, in both eras downstream.
func TestGatewayRelaysResourceInput(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: "test://secret", Name: "secret"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		r, ok := req.Params.InputResponses["why"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.ReadResourceResult{InputRequests: mcp.InputRequestMap{"why": &mcp.ElicitParams{Message: "why?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"reason": map[string]any{"type": "string"}}, "required": []string{"reason"},
			}}}}, nil
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: fmt.Sprint("granted: ", r.Content["reason"])}}}, nil
	})
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(func() {
		up.CloseClientConnections()
		up.Close()
	})
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"r": {URL: up.URL, Conduit: host.Settings{Era: conduit.EraModern, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			var asked atomic.Int64
			c := connect(t, url+"/mcp", era, conduit.Handlers{Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				asked.Add(1)
				return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"reason": string(era)}}, nil
			}})
			res, err := c.ReadResource(ctx, "test://secret")
			require.NoError(t, err)
			require.Len(t, res.Contents, 1)
			assert.Equal(t, "granted: "+string(era), res.Contents[0].Text)
			assert.Equal(t, int64(1), asked.Load())
		})
	}
}
