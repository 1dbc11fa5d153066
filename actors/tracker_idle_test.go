package actors

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// tracked is the connection's tracker as its actor left it: a Notify is
// handled after every message sent before it, the tracker's settling
// included.
func tracked(t *testing.T, rt *Runtime) *tracker {
	require.NoError(t, rt.Notify("notifications/progress", map[string]any{"progressToken": "t", "progress": 1}))
	return rt.m.conn.tracker
}

// A connection holds a call tracker only while it tracks something
// (decision 75): none at rest, one while a call is in flight, none again
// once the call has its answer or has timed out; the call's timeout runs
// meanwhile as before, and a late tick makes none.
func TestConnectionHoldsATrackerOnlyWhileBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := transport.NewMemoryPair()
		defer server.Close()
		rt := Start(Config{Conn: client, System: NewSystem(nil)})
		defer rt.Close()
		var answer atomic.Bool
		requests := make(chan json.RawMessage, 4)
		go func() { // the server: reads everything, answers requests when told
			for {
				msg, err := server.Read(context.Background())
				if err != nil {
					return
				}
				var f struct {
					ID json.RawMessage `json:"id"`
				}
				if json.Unmarshal(msg.Data, &f) != nil || f.ID == nil {
					continue
				}
				requests <- f.ID
				if answer.Load() {
					_ = server.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(f.ID)+`,"result":{}}`))
				}
			}
		}()
		assert.Nil(t, tracked(t, rt), "a connection at rest")

		done := make(chan error, 1)
		go func() {
			_, err := rt.Call(context.Background(), messages.MethodPing, nil, CallOptions{Timeout: time.Minute})
			done <- err
		}()
		id := <-requests
		busy := tracked(t, rt)
		require.NotNil(t, busy, "a call in flight")
		assert.NotNil(t, busy.timer, "its timeout on the clock")
		require.NoError(t, server.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`)))
		require.NoError(t, <-done)
		assert.Nil(t, tracked(t, rt), "the call answered")

		answer.Store(true)
		_, err := rt.Call(context.Background(), messages.MethodPing, nil, CallOptions{Timeout: time.Minute})
		require.NoError(t, err)
		assert.Nil(t, tracked(t, rt), "a call answered at once")
		answer.Store(false)

		start := time.Now()
		_, err = rt.Call(context.Background(), messages.MethodPing, nil, CallOptions{Timeout: time.Second})
		<-requests
		<-requests
		var ce *messages.Error
		require.True(t, errors.As(err, &ce), "err: %v", err)
		assert.Equal(t, messages.KindTimeout, ce.Kind)
		assert.Equal(t, time.Second, time.Since(start))
		assert.Nil(t, tracked(t, rt), "the call timed out")

		rt.post(&deadlineTick{})
		assert.Nil(t, tracked(t, rt), "after a late tick")
	})
}

// A connection at rest has no activity (counters, task pollers, issued
// elicitations; decision 75): its Stats are zero without it, and the
// first count makes it.
func TestActivityIsMadeByTheFirstCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := transport.NewMemoryPair()
		defer server.Close()
		rt := Start(Config{Conn: client, System: NewSystem(nil)})
		defer rt.Close()
		go func() {
			for {
				if _, err := server.Read(context.Background()); err != nil {
					return
				}
			}
		}()
		synctest.Wait()
		assert.Nil(t, rt.m.sh.activity.Load(), "a connection at rest")
		assert.Equal(t, messages.Stats{}, rt.Stats())

		require.NoError(t, server.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":99,"result":{}}`)))
		synctest.Wait()
		require.NotNil(t, rt.m.sh.activity.Load(), "after a count")
		assert.Equal(t, messages.Stats{UnknownResponses: 1}, rt.Stats())
	})
}
