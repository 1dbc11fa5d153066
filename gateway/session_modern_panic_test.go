package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A modern call's session actor (a modern client's call is its own
// session, decision 63) that panics: that call fails with -32603 and is
// cancelled upstream (notifications/cancelled); the same client's other
// call and a legacy session's calls go on.
func TestModernCallSessionActorPanic(t *testing.T) {
	up := newSessionUpstream(t)
	g, url := serve(t, up.config())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m := rawClient(t, ctx, url)
	b := legacyClient(t, ctx, url, nil)

	type outcome struct {
		who string
		err error
	}
	out := make(chan outcome, 2)
	callCtx, stop := context.WithCancel(ctx)
	defer stop()
	for _, who := range []string{"m1", "m2"} {
		go func() {
			_, err := m.CallTool(callCtx, &mcp.CallToolParams{Name: "up__block", Arguments: map[string]any{"who": who}})
			out <- outcome{who, err}
		}()
	}
	waitFor(t, up.started, "a first modern call upstream")
	waitFor(t, up.started, "a second modern call upstream")

	g.sessions.mu.Lock()
	var victim *session
	calls := 0
	for id, s := range g.sessions.byID {
		if strings.HasPrefix(id, "call-") {
			calls++
			victim = s
		}
	}
	g.sessions.mu.Unlock()
	require.Equal(t, 2, calls, "each modern call is a session")
	g.sessions.sys.Root.Send(victim.pid, inspect(func(*sessionActor) { panic("boom") }))

	var failed outcome
	select {
	case failed = <-out:
	case <-ctx.Done():
		t.Fatal("the call of the failed actor did not fail")
	}
	require.Error(t, failed.err)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), rpcCode(failed.err), "%v", failed.err)
	assert.Contains(t, failed.err.Error(), "Internal error: the gateway's actor of the downstream session failed; its calls were cancelled")
	assert.Equal(t, failed.who, waitFor(t, up.ended, "the failed call cancelled upstream"))
	assert.Eventually(t, func() bool { return up.cancels() == 1 }, 10*time.Second, 10*time.Millisecond, "the upstream got notifications/cancelled for it")

	// The other modern call still runs upstream; a legacy session serves.
	select {
	case o := <-out:
		t.Fatalf("the other modern call ended: %s %v", o.who, o.err)
	case who := <-up.ended:
		t.Fatalf("the other modern call was cancelled upstream: %s", who)
	case <-time.After(100 * time.Millisecond):
	}
	res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "b"}})
	require.NoError(t, err)
	assert.Equal(t, "echo b", res.Content[0].(*mcp.TextContent).Text)
	res, err = m.CallTool(ctx, &mcp.CallToolParams{Name: "up__echo", Arguments: map[string]any{"who": "m3"}})
	require.NoError(t, err, "the modern client's next call has a session of its own")
	assert.Equal(t, "echo m3", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, int64(1), g.SessionStats().Failed)

	stop()
	other := <-out
	require.Error(t, other.err)
	assert.NotEqual(t, failed.who, other.who)
	assert.Equal(t, other.who, waitFor(t, up.ended, "the other call cancelled upstream when its client gave up"))
}
