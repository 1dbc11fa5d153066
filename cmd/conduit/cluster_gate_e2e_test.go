//lint:file-ignore SA1019 the cluster relays log entries, deprecated in 2026-07-28 (SEP-2577) but not gone: the test drives a legacy server that still sends them

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/sanitize"
)

const clusterAskServerEnv = "CONDUIT_CLUSTER_ASK_SERVER"

// askEntry is the log entry the ask server sends before it asks, for tag:
// an escape sequence a client must not get raw.
func askEntry(tag string) string { return "entry \x1b[31m" + tag }

// clusterAskServer is a legacy stdio server with two tools: "work" answers
// "pid N" (its process id); "ask" {tag, notify} writes "ask TAG" to the
// FIFO $CONDUIT_CLUSTER_MARK and asks its client (elicitation/create,
// message TAG), then answers "answer: A" with the client's answer A and
// writes "done TAG". With notify, before it asks, it sends a progress
// notification (when the call carries a token) and a log entry
// (askEntry). It writes "cancelled" for each notifications/cancelled.
func clusterAskServer(r io.Reader, w io.Writer) int {
	type asked struct {
		id  json.RawMessage
		tag string
	}
	pending := map[string]asked{}
	n := 0
	send := func(v any) {
		b, _ := json.Marshal(v)
		_, _ = w.Write(append(b, '\n'))
	}
	return serveMarked(r, func(mark io.Writer, line []byte, method string, id json.RawMessage) {
		var m struct {
			Params struct {
				Meta      map[string]any `json:"_meta"`
				Name      string         `json:"name"`
				Arguments struct {
					Tag    string `json:"tag"`
					Notify bool   `json:"notify"`
				} `json:"arguments"`
			} `json:"params"`
			Result struct {
				Content map[string]any `json:"content"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(line, &m)
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result}) }
		text := func(id json.RawMessage, s string) {
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}})
		}
		switch method {
		case "": // the client's answer to an elicitation
			var key string
			_ = json.Unmarshal(id, &key)
			a, ok := pending[key]
			if !ok {
				return
			}
			delete(pending, key)
			fmt.Fprintln(mark, "done "+a.tag)
			if m.Error != nil {
				text(a.id, "error: "+m.Error.Message)
				return
			}
			text(a.id, fmt.Sprintf("answer: %v", m.Result.Content["answer"]))
		case "initialize":
			reply(map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
				"serverInfo": map[string]any{"name": "ask", "version": "1"}})
		case "tools/list":
			reply(map[string]any{"tools": []any{
				map[string]any{"name": "work", "inputSchema": map[string]any{"type": "object"}},
				map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"tag": map[string]any{"type": "string"}, "notify": map[string]any{"type": "boolean"}}}},
			}})
		case "tools/call":
			if m.Params.Name == "work" {
				text(id, fmt.Sprintf("pid %d", os.Getpid()))
				return
			}
			tag := m.Params.Arguments.Tag
			if m.Params.Arguments.Notify {
				if token, ok := m.Params.Meta["progressToken"]; ok {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": token, "progress": 1, "total": 2, "message": "half " + tag}})
				}
				send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "logger": "fixture", "data": askEntry(tag)}})
			}
			n++
			key := fmt.Sprintf("ask-%d", n)
			pending[key] = asked{id, tag}
			fmt.Fprintln(mark, "ask "+tag)
			send(map[string]any{"jsonrpc": "2.0", "id": key, "method": "elicitation/create", "params": map[string]any{"message": tag,
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}}})
		default:
			reply(map[string]any{})
		}
	})
}

// askCluster starts n members serving the ask server as "s", with -v (the
// holder says when a call waits at its gate), and returns them, the FIFO's
// marks, and the index of the member holding the server.
func askCluster(t *testing.T, ctx context.Context, n int) ([]*clusterMember, *bufio.Scanner, int) {
	fifo, marks := markFIFO(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterAskServerEnv, fifo))
	members := startCluster(t, n, cfg, "-v")
	logAfterReadyOnFailure(t, members)
	cs := connectMCP(t, ctx, members[0].url)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work"})
	require.NoError(t, err)
	pid := strings.TrimPrefix(res.Content[0].(*mcp.TextContent).Text, "pid ")
	holderPID := parentPID(t, pid)
	for i, m := range members {
		if m.cmd.Process.Pid == holderPID {
			t.Logf("server %s runs on member %s", pid, m.remote)
			return members, bufio.NewScanner(marks), i
		}
	}
	t.Fatalf("the server's parent %d is no member", holderPID)
	return nil, nil, 0
}

// asker is a legacy client of one member whose elicitation handler hands
// each request's message to the test (asked) and answers what the test
// gives (answers); it keeps the progress notifications and log entries it
// gets.
type asker struct {
	cs       *mcp.ClientSession
	asked    chan string
	answers  chan string
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
}

func newAsker(t *testing.T, ctx context.Context, url string) *asker {
	a := &asker{asked: make(chan string, 8), answers: make(chan string, 8),
		progress: make(chan *mcp.ProgressNotificationParams, 8), logs: make(chan *mcp.LoggingMessageParams, 8)}
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-asker", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.asked <- req.Params.Message
			select {
			case answer := <-a.answers:
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": answer}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case a.progress <- req.Params:
			default:
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case a.logs <- req.Params:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	a.cs = cs
	return a
}

// call starts s__ask with tag through a's member and returns its outcome.
func (a *asker) call(ctx context.Context, tag string, notify bool, token any) <-chan string {
	out := make(chan string, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"tag": tag, "notify": notify}}
		if token != nil {
			p.SetProgressToken(token)
		}
		res, err := a.cs.CallTool(ctx, p)
		switch {
		case err != nil:
			out <- "error: " + err.Error()
		case len(res.Content) != 1:
			out <- fmt.Sprintf("result %v", res)
		default:
			out <- res.Content[0].(*mcp.TextContent).Text
		}
	}()
	return out
}

// next is the FIFO's next mark.
func next(t *testing.T, marks *bufio.Scanner) string {
	t.Helper()
	require.True(t, marks.Scan(), "a mark from the server")
	return marks.Text()
}

// waitLine waits until m has written, since its ready line, count lines
// that contain every one of parts.
func waitLine(t *testing.T, ctx context.Context, m *clusterMember, count int, parts ...string) []string {
	t.Helper()
	for {
		var got []string
		for _, l := range m.after() {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				got = append(got, l)
			}
		}
		if len(got) >= count {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("member %s never wrote %d lines with %q; it wrote %q", m.remote, count, parts, m.after())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Two calls that ask for input, of one legacy stdio server, through two
// members: the second waits at the gate of the server's grain, on the
// member holding it, until the first has its answer, so each input
// reaches its own client (each member ran its own gate: both calls ran
// at once, and the second's input belonged to no call). Then the member
// whose call holds the gate is killed: the holder cancels that call (the
// server is told), the gate opens, and the call waiting at it runs at
// once.
func TestGatewayClusterGateLivesWithTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	members, marks, holder := askCluster(t, ctx, 2)
	other := 1 - holder
	far, near := newAsker(t, ctx, members[other].url), newAsker(t, ctx, members[holder].url)
	const waits = "a call waits for its server's gate"

	// One at a time, each input to its own client.
	first := far.call(ctx, "a", false, nil)
	require.Equal(t, "ask a", next(t, marks))
	require.Equal(t, "a", <-far.asked)
	second := near.call(ctx, "b", false, nil)
	waitLine(t, ctx, members[holder], 1, waits, "server=s", "turn=ask")
	far.answers <- "for a"
	assert.Equal(t, "answer: for a", <-first)
	assert.Equal(t, "done a", next(t, marks))
	require.Equal(t, "ask b", next(t, marks))
	require.Equal(t, "b", <-near.asked)
	near.answers <- "for b"
	assert.Equal(t, "answer: for b", <-second)
	assert.Equal(t, "done b", next(t, marks))
	assert.Empty(t, far.asked, "no input of another call reached the first client")
	assert.Empty(t, near.asked, "no input of another call reached the second client")

	// The member whose call holds the gate dies: the gate opens.
	far.call(ctx, "c", false, nil) // its client goes with its member
	require.Equal(t, "ask c", next(t, marks))
	require.Equal(t, "c", <-far.asked)
	waiting := near.call(ctx, "d", false, nil)
	waitLine(t, ctx, members[holder], 2, waits, "server=s", "turn=ask")
	killed := time.Now()
	require.NoError(t, members[other].cmd.Process.Signal(syscall.SIGKILL))
	_, _ = members[other].cmd.Process.Wait()
	// The lost member's call is cancelled on the server (its input,
	// answered with an error, ends it there), and the waiting call runs.
	got := []string{next(t, marks), next(t, marks), next(t, marks)}
	slices.Sort(got)
	assert.Equal(t, []string{"ask d", "cancelled", "done c"}, got)
	require.Equal(t, "d", <-near.asked)
	t.Logf("the waiting call ran %v after the kill", time.Since(killed).Round(time.Millisecond))
	assert.Less(t, time.Since(killed), 5*time.Second, "at once, not at the lost call's deadline")
	near.answers <- "for d"
	assert.Equal(t, "answer: for d", <-waiting)
	lines := waitLine(t, ctx, members[holder], 1, "the member that made calls of a server here was lost; its calls are cancelled")
	assert.Contains(t, lines[0], `member="`+members[other].remote+" (")
	assert.Contains(t, lines[0], "server=s")
	assert.Contains(t, lines[0], "calls=1")
}

// A call's progress and the server's log entries reach the client through
// the member it called, when the server runs on another: the progress
// under the client's own token, the entry as the holding member's client
// sanitised it (once: the other member relays it as it is), under the
// server's name.
func TestGatewayClusterProgressAndLogsReachTheCallingMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	members, marks, holder := askCluster(t, ctx, 2)
	for _, via := range []int{1 - holder, holder} {
		a := newAsker(t, ctx, members[via].url)
		require.NoError(t, a.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
		tag := fmt.Sprintf("via-%d", via)
		out := a.call(ctx, tag, true, "tok-"+tag)
		require.Equal(t, "ask "+tag, next(t, marks))
		require.Equal(t, tag, <-a.asked)
		select {
		case p := <-a.progress:
			assert.Equal(t, &mcp.ProgressNotificationParams{ProgressToken: "tok-" + tag, Progress: 1, Total: 2, Message: "half " + tag}, p, "via %s", members[via].remote)
		case <-time.After(20 * time.Second):
			t.Fatalf("no progress through %s", members[via].remote)
		}
		select {
		case l := <-a.logs:
			assert.Equal(t, mcp.LoggingLevel("info"), l.Level)
			assert.Equal(t, "s/fixture", l.Logger)
			assert.Equal(t, sanitize.Text(askEntry(tag), 0), l.Data, "via %s", members[via].remote)
			assert.NotEqual(t, askEntry(tag), l.Data, "sanitised")
		case <-time.After(20 * time.Second):
			t.Fatalf("no log entry through %s", members[via].remote)
		}
		a.answers <- "ok"
		assert.Equal(t, "answer: ok", <-out)
		assert.Equal(t, "done "+tag, next(t, marks))
	}
}

// A modern client's round parked on the gate of the server's grain (its
// call asked for input through one member, and the client has not come
// back) is cancelled once a call through another member has waited 5 s
// for the gate, as on one machine (docs/decisions.md #38): the waiting
// call runs, and the late retry is refused as not pending.
func TestGatewayClusterParkedRoundYieldsTheGate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	members, marks, holder := askCluster(t, ctx, 2)
	other := 1 - holder
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-modern", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not called: rounds are answered by the test")
		},
	})
	modern, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: members[other].url, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = modern.Close() })
	res, err := modern.CallTool(ctx, &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"tag": "parked"}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "an input_required round")
	require.Equal(t, "ask parked", next(t, marks))

	near := newAsker(t, ctx, members[holder].url)
	start := time.Now()
	waiting := near.call(ctx, "b", false, nil)
	waitLine(t, ctx, members[holder], 1, "a call waits for its server's gate", "server=s")
	require.Equal(t, "b", <-near.asked)
	t.Logf("the waiting call ran %v after it was sent", time.Since(start).Round(time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 5*time.Second, "after the parked round's grace")
	got := []string{next(t, marks), next(t, marks), next(t, marks)}
	slices.Sort(got)
	assert.Equal(t, []string{"ask b", "cancelled", "done parked"}, got)
	lines := waitLine(t, ctx, members[holder], 1, "a modern client's parked round held a gated server while another call waited; cancelled upstream")
	assert.Contains(t, lines[0], "server=s cancelled=1 total=1")
	near.answers <- "for b"
	assert.Equal(t, "answer: for b", <-waiting)

	// The late retry: its call has ended.
	var key string
	for k := range res.InputRequests {
		key = k
	}
	_, err = modern.CallTool(ctx, &mcp.CallToolParams{Name: "s__ask", Arguments: map[string]any{"tag": "parked"}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "late"}}}})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not pending: already answered, or its call ended"}, je)
}
