package gateway

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// fakeUpstream serves two tools of server "f": "ok" answers at once,
// "wait" until its ctx ends (each such ctx is sent on calls). The methods
// it does not override are not called.
type fakeUpstream struct {
	Upstream
	changed chan struct{}
	calls   chan context.Context
}

func (f *fakeUpstream) Tools() []host.Tool {
	var ts []host.Tool
	for _, name := range []string{"ok", "wait"} {
		ts = append(ts, host.Tool{Tool: conduit.Tool{Name: "f__" + name, InputSchema: json.RawMessage(`{"type":"object"}`)}, Server: "f", ServerTool: name})
	}
	return ts
}
func (f *fakeUpstream) CatalogChanged() <-chan struct{}                    { return f.changed }
func (f *fakeUpstream) Prompts(context.Context) ([]host.Prompt, error)     { return nil, nil }
func (f *fakeUpstream) Resources(context.Context) ([]host.Resource, error) { return nil, nil }
func (f *fakeUpstream) ResourceTemplates(context.Context) ([]host.ResourceTemplate, error) {
	return nil, nil
}
func (f *fakeUpstream) Close() error { return nil }
func (f *fakeUpstream) CallTool(ctx context.Context, _, tool string, _ any, _ ...conduit.CallOption) (*conduit.CallToolResult, error) {
	if tool == "wait" {
		f.calls <- ctx
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return &conduit.CallToolResult{Content: []conduit.ContentBlock{{Type: "text", Text: "ok"}}}, nil
}

// idTransport gives its connection a session id, as the Streamable HTTP
// handler's have.
type idTransport struct {
	mcp.Transport
	id string
}

func (t idTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return idConn{c, t.id}, nil
}

type idConn struct {
	mcp.Connection
	id string
}

func (c idConn) SessionID() string { return c.id }

// A legacy HTTP session with nothing in flight is closed after the idle
// timeout, to the millisecond, and counted; one with a call in flight is
// not. A stdio session has no idle timeout; its client disconnecting ends
// it: its call is cancelled upstream with that cause, and counted.
func TestSessionIdleTimeoutAndDisconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := &fakeUpstream{changed: make(chan struct{}), calls: make(chan context.Context, 4)}
		g, err := New(host.Config{}, Options{
			Upstream: func(host.Config, host.Options) (Upstream, error) { return up, nil },
			Sessions: SessionLimits{IdleTimeout: time.Minute},
		})
		require.NoError(t, err)
		g.Sync()
		ctx := context.Background()
		client := func() *mcp.Client { return mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil) }
		legacy := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

		// An HTTP-like session (it has an id), idle after one call.
		ct, st := mcp.NewInMemoryTransports()
		ss, err := g.Server().Connect(ctx, idTransport{st, "idle-1"}, nil)
		require.NoError(t, err)
		idle, err := client().Connect(ctx, ct, legacy)
		require.NoError(t, err)
		res, err := idle.CallTool(ctx, &mcp.CallToolParams{Name: "f__ok", Arguments: map[string]any{}})
		require.NoError(t, err)
		assert.Equal(t, "ok", res.Content[0].(*mcp.TextContent).Text)
		closed := make(chan struct{})
		go func() { _ = ss.Wait(); close(closed) }()

		// An HTTP-like session with a call in flight.
		ct2, st2 := mcp.NewInMemoryTransports()
		_, err = g.Server().Connect(ctx, idTransport{st2, "busy-1"}, nil)
		require.NoError(t, err)
		busy, err := client().Connect(ctx, ct2, legacy)
		require.NoError(t, err)
		go func() { _, _ = busy.CallTool(ctx, &mcp.CallToolParams{Name: "f__wait", Arguments: map[string]any{}}) }()
		busyCall := <-up.calls

		// The stdio session (ServeIO over pipes), with a call in flight.
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- g.ServeIO(ctx, inR, outW) }()
		stdio, err := client().Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, legacy)
		require.NoError(t, err)
		go func() { _, _ = stdio.CallTool(ctx, &mcp.CallToolParams{Name: "f__wait", Arguments: map[string]any{}}) }()
		stdioCall := <-up.calls

		time.Sleep(time.Minute - time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int64(0), g.SessionStats().Idle)
		assert.Equal(t, 3, g.SessionStats().Open)
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, int64(1), g.SessionStats().Idle, "idle-1 closed at its idle timeout")
		assert.Equal(t, 2, g.SessionStats().Open)
		select {
		case <-closed:
		default:
			t.Fatal("the idle session was not closed")
		}

		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Equal(t, int64(1), g.SessionStats().Idle, "a session with a call in flight is not idle; stdio has no idle timeout")
		require.NoError(t, busyCall.Err())
		require.NoError(t, stdioCall.Err())

		require.NoError(t, inW.Close()) // the client goes away: the gateway's stdin ends
		synctest.Wait()
		assert.ErrorIs(t, stdioCall.Err(), context.Canceled, "the disconnected client's call is cancelled upstream")
		assert.NoError(t, busyCall.Err(), "the other session's call runs on")
		assert.Equal(t, int64(1), g.SessionStats().Disconnected)
		assert.NoError(t, <-served)
		_ = outW.Close()

		require.NoError(t, g.Close()) // busy's call cancelled: its client's Close waits for it
		for _, cs := range []*mcp.ClientSession{idle, busy, stdio} {
			_ = cs.Close()
		}
	})
}
