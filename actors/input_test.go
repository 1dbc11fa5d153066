package actors

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

type rootsOnly struct{ calls int }

func (r *rootsOnly) ListRoots(context.Context, *messages.RootsRequest) (*messages.ListRootsResult, error) {
	r.calls++
	return &messages.ListRootsResult{}, nil
}

// Input is never answered without a grant: once the connection has ended,
// gathering fails, before any callback runs.
func TestGatherFailsOnceTheConnectionEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &rootsOnly{}
		client, server := transport.NewMemoryPair()
		defer server.Close()
		var audits []messages.AuditRecord
		hs := messages.Handlers{Roots: h.ListRoots}
		rt := Start(Config{Conn: client, Handlers: hs, Audit: func(r messages.AuditRecord) { audits = append(audits, r) }})
		synctest.Wait()
		require.NoError(t, rt.Close())
		m := Modern{Method: messages.MethodCallTool, Version: era.ModernVersions[0], Declared: era.Declare(hs, false)}
		answers, err := rt.gather(context.Background(), messages.IntID(1), m, map[string]json.RawMessage{"k": json.RawMessage(`{"method":"roots/list"}`)}, make(chan error, 1))
		assert.Nil(t, answers)
		var ce *messages.Error
		require.True(t, errors.As(err, &ce), "err: %v", err)
		assert.Equal(t, messages.KindClosed, ce.Kind)
		assert.Equal(t, messages.MethodCallTool, ce.Method)
		assert.Zero(t, h.calls)
		assert.Empty(t, audits)
	})
}
