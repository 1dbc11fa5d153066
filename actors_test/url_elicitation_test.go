package actors_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// completions records what Handlers.ElicitationComplete received.
type completions struct {
	mu  sync.Mutex
	got []*conduit.ElicitationComplete
}

func (c *completions) hook(_ context.Context, _ conduit.NotificationContext, e *conduit.ElicitationComplete) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, e)
}

func (c *completions) all() []*conduit.ElicitationComplete {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*conduit.ElicitationComplete(nil), c.got...)
}

// A notifications/elicitation/complete reaches the typed hook with the URL
// elicitation it completes; a second completion of it, and one of an id
// never issued, are dropped and counted in Stats.UnknownResponses.
func TestElicitationCompleteIsTiedToItsURLElicitation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done completions
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{
			Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				return &conduit.ElicitResult{Action: conduit.ActionAccept}, nil
			},
			ElicitationModes:    []string{conduit.ModeURL},
			ElicitationComplete: done.hook,
		}}, "2025-11-25")
		call := callAsync(c, "link")
		m := srv.next()
		srv.request("e1", "elicitation/create", map[string]any{"mode": "url", "elicitationId": "el-1", "url": "https://srv.example/connect/el-1", "message": "Link it."})
		srv.expectResponse("e1")
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "el-1"})
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "el-1"})  // again
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "never"}) // never issued
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": 7})       // malformed
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err) // the notifications sent before the answer were handled
		got := done.all()
		require.Len(t, got, 1)
		assert.Equal(t, "el-1", got[0].ElicitationID)
		require.NotNil(t, got[0].Request)
		assert.Equal(t, "https://srv.example/connect/el-1", got[0].Request.URL)
		assert.Equal(t, "srv.example", got[0].Request.Host)
		assert.Equal(t, "el-1", got[0].Request.Params.ElicitationID)
		st := c.Stats()
		assert.EqualValues(t, 2, st.UnknownResponses)
		assert.EqualValues(t, 1, st.Malformed)
	})
}

// Without the typed hook a completion still reaches the Notification hook
// raw, as before.
func TestElicitationCompleteWithoutTheHookIsANotification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var methods []string
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{
			Notification: func(_ context.Context, _ conduit.NotificationContext, n *conduit.Notification) {
				mu.Lock()
				defer mu.Unlock()
				methods = append(methods, n.Method)
			},
		}}, "2025-11-25")
		call := callAsync(c, "x")
		m := srv.next()
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "never"})
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{"notifications/elicitation/complete"}, methods)
		assert.EqualValues(t, 0, c.Stats().UnknownResponses)
	})
}

// A call refused with -32042 fails with an error matching
// ErrURLElicitationRequired, from which the caller gets the URL
// elicitations, each checked by the URL guard of elicitation/create: those
// it refuses are left out, said why and counted in Stats.Refused. Their
// completion then reaches the hook.
func TestURLElicitationRequiredError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var done completions
		c, srv := connect(t, conduit.Options{ServerID: "cal", Handlers: conduit.Handlers{ElicitationComplete: done.hook}}, "2025-11-25")
		call := callAsync(c, "calendar", conduit.WithAssigns(map[string]any{"user": "ada"}))
		m := srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32042, "message": "Authorization needed",
			"data": map[string]any{"elicitations": []any{
				map[string]any{"mode": "url", "elicitationId": "el-77", "url": "https://srv.example/connect/el-77", "message": "Connect your calendar."},
				map[string]any{"mode": "url", "elicitationId": "el-78", "url": "javascript:alert(1)", "message": "Bad."},
				map[string]any{"mode": "url", "url": "https://srv.example/x", "message": "No id."},
				map[string]any{"mode": "form", "message": "Not a URL.", "requestedSchema": map[string]any{"type": "object"}},
			}}}})
		err := (<-call).err
		require.ErrorIs(t, err, conduit.ErrURLElicitationRequired)
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindRPC, ce.Kind)
		var ue *conduit.URLElicitationRequiredError
		require.ErrorAs(t, err, &ue)
		require.Len(t, ue.Elicitations, 1)
		e := ue.Elicitations[0]
		assert.Equal(t, conduit.ModeURL, e.Mode)
		assert.Equal(t, "el-77", e.Params.ElicitationID)
		assert.Equal(t, "https://srv.example/connect/el-77", e.URL)
		assert.Equal(t, "srv.example", e.Host)
		assert.True(t, e.OriginMismatch, "the in-memory transport has no origin")
		assert.Equal(t, "cal", e.ServerID)
		assert.Equal(t, map[string]any{"user": "ada"}, e.Assigns)
		require.Len(t, ue.Refused, 3)
		assert.Contains(t, ue.Refused[1].Error(), `elicitation 2: jsonrpc error -32602: Invalid params: url mode requires "elicitationId"`)
		assert.Contains(t, ue.Refused[2].Error(), `elicitation 3: jsonrpc error -32602: Invalid params: a required URL elicitation must have mode "url", got "form"`)
		assert.EqualValues(t, 3, c.Stats().Refused)
		assert.EqualError(t, err, `conduit: tools/call: rpc: jsonrpc error -32042: Authorization needed (data: `+string(ce.RPC.Data)+`)`)

		call = callAsync(c, "calendar")
		m = srv.next()
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "el-77"})
		srv.notify("notifications/elicitation/complete", map[string]any{"elicitationId": "el-78"}) // refused: never issued
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err)
		got := done.all()
		require.Len(t, got, 1)
		assert.Same(t, e, got[0].Request)
		assert.EqualValues(t, 1, c.Stats().UnknownResponses)
	})
}

// Data that is not a list of elicitations still matches the sentinel; the
// typed error says why it holds none.
func TestURLElicitationRequiredMalformedData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		call := callAsync(c, "x")
		m := srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32042, "message": "need", "data": "nope"}})
		err := (<-call).err
		require.ErrorIs(t, err, conduit.ErrURLElicitationRequired)
		var ue *conduit.URLElicitationRequiredError
		require.ErrorAs(t, err, &ue)
		assert.Empty(t, ue.Elicitations)
		require.Len(t, ue.Refused, 1)
		assert.EqualError(t, ue.Refused[0], "data.elicitations is not a list of URL elicitations")
		assert.False(t, errors.Is(err, conduit.ErrMethodNotFound))
	})
}

// goSDKTransports runs server in process over pipes (stdio framing) and
// over Streamable HTTP, and returns the client's transport for each.
func goSDKTransports(t *testing.T, server *mcp.Server) map[string]transport.Transport {
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	return map[string]transport.Transport{"stdio": inProcessServer(t, server), "http": &transport.HTTP{URL: ts.URL}}
}

// Against the go-sdk server, over stdio and HTTP: a tool that returns its
// URLElicitationRequiredError, and a completion it sends with
// NotifyElicitationComplete.
func TestGoSDKServerURLElicitationRequiredAndComplete(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "url-server", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "calendar"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		return nil, nil, mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", ElicitationID: "el-9", URL: "https://srv.example/connect/el-9", Message: "Connect your calendar."}})
	})
	mcp.AddTool(server, &mcp.Tool{Name: "finish"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		if err := req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: "el-9"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	for name, tr := range goSDKTransports(t, server) {
		t.Run(name, func(t *testing.T) {
			done := make(chan *conduit.ElicitationComplete, 2)
			c, err := conduit.Connect(callCtx(t), tr, conduit.Options{Era: conduit.EraLegacy,
				Handlers: conduit.Handlers{ElicitationComplete: func(_ context.Context, _ conduit.NotificationContext, e *conduit.ElicitationComplete) { done <- e }}})
			require.NoError(t, err)
			defer c.Close()
			_, err = c.CallTool(callCtx(t), "calendar", nil)
			require.ErrorIs(t, err, conduit.ErrURLElicitationRequired)
			var ue *conduit.URLElicitationRequiredError
			require.ErrorAs(t, err, &ue)
			require.Len(t, ue.Elicitations, 1)
			assert.Equal(t, "https://srv.example/connect/el-9", ue.Elicitations[0].URL)
			assert.True(t, ue.Elicitations[0].OriginMismatch)
			_, err = c.CallTool(callCtx(t), "finish", nil)
			require.NoError(t, err)
			select {
			case got := <-done:
				assert.Equal(t, "el-9", got.ElicitationID)
				assert.Same(t, ue.Elicitations[0], got.Request)
			case <-callCtx(t).Done():
				t.Fatal("no completion reached the hook")
			}
			assert.EqualValues(t, 0, c.Stats().UnknownResponses)
		})
	}
}

// A task-augmented tools/call (2025-11-25) refused with -32042 carries its
// URL elicitations as a plain call's error does.
func TestURLElicitationRequiredOnATaskCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		d := callAsync(c, "research")
		m := srv.next()
		require.Equal(t, "tools/list", m["method"])
		srv.reply(m["id"], taskTools)
		m = srv.next()
		require.Contains(t, m["params"], "task")
		srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32042, "message": "Authorization needed",
			"data": map[string]any{"elicitations": []any{map[string]any{"mode": "url", "elicitationId": "el-1", "url": "https://srv.example/a", "message": "Sign in."}}}}})
		err := (<-d).err
		require.ErrorIs(t, err, conduit.ErrURLElicitationRequired)
		var ue *conduit.URLElicitationRequiredError
		require.ErrorAs(t, err, &ue)
		require.Len(t, ue.Elicitations, 1)
		assert.Equal(t, "srv.example", ue.Elicitations[0].Host)
	})
}
