//lint:file-ignore SA1019 logging is relayed here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// modernUpstream is a go-sdk server in the modern era (stateless): "chatty"
// logs at debug and info; "twice" asks for a form, then, answered,
// reports progress 7 and logs at warning.
func modernUpstream(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "modern", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, l := range []mcp.LoggingLevel{"debug", "info"} {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: l, Logger: "work", Data: "at " + string(l)})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "twice", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if len(req.Params.InputResponses) == 0 {
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{Message: "go on?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}}, nil
		}
		if token := req.Params.GetProgressToken(); token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 7, Message: "second round"})
		}
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "round two"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	return serveSDK(t, s, &mcp.StreamableHTTPOptions{Stateless: true})
}

// A modern client's request that asks for log entries (its _meta
// logLevel) gets the upstream's, sanitised and naming the server, at its
// level and above, on each round's stream; a later round's progress
// reaches it too, under its own token.
func TestGatewayRelaysLogsAndLaterProgressToModern(t *testing.T) {
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"m": {URL: modernUpstream(t), Conduit: host.Settings{Era: conduit.EraModern, Ping: host.PingPolicy{Interval: -1}}},
	}})
	entries := make(chan conduit.LoggingMessage, 16)
	progress := make(chan conduit.Progress, 16)
	c := connect(t, url+"/mcp", conduit.EraModern, conduit.Handlers{
		Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) { entries <- *e },
		Progress: func(_ context.Context, _ conduit.NotificationContext, p *conduit.Progress) {
			progress <- *p
		},
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	next := func() *conduit.LoggingMessage {
		select {
		case e := <-entries:
			return &e
		case <-time.After(5 * time.Second):
			return nil
		}
	}

	_, err := c.CallTool(ctx, "m__chatty", nil)
	require.NoError(t, err)
	require.NoError(t, c.SetLogLevel(ctx, "info"))
	_, err = c.CallTool(ctx, "m__chatty", nil)
	require.NoError(t, err)
	e := next()
	require.NotNil(t, e, "no entry relayed")
	assert.Equal(t, conduit.LoggingMessage{Level: "info", Logger: "m/work", Data: "at info"}, *e)

	res, err := c.CallTool(ctx, "m__twice", nil, conduit.WithProgressToken("mine"))
	require.NoError(t, err)
	assert.Equal(t, "done", text(t, res))
	select {
	case p := <-progress:
		assert.Equal(t, conduit.Progress{Token: "mine", Progress: 7, Message: "second round"}, p)
	case <-time.After(5 * time.Second):
		t.Fatal("the second round's progress was not relayed")
	}
	e = next()
	require.NotNil(t, e, "the second round's entry was not relayed")
	assert.Equal(t, "warning", e.Level)
	assert.Equal(t, "m", e.Logger)
	assert.Empty(t, entries, "debug, and the call made before SetLogLevel, sent nothing")
}
