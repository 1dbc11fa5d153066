package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// withdrawing is a legacy upstream (go-sdk, HTTP) whose tool "withdraw"
// asks for a form and withdraws the request (notifications/cancelled) once
// told to on withdraw; it reports how its elicitation ended, and signals
// ended when its call is over (a result, or its ctx cancelled).
func withdrawing(t *testing.T, withdraw <-chan struct{}, ended chan<- string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "withdrawing", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "withdraw", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ectx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-withdraw:
				cancel()
			case <-ectx.Done():
			}
		}()
		_, err := req.Session.Elicit(ectx, &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}})
		cancel()
		// The call itself goes on a moment, as a server that gave up
		// on its question may; the gateway may cancel it meanwhile.
		select {
		case <-ctx.Done():
			ended <- "call cancelled"
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
		ended <- fmt.Sprint("elicit: ", err)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("elicit: ", err)}}}, nil
	})
	return serveSDK(t, s, nil)
}

// An upstream server that withdraws its own input request
// (notifications/cancelled) withdraws the relayed one: a legacy client's
// handler sees its ctx end (the gateway sends notifications/cancelled); a
// modern client's parked round is refused as not pending on its retry, and
// the upstream call, which no client can resume, is cancelled.
func TestGatewayRelaysUpstreamCancellation(t *testing.T) {
	withdraw, ended := make(chan struct{}), make(chan string, 4)
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"w": {URL: withdrawing(t, withdraw, ended), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("legacy", func(t *testing.T) {
		cause := make(chan error, 1)
		c := connect(t, url+"/mcp", conduit.EraLegacy, conduit.Handlers{Elicitation: func(hctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			withdraw <- struct{}{}
			select {
			case <-hctx.Done():
				cause <- context.Cause(hctx)
			case <-time.After(10 * time.Second):
				cause <- nil
			}
			return nil, hctx.Err()
		}})
		res, err := c.CallTool(ctx, "w__withdraw", nil)
		require.NoError(t, err)
		assert.Equal(t, "elicit: context canceled", text(t, res))
		assert.ErrorIs(t, <-cause, context.Canceled, "the client's handler was cancelled (notifications/cancelled), not left to time out")
		assert.Equal(t, "elicit: context canceled", <-ended)
	})
	t.Run("modern", func(t *testing.T) {
		cs := rawClient(t, ctx, url)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__withdraw", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Len(t, res.InputRequests, 1)
		withdraw <- struct{}{}
		select {
		case how := <-ended:
			assert.Equal(t, "call cancelled", how, "the upstream call is cancelled once its only input is withdrawn")
		case <-ctx.Done():
			t.Fatal("the upstream call was left running")
		}
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "w__withdraw", Arguments: map[string]any{},
			InputResponses: mcp.InputResponseMap{"input-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}}, RequestState: res.RequestState})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "requestState is not pending: already answered, or its call ended")
	})
}
