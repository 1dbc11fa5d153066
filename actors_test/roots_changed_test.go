package actors_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// TestRootsChangedLegacyNotifiesAndTheServerAsksAgain: a legacy client with
// a Roots handler declares roots.listChanged; RootsChanged sends exactly
// notifications/roots/list_changed, and the roots/list the server sends
// next gets the handler's new roots.
func TestRootsChangedLegacyNotifiesAndTheServerAsksAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var current atomic.Value
		current.Store("file:///old")
		h := rootsFunc(func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: current.Load().(string)}}}, nil
		})
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		caps := srv.Init["params"].(map[string]any)["capabilities"].(map[string]any)
		assert.Equal(t, map[string]any{"roots": map[string]any{"listChanged": true}}, caps)

		srv.request(1, "roots/list", nil)
		assert.Equal(t, []any{map[string]any{"uri": "file:///old"}}, srv.expectResponse(1)["result"].(map[string]any)["roots"])

		current.Store("file:///new")
		require.NoError(t, c.RootsChanged(context.Background()))
		assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, srv.nextRaw())
		srv.request(2, "roots/list", nil)
		assert.Equal(t, []any{map[string]any{"uri": "file:///new"}}, srv.expectResponse(2)["result"].(map[string]any)["roots"])
		assert.Equal(t, conduit.Stats{}.NotificationsDropped, c.Stats().NotificationsDropped)
	})
}

// TestRootsChangedModernSendsNothing: a modern server keeps no roots, so
// there is nothing to send and nothing is declared beyond "roots".
func TestRootsChangedModernSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}})
		require.NoError(t, c.RootsChanged(context.Background()))
		d := callAsync(c, "x")
		call := srv.next()
		assert.Equal(t, "tools/call", call["method"], "RootsChanged sent nothing before it")
		assert.Equal(t, map[string]any{}, meta(t, call)["io.modelcontextprotocol/clientCapabilities"].(map[string]any)["roots"])
		srv.reply(call["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

// TestRootsChangedWithoutRootsOrAfterClose: a client that declares no roots
// may not send list_changed (KindUsage, nothing sent); a closed client
// fails KindClosed.
func TestRootsChangedWithoutRootsOrAfterClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		err := c.RootsChanged(context.Background())
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindUsage, ce.Kind)
		assert.Equal(t, "notifications/roots/list_changed", ce.Method)
		assert.Contains(t, err.Error(), "no Roots handler")
		go func() { _ = c.Ping(context.Background()) }()
		ping := srv.next()
		assert.Equal(t, "ping", ping["method"], "nothing sent before it")
		srv.reply(ping["id"], map[string]any{})

		rc, _ := connect(t, conduit.Options{Handler: &handler{}}, "2025-11-25")
		require.NoError(t, rc.Close())
		require.ErrorAs(t, rc.RootsChanged(context.Background()), &ce)
		assert.Equal(t, conduit.KindClosed, ce.Kind)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c2, _ := connect(t, conduit.Options{Handler: &handler{}}, "2025-11-25")
		require.ErrorAs(t, c2.RootsChanged(ctx), &ce)
		assert.Equal(t, conduit.KindCancelled, ce.Kind)
	})
}

// TestRootsChangedInvitesOneRootsListPastTheBudget: the roots/list a
// RootsChanged asks for is answered even when the input budget is spent
// (the client invited it); the one after it is charged, and refused.
func TestRootsChangedInvitesOneRootsListPastTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{Handler: &handler{}, InputRateLimit: 0.001, InputBurst: 1}, "2025-11-25")
		srv.request(1, "roots/list", nil) // spends the budget
		srv.expectResponse(1)
		srv.request(2, "roots/list", nil)
		srv.expectError(2, -32000)

		require.NoError(t, c.RootsChanged(context.Background()))
		assert.Equal(t, "notifications/roots/list_changed", srv.next()["method"])
		srv.request(3, "roots/list", nil)
		assert.Contains(t, srv.expectResponse(3), "result", "the invited roots/list is answered")
		srv.request(4, "roots/list", nil)
		srv.expectError(4, -32000)
	})
}
