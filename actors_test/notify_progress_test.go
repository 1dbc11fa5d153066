package actors_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// usageErr asserts err is KindUsage with message.
func usageErr(t *testing.T, err error, message string) {
	t.Helper()
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindUsage, ce.Kind)
	assert.Equal(t, message, ce.Message)
}

// An input handler reports progress on the legacy request it answers, under
// the progressToken of that request (its JSON as sent), before its answer;
// progress that does not grow is refused.
func TestNotifyProgressFromAnInputHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errs := make(chan error, 3)
		h := &handler{sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			errs <- conduit.NotifyProgress(ctx, 1, 3, "one of three")
			errs <- conduit.NotifyProgress(ctx, 2.5, 0, "")
			errs <- conduit.NotifyProgress(ctx, 2.5, 3, "again")
			return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "m"}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		call := callAsync(c, "x")
		m := srv.next()
		params := map[string]any{"_meta": map[string]any{"progressToken": 17}}
		for k, v := range samplingParams {
			params[k] = v
		}
		srv.request("s1", "sampling/createMessage", params)
		assert.Equal(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": 17.0, "progress": 1.0, "total": 3.0, "message": "one of three"}}, srv.next())
		assert.Equal(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
			"params": map[string]any{"progressToken": 17.0, "progress": 2.5}}, srv.next())
		srv.expectResponse("s1")
		require.NoError(t, <-errs)
		require.NoError(t, <-errs)
		usageErr(t, <-errs, "progress must grow with each report: 2.5 is not above 2.5")
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err)
	})
}

// Without a progressToken, outside a handler and in the modern era,
// NotifyProgress is the caller's mistake, and nothing is sent.
func TestNotifyProgressUsage(t *testing.T) {
	usageErr(t, conduit.NotifyProgress(context.Background(), 1, 0, ""), "NotifyProgress needs the ctx of an input handler (sampling, elicitation, roots)")
	inBothEras(t, func(t *testing.T, e eraCase) {
		errs := make(chan error, 1)
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			errs <- conduit.NotifyProgress(ctx, 1, 0, "")
			return &conduit.ListRootsResult{Roots: []conduit.Root{}}, nil
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h})
		e.ask(t, c, srv, "roots/list", nil)()
		want := "the server's roots/list request carried no progressToken"
		if e.era == conduit.EraModern {
			want = "input requests embedded in a modern result have no channel back to the server: no progress can be sent for roots/list"
		}
		usageErr(t, <-errs, want)
		synctest.Wait()
		assert.Empty(t, srv.in, "nothing more was sent")
	})
}

// Against the go-sdk server, over stdio and HTTP: its ProgressNotificationHandler gets the
// progress of the sampling request it sent with a progressToken.
func TestGoSDKServerHearsNotifyProgress(t *testing.T) {
	got := make(chan string, 4)
	server := mcp.NewServer(&mcp.Implementation{Name: "progress-server", Version: "1"}, &mcp.ServerOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationServerRequest) {
			b, _ := json.Marshal(r.Params)
			got <- string(b)
		},
	})
	mcp.AddTool(server, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 sampling in the legacy era is what is tested: deprecated in 2026-07-28, not gone
		p := &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}
		p.SetProgressToken("tok-1")
		//lint:ignore SA1019 sampling in the legacy era is what is tested: deprecated in 2026-07-28, not gone
		if _, err := req.Session.CreateMessage(ctx, p); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	h := &handler{sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		if err := conduit.NotifyProgress(ctx, 50, 100, "half way"); err != nil {
			return nil, err
		}
		return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "m"}, nil
	}}
	for name, tr := range goSDKTransports(t, server) {
		t.Run(name, func(t *testing.T) {
			c, err := conduit.Connect(callCtx(t), tr, conduit.Options{Handler: h, Era: conduit.EraLegacy})
			require.NoError(t, err)
			defer c.Close()
			_, err = c.CallTool(callCtx(t), "ask", nil)
			require.NoError(t, err)
			select {
			case p := <-got:
				assert.JSONEq(t, `{"message":"half way","progress":50,"progressToken":"tok-1","total":100}`, p)
			case <-callCtx(t).Done():
				t.Fatal("the go-sdk server never got the progress")
			}
		})
	}
}
