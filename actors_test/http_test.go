package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// everythingHTTP starts the everything-server binary on a free loopback port
// (stateless: the mode that speaks 2026-07-28; stateful: legacy only) and
// returns its endpoint.
func everythingHTTP(t testing.TB, stateless bool) string {
	t.Helper()
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "-http="+addr, fmt.Sprintf("-stateless=%v", stateless))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/"
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, 10*time.Second, 20*time.Millisecond)
	return url
}

func connectHTTP(t testing.TB, url string, opts conduit.Options) *conduit.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: url}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestHTTPStatelessModernMRTRTools(t *testing.T) {
	url := everythingHTTP(t, true)
	for _, tc := range []struct{ tool, want string }{
		{"test_input_required_result_elicitation", "Hello, Ada!"},
		{"test_input_required_result_sampling", "Sampling response: Paris"},
		{"test_input_required_result_list_roots", "Client exposed 1 root(s): file:///srv/repo"},
		{"test_input_required_result_request_state", "state-ok: requestState received and confirmation accepted"},
		{"test_input_required_result_multiple_inputs", "Paris Ada — 1 root(s) visible"},
		{"test_input_required_result_multi_round", "Multi-round complete: Ada likes blue"},
		{"test_input_required_result_capabilities", "Capability-aware input requests fulfilled"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			c := connectHTTP(t, url, conduit.Options{Handler: answering()})
			require.Equal(t, conduit.EraModern, c.Era())
			r, err := c.CallTool(callCtx(t), tc.tool, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, textOf(t, r))
		})
	}
}

func TestHTTPStatefulLegacy(t *testing.T) {
	url := everythingHTTP(t, false)
	logs := &logRecorder{handler: *answering()}
	logs.sampling = nil // the default answer: "hi"
	logs.elicit = func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
	}
	var related sync.Map
	logs.roots = nil
	c := connectHTTP(t, url, conduit.Options{Handler: logs, Audit: func(r conduit.AuditRecord) { related.Store(r.Method, r.RelatedRequestID.IsZero()) }})
	require.Equal(t, conduit.EraLegacy, c.Era())
	require.Equal(t, "2025-11-25", c.ProtocolVersion())

	r, err := c.CallTool(callCtx(t), "test_sampling", map[string]any{"prompt": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "LLM response: hi", textOf(t, r))
	r, err = c.CallTool(callCtx(t), "test_elicitation", map[string]any{"message": "Who?"})
	require.NoError(t, err)
	assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", textOf(t, r))
	for _, m := range []string{"sampling/createMessage", "elicitation/create"} {
		zero, ok := related.Load(m)
		require.True(t, ok, m)
		assert.False(t, zero.(bool), "%s arrived on the call's stream: tied to it", m)
	}

	require.NoError(t, c.SetLogLevel(callCtx(t), "info"))
	_, err = c.CallTool(callCtx(t), "test_tool_with_logging", nil)
	require.NoError(t, err)
	assert.Equal(t, []any{"Tool execution started", "Tool processing data", "Tool execution completed"}, logs.waitFor(t, 3))
}

// The everything-server binary has no event store, so it cannot replay a
// closed stream ("stream replay unsupported"): test_reconnection runs on the
// same go-sdk handler in-process, with a memory event store.
func TestHTTPReconnectionAfterTheServerClosesTheStream(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "reconnect", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "test_reconnection"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
		}
		time.Sleep(100 * time.Millisecond)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "reconnected"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: false, EventStore: mcp.NewMemoryEventStore(nil)}))
	defer ts.Close()
	c := connectHTTP(t, ts.URL, conduit.Options{Era: conduit.EraLegacy})
	r, err := c.CallTool(callCtx(t), "test_reconnection", nil)
	require.NoError(t, err)
	assert.Equal(t, "reconnected", textOf(t, r))
	require.NoError(t, c.Close())
}

// Over HTTP the request arrives on the call's own stream, so even with two
// calls in flight it pauses the right one.
func TestHTTPDeadlinePausedWhileAPersonAnswers(t *testing.T) {
	url := everythingHTTP(t, false)
	h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		select {
		case <-time.After(1500 * time.Millisecond): // longer than the call's timeout
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
	}}
	c := connectHTTP(t, url, conduit.Options{Handler: h})
	require.Equal(t, conduit.EraLegacy, c.Era())
	slow := make(chan error, 1)
	go func() { // a second call in flight: stdio could not tell them apart
		_, err := c.CallTool(callCtx(t), "test_tool_with_logging", nil, conduit.WithTimeout(5*time.Second))
		slow <- err
	}()
	r, err := c.CallTool(callCtx(t), "test_elicitation", map[string]any{"message": "Who?"}, conduit.WithTimeout(time.Second), conduit.WithMaxTotalTimeout(10*time.Second))
	require.NoError(t, err, "the 1 s deadline was paused for the 1.5 s answer")
	assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", textOf(t, r))
	require.NoError(t, <-slow)
	require.Len(t, h.seen, 1)
	assert.False(t, h.seen[0].RelatedRequestID.IsZero())
}

// A legacy server that forgets session s-1 after the handshake: the client
// starts a fresh session and the call goes through on it.
func TestHTTPExpiredSessionStartsAFreshOne(t *testing.T) {
	var mu sync.Mutex
	sessions := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		sid := r.Header.Get("Mcp-Session-Id")
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch {
		case m.Method == "server/discover":
			w.WriteHeader(http.StatusBadRequest) // a legacy server
		case m.Method == "initialize":
			mu.Lock()
			sessions++
			w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s-%d", sessions))
			mu.Unlock()
			reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"forgetful","version":"1"}}`)
		case m.ID == nil:
			w.WriteHeader(http.StatusAccepted)
		case sid == "s-1":
			w.WriteHeader(http.StatusNotFound) // the server restarted
		default:
			reply(fmt.Sprintf(`{"content":[{"type":"text","text":"ok on %s"}]}`, sid))
		}
	}))
	defer ts.Close()
	c := connectHTTP(t, ts.URL, conduit.Options{})
	require.Equal(t, conduit.EraLegacy, c.Era())
	r, err := c.CallTool(callCtx(t), "anything", nil)
	require.NoError(t, err)
	assert.Equal(t, "ok on s-2", textOf(t, r))
	mu.Lock()
	assert.Equal(t, 2, sessions)
	mu.Unlock()
}
