package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// trail records what middlewares saw, in order.
type trail struct {
	mu   sync.Mutex
	seen []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen = append(tr.seen, s)
}

func (tr *trail) count() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.seen)
}

func (tr *trail) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.seen
	tr.seen = nil
	return out
}

// recording is a middleware that adds "name>method" before and
// "<name method err?" after next, and checks the time is measurable.
func recording(tr *trail, name string) conduit.Middleware {
	return func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			tr.add(name + ">" + method)
			start := time.Now()
			res, err := next(ctx, method, params)
			if time.Since(start) < 0 {
				tr.add("time ran backwards")
			}
			after := "<" + name + " " + method
			if err != nil {
				after += " error"
			}
			tr.add(after)
			return res, err
		}
	}
}

// Sending middleware wraps each request the client sends, the first
// outermost, on the caller's goroutine; it may rewrite the request and
// the result, fail it, or panic, and the client goes on.
func TestSendingMiddleware(t *testing.T) {
	bothEras(t, func(t *testing.T, modern bool) {
		tr := &trail{}
		var mode sync.Map // what the "chaos" middleware does next
		chaos := func(next conduit.MethodHandler) conduit.MethodHandler {
			return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				if method != "tools/call" {
					return next(ctx, method, params)
				}
				switch v, _ := mode.Load("do"); v {
				case "rewrite":
					params = json.RawMessage(strings.Replace(string(params), `"alias"`, `"good"`, 1))
					res, err := next(ctx, method, params)
					if err != nil {
						return nil, err
					}
					return json.RawMessage(strings.Replace(string(res), `"n":3`, `"n":4`, 1)), nil
				case "fail":
					return nil, errors.New("not today")
				case "panic":
					panic("middleware bug")
				}
				return next(ctx, method, params)
			}
		}
		s := &schemaServer{modern: modern, tools: map[string]schemaTool{
			"good": {nSchema, `{"content":[],"structuredContent":{"n":3}}`},
		}}
		c := s.connect(t, conduit.Options{SendingMiddleware: []conduit.Middleware{recording(tr, "a"), recording(tr, "b"), chaos}})
		ctx := callCtx(t)
		tr.take()                  // the handshake does not go through it
		_, err := c.ListTools(ctx) // the outputSchema the calls are checked against
		require.NoError(t, err)
		_, err = c.CallTool(ctx, "good", nil)
		require.NoError(t, err)
		assert.Equal(t, []string{"a>tools/list", "b>tools/list", "<b tools/list", "<a tools/list",
			"a>tools/call", "b>tools/call", "<b tools/call", "<a tools/call"}, tr.take())

		mode.Store("do", "rewrite")
		r, err := c.CallTool(ctx, "alias", nil)
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":4}`, string(r.StructuredContent), "the rewritten result, checked against the schema")

		calls := s.seen("tools/call")
		mode.Store("do", "fail")
		_, err = c.CallTool(ctx, "good", nil)
		kind, msg := kindOf(t, err)
		assert.Equal(t, conduit.KindUsage, kind)
		assert.Equal(t, "refused by a sending middleware", msg)
		assert.ErrorContains(t, err, "not today")
		assert.Equal(t, calls, s.seen("tools/call"), "nothing sent")
		tr.take()

		mode.Store("do", "panic")
		_, err = c.CallTool(ctx, "good", nil)
		kind, msg = kindOf(t, err)
		assert.Equal(t, conduit.KindInternal, kind)
		assert.Equal(t, "a sending middleware panicked: middleware bug", msg)
		assert.Equal(t, []string{"a>tools/call", "b>tools/call"}, tr.take(), "the panic unwound the outer ones")

		mode.Store("do", "")
		_, err = c.CallTool(ctx, "good", nil)
		require.NoError(t, err, "the client goes on")
		require.NoError(t, c.Ping(ctx))
		method := "ping"
		if modern {
			method = "server/discover"
		}
		assert.Equal(t, []string{"a>tools/call", "b>tools/call", "<b tools/call", "<a tools/call", "a>" + method, "b>" + method, "<b " + method, "<a " + method}, tr.take())
	})
}

// Receiving middleware wraps the handler of each server request, inside
// the guards, on the handler's goroutine: it may rewrite the result,
// refuse, or panic (the request's own failure), in both eras.
func TestReceivingMiddleware(t *testing.T) {
	bothEras(t, func(t *testing.T, modern bool) {
		server := mcp.NewServer(&mcp.Implementation{Name: "asks", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			//lint:ignore SA1019 sampling by server request is what is tested in the legacy era
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}, MaxTokens: 10})
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content.(*mcp.TextContent).Text}}}, nil, nil
		})
		tr := &trail{}
		var mode sync.Map
		chaos := func(next conduit.MethodHandler) conduit.MethodHandler {
			return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				tr.add("params " + string(params[:min(len(params), 12)]))
				switch v, _ := mode.Load("do"); v {
				case "rewrite":
					res, err := next(ctx, method, params)
					if err != nil {
						return nil, err
					}
					return json.RawMessage(strings.Replace(string(res), `"hello"`, `"rewritten"`, 1)), nil
				case "refuse":
					return nil, &conduit.RPCError{Code: -1, Message: "no sampling today"}
				case "panic":
					panic("receiving bug")
				}
				return next(ctx, method, params)
			}
		}
		h := &handler{sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			tr.add("handler")
			return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("hello"), Model: "m"}, nil
		}}
		opts := conduit.Options{Handler: h, Era: conduit.EraLegacy, ReceivingMiddleware: []conduit.Middleware{recording(tr, "a"), recording(tr, "b"), chaos}}
		// Legacy: the go-sdk server in-process asks by a server request;
		// modern: the everything-server's tool asks by input_required.
		tool, prefix := "ask", ""
		var c *conduit.Client
		if modern {
			tool, prefix = "test_input_required_result_sampling", "Sampling response: "
			c = connectModern(t, opts)
		} else {
			var err error
			c, err = conduit.Connect(callCtx(t), inProcessServer(t, server), opts)
			require.NoError(t, err)
			defer c.Close()
		}
		ctx := callCtx(t)

		r, err := c.CallTool(ctx, tool, nil)
		require.NoError(t, err)
		assert.Equal(t, prefix+"hello", textOf(t, r))
		assert.Equal(t, []string{"a>sampling/createMessage", "b>sampling/createMessage", `params {"messages":`, "handler", "<b sampling/createMessage", "<a sampling/createMessage"}, tr.take())

		mode.Store("do", "rewrite")
		r, err = c.CallTool(ctx, tool, nil)
		require.NoError(t, err)
		assert.Equal(t, prefix+"rewritten", textOf(t, r))

		for _, do := range []string{"refuse", "panic"} {
			mode.Store("do", do)
			r, err = c.CallTool(ctx, tool, nil)
			if modern {
				kind, _ := kindOf(t, err)
				assert.Equal(t, conduit.KindInputHandler, kind, do)
			} else {
				// go-sdk turns the handler's error into an isError result.
				require.NoError(t, err, do)
				assert.True(t, r.IsError, do)
				want := map[string]string{"refuse": "no sampling today", "panic": "Internal error"}[do]
				assert.Contains(t, textOf(t, r), want, do)
			}
		}
		mode.Store("do", "")
		r, err = c.CallTool(ctx, tool, nil)
		require.NoError(t, err, "the client goes on")
		assert.Equal(t, prefix+"hello", textOf(t, r))
	})
}

// Receiving middleware wraps notification and log callbacks too; one
// that does not call next keeps the entry from the callback.
func TestReceivingMiddlewareOnNotifications(t *testing.T) {
	tr := &trail{}
	got := make(chan string, 4)
	drop := func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if strings.Contains(string(params), "secret") {
				return nil, nil
			}
			return next(ctx, method, params)
		}
	}
	h := conduit.Handlers{Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
		got <- fmt.Sprint(e.Data)
	}}
	c, srv := connect(t, conduit.Options{Handlers: h, ReceivingMiddleware: []conduit.Middleware{recording(tr, "a"), drop}}, "2025-11-25")
	defer c.Close()
	srv.sendRaw(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"secret"}}`)
	srv.sendRaw(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}`)
	assert.Equal(t, "hello", <-got)
	// The callback returns, then its middleware (Close would abandon a
	// callback still running, not wait for it).
	require.Eventually(t, func() bool { return tr.count() == 4 }, 5*time.Second, time.Millisecond)
	require.NoError(t, c.Close())
	assert.Equal(t, []string{"a>notifications/message", "<a notifications/message", "a>notifications/message", "<a notifications/message"}, tr.take())
}

// The typed change hooks go through the receiving middleware as the
// notifications they come from, with the typed value as params.
func TestReceivingMiddlewareOnChangeHooks(t *testing.T) {
	tr := &trail{}
	got := make(chan string, 4)
	h := conduit.Handlers{
		ToolsChanged: func(context.Context, conduit.NotificationContext, *conduit.ToolsChange) { got <- "tools" },
		ResourceUpdated: func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
			got <- u.URI
		},
	}
	// Close abandons a callback still running, so the test waits for the
	// middleware's after-hook, not only for the handler, before it closes.
	returned := make(chan struct{}, 2)
	mw := func(next conduit.MethodHandler) conduit.MethodHandler {
		inner := recording(tr, "a")(next)
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			defer func() { returned <- struct{}{} }()
			return inner(ctx, method, params)
		}
	}
	c, srv := connect(t, conduit.Options{Handlers: h, ReceivingMiddleware: []conduit.Middleware{mw}}, "2025-11-25")
	defer c.Close()
	srv.sendRaw(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	assert.Equal(t, "tools", <-got)
	srv.sendRaw(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"test://r"}}`)
	assert.Equal(t, "test://r", <-got)
	<-returned
	<-returned
	require.NoError(t, c.Close())
	assert.Equal(t, []string{"a>notifications/tools/list_changed", "<a notifications/tools/list_changed",
		"a>notifications/resources/updated", "<a notifications/resources/updated"}, tr.take())
}
