//lint:file-ignore SA1019 the tests relay sampling, deprecated in 2026-07-28 (SEP-2577) but not gone

package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/host"
)

// sessionUpstream is a legacy upstream (go-sdk, Streamable HTTP) with a
// tool that blocks until cancelled ("block"), one that answers at once
// ("echo") and one that asks its client to sample ("sample"). It records
// the notifications/cancelled it receives, by the request id they cancel.
type sessionUpstream struct {
	url       string
	started   chan string // the block call's "who" argument, as it starts
	ended     chan string // and as its ctx ends
	mu        sync.Mutex
	cancelled []string // requestIds of notifications/cancelled, as JSON
}

func newSessionUpstream(t *testing.T) *sessionUpstream {
	t.Helper()
	u := &sessionUpstream{started: make(chan string, 16), ended: make(chan string, 16)}
	s := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	who := func(req *mcp.CallToolRequest) string {
		var a struct {
			Who string `json:"who"`
		}
		_ = json.Unmarshal(req.Params.Arguments, &a)
		return a.Who
	}
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u.started <- who(req)
		<-ctx.Done()
		u.ended <- who(req)
		return nil, ctx.Err()
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + who(req)}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "sample", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("sample: ", err)}}}, nil
		}
		tc, _ := res.Content.(*mcp.TextContent)
		if tc == nil {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sample: no text"}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled " + tc.Text}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				Method string `json:"method"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "notifications/cancelled" {
				u.mu.Lock()
				u.cancelled = append(u.cancelled, string(m.Params.RequestID))
				u.mu.Unlock()
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	u.url = srv.URL
	return u
}

func (u *sessionUpstream) cancels() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.cancelled)
}

func (u *sessionUpstream) config() host.Config {
	return host.Config{Servers: map[string]host.Server{
		"up": {URL: u.url, Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}}
}

// legacyClient connects a go-sdk client (client, or a plain one) to the
// gateway at url as a 2025-11-25 client: a session of its own.
func legacyClient(t *testing.T, ctx context.Context, url string, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	if client == nil {
		client = mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	require.NotEmpty(t, cs.ID())
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// waitFor reads one value from c within 30 s.
func waitFor(t *testing.T, c <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return ""
	}
}

// rpcCode is the JSON-RPC code of err, or 0.
func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// A session whose actor panics mid-call: its calls fail with -32603 and
// are cancelled upstream (notifications/cancelled); another session's
// calls complete meanwhile and after; the failed session's next call gets
// a new actor.
func TestSessionActorPanicFailsOnlyItsCalls(t *testing.T) {
	up := newSessionUpstream(t)
	g, url := serve(t, up.config())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := legacyClient(t, ctx, url, nil), legacyClient(t, ctx, url, nil)

	errc := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "up__block", Arguments: map[string]any{"who": "a"}})
			errc <- err
		}()
	}
	waitFor(t, up.started, "a's first call upstream")
	waitFor(t, up.started, "a's second call upstream")

	g.sessions.mu.Lock()
	sa := g.sessions.byID[a.ID()]
	g.sessions.mu.Unlock()
	require.NotNil(t, sa)
	g.sessions.sys.Root.Send(sa.pid, inspect(func(*sessionActor) { panic("boom") }))

	for range 2 {
		select {
		case err := <-errc:
			require.Error(t, err)
			assert.Equal(t, int64(jsonrpc.CodeInternalError), rpcCode(err), "%v", err)
			assert.Contains(t, err.Error(), "Internal error: the gateway's actor of the downstream session failed; its calls were cancelled")
		case <-ctx.Done():
			t.Fatal("a's calls did not fail")
		}
	}
	waitFor(t, up.ended, "a's first call cancelled upstream")
	waitFor(t, up.ended, "a's second call cancelled upstream")
	assert.Eventually(t, func() bool { return up.cancels() == 2 }, 10*time.Second, 10*time.Millisecond, "the upstream got notifications/cancelled for both")

	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "echo b", res.Content[0].(*mcp.TextContent).Text)
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "a"}})
	require.NoError(t, err, "the failed session's next call gets a new actor")
	assert.Equal(t, "echo a", res.Content[0].(*mcp.TextContent).Text)

	st := g.SessionStats()
	assert.Equal(t, int64(1), st.Failed)
	assert.Equal(t, int64(3), st.Opened, "a, b, and a again")
	assert.Equal(t, 2, st.Open)
}

// A session has at most MaxCalls calls in flight: the next is refused
// with -32000 and counted; another session is not limited by it.
func TestSessionCallsLimited(t *testing.T) {
	up := newSessionUpstream(t)
	m := admin.NewMetrics()
	g, url := serveWith(t, up.config(), Options{Sessions: SessionLimits{MaxCalls: 2}, Host: host.Options{ServerOptions: m.ServerOptions}})
	web := httptest.NewServer(admin.New(g.Host(), m, admin.Options{SessionStats: func() (map[string]int64, map[string]int64) {
		st := g.SessionStats()
		return st.ClosedBy(), st.RefusedBy()
	}}).Handler())
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := legacyClient(t, ctx, url, nil), legacyClient(t, ctx, url, nil)
	blocked, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, _ = a.CallTool(blocked, &mcp.CallToolParams{Name: "up__block", Arguments: map[string]any{"who": "a"}})
		})
	}
	waitFor(t, up.started, "a's first call")
	waitFor(t, up.started, "a's second call")

	_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "a"}})
	require.Error(t, err)
	assert.Equal(t, int64(-32000), rpcCode(err), "%v", err)
	assert.Contains(t, err.Error(), "Server busy: the session has 2 calls in flight, its limit")
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "echo b", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, int64(1), g.SessionStats().CallsRefused)
	resp, err := http.Get(web.URL + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metrics), `conduit_gateway_session_refusals_total{limit="calls"} 1`)
	assert.Contains(t, string(metrics), `conduit_gateway_session_refusals_total{limit="inputs"} 0`)

	stop()
	wg.Wait()
	waitFor(t, up.ended, "a's first call cancelled")
	waitFor(t, up.ended, "a's second call cancelled")
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "a"}})
	require.NoError(t, err, "the calls ended: room again")
	assert.Equal(t, "echo a", res.Content[0].(*mcp.TextContent).Text)
}

// Each session has its own input budget: past it an upstream's sampling
// request is refused upstream as rate limited (-1), never relayed, and
// counted; another session's budget is untouched. Every audit record names
// its downstream session and its upstream server.
func TestSessionInputBudget(t *testing.T) {
	up := newSessionUpstream(t)
	var mu sync.Mutex
	var records []conduit.AuditRecord
	g, url := serveWith(t, up.config(), Options{
		Sessions: SessionLimits{InputRateLimit: rate.Every(time.Hour), InputBurst: 2},
		Host: host.Options{Client: conduit.Options{Audit: func(r conduit.AuditRecord) {
			mu.Lock()
			records = append(records, r)
			mu.Unlock()
		}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var asked [2]atomic.Int64
	var ids [2]string
	for i, who := range []string{"alice", "bob"} {
		client := mcp.NewClient(&mcp.Implementation{Name: who, Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				asked[i].Add(1)
				return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: who}}, nil
			},
		})
		cs := legacyClient(t, ctx, url, client)
		ids[i] = cs.ID()
		calls := 3
		if who == "bob" {
			calls = 2
		}
		for n := range calls {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sample", Arguments: map[string]any{}})
			require.NoError(t, err)
			got := res.Content[0].(*mcp.TextContent).Text
			if n < 2 {
				assert.Equal(t, "sampled "+who, got)
			} else {
				assert.Equal(t, `sample: calling "sampling/createMessage": Sampling rejected: rate limited`, got)
			}
		}
	}
	assert.Equal(t, int64(2), asked[0].Load(), "alice's third sampling never reached her")
	assert.Equal(t, int64(2), asked[1].Load(), "bob's budget is his own")
	assert.Equal(t, int64(1), g.SessionStats().InputsRefused)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, records, 5)
	for i, r := range records {
		want := ids[0]
		if i >= 3 {
			want = ids[1]
		}
		assert.Equal(t, want, r.Session, "record %d", i)
		assert.Equal(t, "up", r.ServerID, "record %d", i)
	}
	assert.Equal(t, conduit.OutcomeRefused, records[2].Outcome)
	require.NotNil(t, records[2].Code)
	assert.Equal(t, -1, *records[2].Code)
	data, err := json.Marshal(records[0])
	require.NoError(t, err)
	assert.Contains(t, string(data), `"server_id":"up","session":"`+ids[0]+`"`)
}

// A DELETE of a session cancels its calls upstream (the legacy server gets
// notifications/cancelled) and returns at once: the go-sdk's own DELETE
// waits for the session's calls, which waited for the upstream.
func TestSessionDeleteCancelsUpstream(t *testing.T) {
	up := newSessionUpstream(t)
	g, url := serve(t, up.config())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := legacyClient(t, ctx, url, nil), legacyClient(t, ctx, url, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "up__block", Arguments: map[string]any{"who": "a"}})
		errc <- err
	}()
	waitFor(t, up.started, "a's call upstream")

	req, err := http.NewRequest(http.MethodDelete, url+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", a.ID())
	hc := &http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Do(req)
	require.NoError(t, err, "the DELETE returned")
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, "a", waitFor(t, up.ended, "a's call cancelled upstream"))
	assert.Eventually(t, func() bool { return up.cancels() == 1 }, 10*time.Second, 10*time.Millisecond, "the upstream got notifications/cancelled")
	select {
	case err := <-errc:
		assert.Error(t, err)
	case <-ctx.Done():
		t.Fatal("a's call did not end")
	}
	st := g.SessionStats()
	assert.Equal(t, int64(1), st.Deleted)
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "echo b", res.Content[0].(*mcp.TextContent).Text)
}

// The admin status page names the downstream session of a waiting input.
func TestStatusPageNamesTheSessionOfAWaitingInput(t *testing.T) {
	up := newSessionUpstream(t)
	m := admin.NewMetrics()
	g, url := serveWith(t, up.config(), Options{Host: host.Options{ServerOptions: m.ServerOptions}})
	web := httptest.NewServer(admin.New(g.Host(), m, admin.Options{}).Handler())
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	asked, release := make(chan struct{}), make(chan struct{})
	client := mcp.NewClient(&mcp.Implementation{Name: "slow", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			close(asked)
			<-release
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "late"}}, nil
		},
	})
	cs := legacyClient(t, ctx, url, client)
	done := make(chan string, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "up__sample", Arguments: map[string]any{}})
		if err != nil {
			done <- err.Error()
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("no sampling request reached the client")
	}
	waiting := m.Waiting()
	require.Len(t, waiting, 1)
	assert.Equal(t, "up", waiting[0].Server)
	assert.Equal(t, cs.ID(), waiting[0].Session)
	resp, err := http.Get(web.URL + "/")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(page), `<td>up</td><td>sampling/createMessage</td><td data-field="session">`+cs.ID()+`</td>`)
	close(release)
	assert.Equal(t, "sampled late", waitFor(t, done, "the call's end"))
}
