//lint:file-ignore SA1019 the tests relay sampling, deprecated in 2026-07-28 (SEP-2577) but not gone

package gateway

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A round parked on a gated server while another call waits is cancelled
// after parkGrace, and the waiting call runs; one whose client comes back
// within it keeps its call.
func TestParkedRoundPreempted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gt := newGate()
		var told atomic.Int64
		gt.onPreempt = func(n int) { told.Add(int64(n)) }
		ctx := context.Background()

		// Comes back after 4 s, while another call waits: kept.
		release, err := gt.acquire(ctx, "ask")
		require.NoError(t, err)
		var cancelled atomic.Bool
		unpark := gt.park(func() { cancelled.Store(true) })
		got := make(chan time.Duration, 1)
		start := time.Now()
		go func() {
			r, err := gt.acquire(ctx, "ask")
			if err == nil {
				got <- time.Since(start)
				r(true)
			}
		}()
		time.Sleep(4 * time.Second)
		unpark()
		time.Sleep(3 * time.Second) // the retried round runs on
		synctest.Wait()
		assert.False(t, cancelled.Load(), "a round retried within the grace is not cancelled")
		release(true)
		assert.Equal(t, 7*time.Second, <-got)

		// Abandoned: cancelled once the waiter has waited parkGrace.
		release, err = gt.acquire(ctx, "ask")
		require.NoError(t, err)
		gt.park(func() { cancelled.Store(true); release(true) })
		start = time.Now()
		go func() {
			r, err := gt.acquire(ctx, "ask")
			if err == nil {
				got <- time.Since(start)
				r(true)
			}
		}()
		assert.Equal(t, parkGrace, <-got)
		assert.True(t, cancelled.Load())
		assert.Equal(t, int64(1), gt.preempted.Load())
		assert.Equal(t, int64(1), told.Load())
		gt.mu.Lock()
		assert.Empty(t, gt.parked)
		gt.mu.Unlock()
	})
}

// Through the gateway: a modern client that abandons its input round on a
// legacy stdio server (gated) holds it no longer than parkGrace; the next
// call runs, and the abandoned state is refused as not pending.
func TestGatewayAbandonedRoundReleasesServer(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := rawClient(t, ctx, url)
	const tool = "a__test_sampling"
	args := map[string]any{"prompt": "capital?"}
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.True(t, first.NeedsInput())

	start := time.Now()
	second, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.True(t, second.NeedsInput(), "the next call ran upstream and asked")
	assert.Less(t, time.Since(start), parkGrace+10*time.Second)
	var key string
	for k := range second.InputRequests {
		key = k
	}
	answer := mcp.InputResponseMap{key: &mcp.CreateMessageResult{Role: "assistant", Model: "raw", Content: &mcp.TextContent{Text: "Paris-42"}}}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, InputResponses: answer, RequestState: second.RequestState})
	require.NoError(t, err)
	data, _ := json.Marshal(res.Content)
	assert.Contains(t, string(data), "Paris-42")

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, InputResponses: answer, RequestState: first.RequestState})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "requestState is not pending: already answered, or its call ended")
}

// A modern server's round of several input requests reaches a modern
// client as one round, under the server's keys.
func TestGatewayRelaysWholeRound(t *testing.T) {
	url := serveEverything(t, "b", conduit.EraModern)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := rawClient(t, ctx, url)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__test_input_required_result_multiple_inputs", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	var keys []string
	for k := range res.InputRequests {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"user_name", "greeting", "client_roots"}, keys)
}

// Answers a modern client sends without a requestState (it knows the
// tool's keys) reach a modern upstream as they are: the call completes in
// one request, extra keys ignored, as going direct.
func TestGatewayForwardsStatelessAnswers(t *testing.T) {
	url := serveEverything(t, "b", conduit.EraModern)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := rawClient(t, ctx, url)
	answers := mcp.InputResponseMap{
		"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}},
		"extra":     &mcp.ElicitResult{Action: "decline"},
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "b__test_input_required_result_elicitation", Arguments: map[string]any{}, InputResponses: answers})
	require.NoError(t, err)
	require.False(t, res.NeedsInput())
	data, _ := json.Marshal(res.Content)
	assert.Contains(t, string(data), "Hello, Ada!")
}

// rawClient connects a go-sdk client to the gateway at url that handles no
// input round itself (MultiRoundTrip disabled): a modern call's
// input_required result reaches the test as it came. It declares sampling
// and elicitation, whose handlers are never called.
func rawClient(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, assert.AnError
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, assert.AnError
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
