package actors_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// A handler set given as data declares exactly its non-nil kinds and
// refuses the others before any callback, like the interface adapter.
func TestHandlerSetDeclaresAndRefusesByItsFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rootsCalls, logs atomic.Int32
		h := conduit.Handlers{
			Roots: func(_ context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				rootsCalls.Add(1)
				return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///w"}}}, nil
			},
			Log: func(context.Context, conduit.NotificationContext, *conduit.LoggingMessage) { logs.Add(1) },
			// Modes without an Elicitation function declare nothing.
			ElicitationModes: []string{"url"},
		}
		_, srv := connect(t, conduit.Options{Handlers: h}, "2025-11-25")
		params := srv.Init["params"].(map[string]any)
		assert.Equal(t, map[string]any{"roots": map[string]any{"listChanged": true}}, params["capabilities"])

		srv.request(1, "sampling/createMessage", samplingParams)
		srv.expectError(1, messages.CodeMethodNotFound)
		srv.request(2, "elicitation/create", formParams)
		srv.expectError(2, messages.CodeMethodNotFound)
		srv.request(3, "roots/list", nil)
		m := srv.expectResponse(3)
		assert.Equal(t, map[string]any{"roots": []any{map[string]any{"uri": "file:///w"}}}, m["result"])
		assert.Equal(t, int32(1), rootsCalls.Load())

		srv.notify("notifications/message", map[string]any{"level": "info", "data": "hi"})
		srv.request(4, "ping", nil)
		srv.expectResponse(4)
		synctest.Wait()
		require.Equal(t, int32(1), logs.Load())
	})
}
