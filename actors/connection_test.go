package actors

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// A logical call that reaches the connection once it is ending is told so
// on its expired channel, and puts nothing on the clock: no timer of the
// connection outlives it (one did, and ticked into a dead letter an hour
// later).
func TestLogicalStartedOnceTheConnectionEndsIsToldAndLeavesNoTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem(nil)
		var ticks atomic.Int32
		sub := sys.EventStream.Subscribe(func(ev any) {
			if d, ok := ev.(*actor.DeadLetterEvent); ok {
				if _, ok := d.Message.(*deadlineTick); ok {
					ticks.Add(1)
				}
			}
		})
		defer sys.EventStream.Unsubscribe(sub)
		client, server := transport.NewMemoryPair()
		defer server.Close()
		conn := &stuckWrites{Conn: client, closed: make(chan struct{})}
		rt := Start(Config{Conn: conn, System: sys})
		// A frame the writer is stuck on holds the teardown at its flush
		// (2 s) until the test waits: the connection is still there when
		// the call starts.
		require.NoError(t, rt.Notify("notifications/initialized", nil))
		expired := make(chan error, 1)
		// The transport fails; a call begun just before starts after it.
		rt.post(&writerFailed{err: errors.New("broken pipe")})
		rt.post(&logicalStart{id: messages.IntID(1), method: messages.MethodCallTool, timeout: time.Hour, expired: expired})
		<-rt.Done()
		select {
		case err := <-expired:
			var ce *messages.Error
			require.True(t, errors.As(err, &ce), "err: %v", err)
			assert.Equal(t, messages.KindTransport, ce.Kind)
			assert.Equal(t, messages.MethodCallTool, ce.Method)
		default:
			t.Error("the logical call was not told the connection ended")
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.Zero(t, ticks.Load(), "a deadline tick after the connection stopped")
	})
}

// stuckWrites is a transport whose writes wait for its Close.
type stuckWrites struct {
	transport.Conn
	closed chan struct{}
	once   sync.Once
}

func (s *stuckWrites) Write(context.Context, []byte) error {
	<-s.closed
	return transport.ErrClosed
}

func (s *stuckWrites) Close() error {
	s.once.Do(func() { close(s.closed) })
	return s.Conn.Close()
}
