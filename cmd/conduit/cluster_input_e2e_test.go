//lint:file-ignore SA1019 the cluster relays sampling, deprecated in 2026-07-28 (SEP-2577) but not gone: the test drives a server that still asks for it

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernClusterClient connects a modern client to a member that takes
// input rounds itself (multi-round handling off): the test carries each
// round's requestState to whichever member it chooses.
func modernClusterClient(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-modern", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return nil, errors.New("not called: rounds are answered by the test")
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

const samplingTool = "e__test_input_required_result_sampling"

// ask starts the everything-server's sampling tool through cs and returns
// its input_required round's requestState, checking the round.
func ask(t *testing.T, ctx context.Context, cs *mcp.ClientSession, counts *tally) string {
	t.Helper()
	counts.add("started")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: samplingTool, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "an input_required round")
	require.Len(t, res.InputRequests, 1)
	ir, ok := res.InputRequests["capital_question"].(*mcp.CreateMessageWithToolsParams)
	require.True(t, ok, "the server's own key and request: %#v", res.InputRequests)
	require.Len(t, ir.Messages, 1)
	assert.Equal(t, "What is the capital of France?", ir.Messages[0].Content[0].(*mcp.TextContent).Text)
	require.NotEmpty(t, res.RequestState)
	return res.RequestState
}

// answer retries the sampling tool through cs with state and the answer
// text.
func answer(ctx context.Context, cs *mcp.ClientSession, state, text string, counts *tally) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: samplingTool, Arguments: map[string]any{}, RequestState: state,
		InputResponses: mcp.InputResponseMap{"capital_question": &mcp.CreateMessageResult{Role: "assistant", Model: "test", Content: &mcp.TextContent{Text: text}}}})
	var je *jsonrpc.Error
	switch {
	case err == nil && !res.NeedsInput():
		counts.add("completed")
	case errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && je.Message == "requestState has expired":
		counts.add("refused: expired")
	default:
		counts.add("failed: other")
	}
	return res, err
}

// A modern client's call through one member parks on its server's
// sampling request (the server held by whichever member the hash chose,
// its input relayed to the asking member); the retry carrying the
// requestState goes to another member, which hands it to the one holding
// the call: every pair of members completes with the answer given, as a
// retry on the asking member does.
func TestGatewayClusterModernRetryOnAnotherMember(t *testing.T) {
	_, server := clusterBinaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"e":{"command":%q,"conduit":{"era":"modern"}}}}`, server))
	members := startCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sessions := clientsOf(t, ctx, members, modernClusterClient)
	var counts tally
	var local, across []time.Duration // each retry's time, on the asking member and on another
	for i := range members {
		for j := range members {
			state := ask(t, ctx, sessions[i], &counts)
			want := fmt.Sprintf("Paris-%d%d", i, j)
			start := time.Now()
			res, err := answer(ctx, sessions[j], state, want, &counts)
			if i == j {
				local = append(local, time.Since(start))
			} else {
				across = append(across, time.Since(start))
			}
			require.NoError(t, err, "asked through %s, answered through %s", members[i].remote, members[j].remote)
			require.False(t, res.NeedsInput())
			require.Len(t, res.Content, 1)
			assert.Equal(t, "Sampling response: "+want, res.Content[0].(*mcp.TextContent).Text)
			// The state is spent wherever it is retried.
			_, err = answer(ctx, sessions[(j+1)%3], state, want, &counts)
			var je *jsonrpc.Error
			require.ErrorAs(t, err, &je)
			assert.Equal(t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not pending: already answered, or its call ended"}, je)
		}
	}
	assert.Equal(t, map[string]int{"started": 9, "completed": 9, "failed: other": 9}, counts.get())
	t.Logf("retry to completion: on the asking member %v, on another %v", local, across)
}

// SIGKILL the member holding a modern call between its rounds: the retry
// through a survivor is refused as expired (-32602, as a state past its
// deadline is), at once; a new call through the survivors completes.
func TestGatewayClusterRetryAfterItsMemberDiesIsExpired(t *testing.T) {
	_, server := clusterBinaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"e":{"command":%q,"conduit":{"era":"modern"}}}}`, server))
	members := startCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sessions := clientsOf(t, ctx, members, modernClusterClient)
	var counts tally
	states := []string{ask(t, ctx, sessions[0], &counts), ask(t, ctx, sessions[0], &counts)}
	require.NoError(t, members[0].cmd.Process.Signal(syscall.SIGKILL))
	_, _ = members[0].cmd.Process.Wait()
	for i, state := range states {
		start := time.Now()
		_, err := answer(ctx, sessions[1+i], state, "Paris", &counts)
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je, "retry through %s", members[1+i].remote)
		assert.Equal(t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState has expired"}, je)
		assert.Less(t, time.Since(start), 5*time.Second, "refused at once")
		t.Logf("retry through %s refused after %v", members[1+i].remote, time.Since(start).Round(time.Millisecond))
	}
	// The survivors go on: a call through one, retried through the other.
	state := ask(t, ctx, sessions[1], &counts)
	res, err := answer(ctx, sessions[2], state, "Lyon", &counts)
	require.NoError(t, err)
	assert.Equal(t, "Sampling response: Lyon", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, map[string]int{"started": 3, "completed": 1, "refused: expired": 2}, counts.get())
}

// A legacy server's elicitation, whichever member holds the server, is
// relayed to the legacy client whose call caused it, through whichever
// member it called: the client's answer reaches the server.
func TestGatewayClusterInputFromAServerOnAnotherMember(t *testing.T) {
	_, server := clusterBinaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"e":{"command":%q,"conduit":{"era":"legacy"}}}}`, server))
	members := startCluster(t, 3, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var counts tally
	for i, m := range members {
		asked := 0
		client := mcp.NewClient(&mcp.Implementation{Name: "cluster-legacy", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				assert.Equal(t, "Your name?", req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": fmt.Sprintf("ada%d", i)}}, nil
			},
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: m.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		counts.add("started")
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "e__test_elicitation", Arguments: map[string]any{"message": "Your name?"}})
		require.NoError(t, err, "through %s", m.remote)
		require.Len(t, res.Content, 1)
		assert.Equal(t, fmt.Sprintf("Elicitation result: action=accept, content=map[username:ada%d]", i), res.Content[0].(*mcp.TextContent).Text, "through %s", m.remote)
		assert.Equal(t, 1, asked)
		if !res.IsError && strings.Contains(res.Content[0].(*mcp.TextContent).Text, "action=accept") {
			counts.add("completed")
		}
		_ = cs.Close()
	}
	assert.Equal(t, map[string]int{"started": 3, "completed": 3}, counts.get())
}
