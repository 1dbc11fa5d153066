package actors

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
	"github.com/conduitmcp/conduit/transport"
)

// A request child is one allocation per server request, live for as long
// as its handler runs: a burst of a thousand holds a thousand. Above 512
// bytes an object with pointers carries an 8-byte malloc header, so the
// struct must stay at or under 888 bytes to take the 896-byte size class
// rather than the 1 024-byte one (decision 59).
func TestRequestChildFitsItsSizeClass(t *testing.T) {
	const sizeClass, mallocHeader = 896, 8
	if got := unsafe.Sizeof(request{}); got+mallocHeader > sizeClass {
		t.Fatalf("request is %d bytes: with its malloc header it no longer fits the %d-byte size class", got, sizeClass)
	}
}

// A reply or a failure counts once, from a child still running: an earlier
// child of a reused id, released at its crash, is ignored, and the child
// that holds the id now keeps it, its slot and its input's pause.
func TestAChildsReplyCountsOnlyWhileItRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		id := messages.IntID(5)
		rc := &recordingConn{}
		sh := &shared{ctx: context.Background(), rt: &Runtime{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}}
		c := &connection{shared: sh, writer: startWriter(rc, DefaultMaxWriteQueueBytes, func(error) {}), slots: supervisor.Cap{Max: 2}}
		start := func() *request {
			r := &request{}
			r.in.guard.Context.RequestID = id
			require.True(t, c.slots.Acquire())
			c.trk().inputStarted(&r.tracked, id, "", "", time.Minute)
			c.running = map[messages.ID]*request{id: r}
			return r
		}
		old := start()
		c.childFailed(old, "boom")
		now := start()
		c.childDone(old, []byte(`{"jsonrpc":"2.0","id":5,"result":{}}`))
		c.childFailed(old, "again")
		assert.Same(t, now, c.running[id], "a stale child released the running one")
		assert.Equal(t, 1, c.slots.Running)
		assert.Equal(t, []*trackedInput{&now.tracked}, c.tracker.inputs, "a stale child ended the running one's input")
		c.childDone(now, []byte(`{"jsonrpc":"2.0","id":5,"result":{}}`))
		c.childDone(now, []byte(`{"jsonrpc":"2.0","id":5,"result":{"twice":true}}`))
		assert.Empty(t, c.running)
		assert.Zero(t, c.slots.Running)
		assert.Empty(t, c.tracker.inputs)
		<-c.writer.close()
		assert.Equal(t, []string{
			`{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error: input request failed"}}`,
			`{"jsonrpc":"2.0","id":5,"result":{}}`,
		}, rc.written)
		c.tracker.stop()
	})
}

// A request child that panics (a bug of Conduit's: a handler's panic is
// its outcome) reaches its connection as childFailed and takes no more
// messages; the connection answers the request -32603 and frees its slot.
func TestAChildsPanicIsAnsweredInternalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		id := messages.IntID(7)
		rc := &recordingConn{}
		sh := &shared{ctx: context.Background(), rt: &Runtime{cfg: Config{Logger: slog.New(slog.DiscardHandler)}}}
		c := &connection{shared: sh, dispatch: newDispatcher(), writer: startWriter(rc, DefaultMaxWriteQueueBytes, func(error) {})}
		c.slots = supervisor.Cap{Max: 1, Running: 1}
		var got []any
		c.queue.init().RegisterHandlers(invokerFunc(func(m any) { got = append(got, m) }), c.dispatch)

		r := &request{} // no pipeline: its start dereferences nil, as a bug would
		r.in.guard.Context.RequestID = id
		c.running = map[messages.ID]*request{id: r}
		r.start(c)
		synctest.Wait()
		require.Len(t, got, 1)
		failed, ok := got[0].(*childFailed)
		require.True(t, ok, "the connection got %T", got[0])
		assert.Same(t, r, failed.child)
		assert.Contains(t, fmt.Sprint(failed.reason), "nil pointer")

		r.post(&cancelInput{reason: "late"}) // taken by nobody: the child has failed
		synctest.Wait()
		assert.Len(t, got, 1)

		c.childFailed(failed.child, failed.reason)
		assert.Empty(t, c.running)
		assert.Zero(t, c.slots.Running)
		<-c.writer.close()
		assert.Equal(t, []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error: input request failed"}}`}, rc.written)
		c.dispatch.close()
	})
}

// invokerFunc is an actor.MessageInvoker that gives every user message to f.
type invokerFunc func(any)

func (f invokerFunc) InvokeUserMessage(m any)      { f(m) }
func (f invokerFunc) InvokeSystemMessage(any)      {}
func (f invokerFunc) EscalateFailure(r any, _ any) { panic(r) }

// A child that panics while its handler runs ends its input as a
// cancellation would: the handler's ctx is cancelled and the handler,
// still running, is counted as abandoned until it returns.
func TestAFailedChildAbandonsItsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := transport.NewMemoryPair()
		defer server.Close()
		release := make(chan struct{})
		var seen error
		roots := func(ctx context.Context, _ *messages.RootsRequest) (*messages.ListRootsResult, error) {
			<-ctx.Done()
			seen = ctx.Err()
			<-release
			return &messages.ListRootsResult{}, nil
		}
		rt := Start(Config{Conn: client, Handlers: messages.Handlers{Roots: roots}})
		defer rt.Close()

		c := &connection{shared: &rt.m.sh, dispatch: newDispatcher()}
		var got []any
		c.queue.init().RegisterHandlers(invokerFunc(func(m any) { got = append(got, m) }), c.dispatch)
		r := &request{}
		r.in.init(c.shared, guards.Input{Method: messages.MethodListRoots, ParamsValid: true, Version: messages.Version20251125,
			Context: messages.RequestContext{Era: messages.EraLegacy, RequestID: messages.IntID(3)}}, "", time.Hour)
		r.start(c)
		synctest.Wait() // the handler waits for its ctx
		require.Empty(t, got)

		r.post((*handlerDone)(nil)) // a bug: the child dereferences nil
		synctest.Wait()
		require.Len(t, got, 1)
		assert.IsType(t, &childFailed{}, got[0])
		assert.ErrorIs(t, seen, context.Canceled, "the handler's ctx was not cancelled")
		assert.EqualValues(t, 1, rt.Stats().AbandonedHandlers)

		close(release)
		synctest.Wait()
		assert.Zero(t, rt.Stats().AbandonedHandlers, "the handler has returned")
		assert.Len(t, got, 1, "its outcome reached nobody")
		c.dispatch.close()
	})
}

// A child's reply and a child's failure reach the connection ahead of the
// frames queued before them: each ends a request (its slot, its pause,
// its answer), which behind a burst's frames would wait for all of them.
func TestAChildsReplyGoesAheadOfQueuedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, got, release := heldConnection()
		defer c.dispatch.close()
		frame := &inbound{}
		c.queue.PostUserMessage(frame)
		replied, failed := &request{conn: c}, &request{conn: c}
		replied.reply(outcome{ending: answered, raw: []byte("{}")})
		failed.EscalateFailure("boom", nil)
		close(release)
		synctest.Wait()
		require.Len(t, *got, 3)
		assert.Same(t, &replied.replied, (*got)[0])
		assert.IsType(t, &childFailed{}, (*got)[1])
		assert.Same(t, frame, (*got)[2])
	})
}

// A child's start counts toward its connection's yield to its children
// (msgQueue.yieldToChildren), before the child can run.
func TestAChildsStartCountsTowardItsConnectionsYield(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, got, release := heldConnection() // the children wait for the one worker
		defer c.dispatch.close()
		(&request{}).start(c)
		(&request{}).start(c)
		assert.EqualValues(t, 2, c.queue.started)
		close(release)
		synctest.Wait() // both fail (no pipeline), and the connection hears it
		assert.Len(t, *got, 2)
	})
}

// heldConnection is a connection whose mailbox records what it is handed
// (first, as connProps makes it), on a dispatcher of one worker held busy
// until release is closed. Call it inside a synctest bubble.
func heldConnection() (c *connection, got *[]any, release chan struct{}) {
	c = &connection{dispatch: newDispatcher()}
	c.dispatch.max = 1
	got = new([]any)
	q := c.queue.init()
	q.first = true
	q.RegisterHandlers(invokerFunc(func(m any) { *got = append(*got, m) }), c.dispatch)
	release = make(chan struct{})
	c.dispatch.Schedule(func() { <-release })
	return c, got, release
}
