package actors

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// An idle worker takes the next activation: no new goroutine per
// activation while one is idle; and it exits within two workerIdle
// periods without work.
func TestDispatcherReusesAnIdleWorkerThenExits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		base := testpeer.BubbleGoroutines(t)
		ran := make(chan int, 1)
		for i := range 3 {
			d.Schedule(func() { ran <- i })
			require.Equal(t, i, <-ran)
			synctest.Wait()
			assert.Equal(t, base+1, testpeer.BubbleGoroutines(t), "one worker, activation %d", i)
		}
		time.Sleep(2 * workerIdle)
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "the idle worker exited")
		d.close()
	})
}

// An activation that blocks holds up only its own worker: the next one
// runs on a new worker meanwhile.
func TestDispatcherRunsBesideABlockedActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		release, second := make(chan struct{}), make(chan struct{})
		d.Schedule(func() { <-release })
		d.Schedule(func() { close(second) })
		<-second
		close(release)
		d.close()
	})
}

// Once closed, idle workers exit at once, and a later activation still
// runs.
func TestDispatcherCloseEndsItsWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		base := testpeer.BubbleGoroutines(t)
		ran := make(chan struct{}, 1)
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		synctest.Wait()
		require.Equal(t, base+1, testpeer.BubbleGoroutines(t))
		d.close()
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "no sleep: the worker left on close")
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t))
	})
}

// Workers exit once a whole workerIdle has passed without an activation:
// one more activation before the timer fires keeps them a period more.
func TestDispatcherWorkersIdleFromTheLastActivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		base := testpeer.BubbleGoroutines(t)
		ran := make(chan struct{}, 1)
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		time.Sleep(workerIdle / 2)
		synctest.Wait()
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		time.Sleep(workerIdle) // the timer fired at workerIdle and saw an activation
		synctest.Wait()
		assert.Equal(t, base+1, testpeer.BubbleGoroutines(t), "an activation in the last period: still there")
		time.Sleep(workerIdle / 2) // the timer fires at 2 × workerIdle and sees none
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "a whole period without one: gone")
	})
}

// A worker busy when the others are reaped is not told to end; it ends
// within workerIdle once it is idle, and the timer stops with the last
// worker.
func TestDispatcherBusyWorkerEndsOnceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		base := testpeer.BubbleGoroutines(t)
		release, ran := make(chan struct{}), make(chan struct{}, 1)
		d.Schedule(func() { <-release })
		d.Schedule(func() { ran <- struct{}{} })
		<-ran
		time.Sleep(5 * workerIdle)
		synctest.Wait()
		assert.Equal(t, base+1, testpeer.BubbleGoroutines(t), "the idle worker ended, the busy one runs on")
		close(release)
		time.Sleep(workerIdle)
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "idle now: ended at the next reap")
		d.mu.Lock()
		defer d.mu.Unlock()
		assert.Zero(t, d.workers)
		assert.Nil(t, d.reaper, "no timer kept once no worker is left")
	})
}

// A burst of activations runs on at most max workers: the rest wait in
// the dispatcher's queue for the next worker that is free, and all run.
func TestDispatcherBurstRunsOnBoundedWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		d.max = 2
		base := testpeer.BubbleGoroutines(t)
		// The activations wait for start, so that a worker cannot finish
		// one and take the next Schedule as idle before all are queued.
		start := make(chan struct{})
		var ran [10]bool
		for i := range ran {
			d.Schedule(func() { <-start; ran[i] = true })
		}
		assert.Equal(t, base+2, testpeer.BubbleGoroutines(t), "two workers for ten activations")
		close(start)
		synctest.Wait()
		assert.Equal(t, [10]bool{true, true, true, true, true, true, true, true, true, true}, ran)
		d.mu.Lock()
		assert.Equal(t, int32(2), d.workers)
		assert.Equal(t, uint64(8), d.taken, "eight taken from the queue")
		d.mu.Unlock()
	})
}

// When every worker is stuck in an activation, a queued one runs on one
// more worker, past the bound, once a whole workerIdle has passed with
// none taken: a blocked Receive delays the others, never holds them.
func TestDispatcherStartsAWorkerPastStuckOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		d.max = 1
		release, second := make(chan struct{}), make(chan struct{})
		d.Schedule(func() { <-release })
		d.Schedule(func() { close(second) })
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("the queued activation ran beside the stuck one before workerIdle")
		default:
		}
		time.Sleep(workerIdle)
		<-second
		d.mu.Lock()
		assert.Equal(t, int32(2), d.workers, "one past the bound")
		d.mu.Unlock()
		close(release)
	})
}

// The connection actor's activation goes ahead of the queued ones: every
// request and answer passes through it, and behind a burst's children it
// would hold them all.
func TestDispatcherRunsTheConnectionsActivationFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		d.max = 1
		var order []string
		release := make(chan struct{})
		d.Schedule(func() { <-release }) // the one worker is busy
		d.Schedule(func() { order = append(order, "child1") })
		d.Schedule(func() { order = append(order, "child2") })
		conn := (&msgQueue{}).init()
		conn.first = true
		conn.RegisterHandlers(invokerFunc(func(m any) { order = append(order, m.(string)) }), d)
		conn.PostUserMessage("conn")
		other := (&msgQueue{}).init() // another actor's: queued in order
		other.RegisterHandlers(invokerFunc(func(m any) { order = append(order, m.(string)) }), d)
		other.PostUserMessage("mailbox")
		close(release)
		synctest.Wait()
		assert.Equal(t, []string{"conn", "child1", "child2", "mailbox"}, order)
	})
}

// The connection actor starts connectionChunk children, then lets them
// run before it takes more messages; a reply posted meanwhile is its first
// message when it runs again. Messages that start no child are taken in
// one go.
func TestTheConnectionYieldsToTheChildrenItStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDispatcher()
		defer d.close()
		d.max = 1 // one worker: the order is the dispatcher's
		var order []string
		conn := (&msgQueue{}).init()
		conn.first = true
		conn.RegisterHandlers(invokerFunc(func(m any) {
			order = append(order, m.(string))
			var n int
			if _, err := fmt.Sscanf(m.(string), "frame%d", &n); err == nil {
				d.Schedule(func() { // as request.start does
					order = append(order, fmt.Sprint("child", n))
					if n == 2 {
						conn.PostUrgent("reply2")
					}
				})
				conn.started++
			}
		}), d)
		n := connectionChunk + 4
		for i := range n {
			conn.PostUserMessage(fmt.Sprint("frame", i))
		}
		synctest.Wait()
		var want []string
		for i := range connectionChunk {
			want = append(want, fmt.Sprint("frame", i))
		}
		for i := range connectionChunk {
			want = append(want, fmt.Sprint("child", i))
		}
		want = append(want, "reply2")
		for i := connectionChunk; i < n; i++ {
			want = append(want, fmt.Sprint("frame", i))
		}
		for i := connectionChunk; i < n; i++ {
			want = append(want, fmt.Sprint("child", i))
		}
		assert.Equal(t, want, order)

		order, want = nil, nil
		release := make(chan struct{})
		d.Schedule(func() { <-release }) // the one worker is busy
		for i := range n {
			conn.PostUserMessage(fmt.Sprint("note", i))
			want = append(want, fmt.Sprint("note", i))
		}
		d.Schedule(func() { order = append(order, "other") })
		close(release)
		synctest.Wait()
		assert.Equal(t, append(want, "other"), order, "no child started: no yield")
	})
}

// A runtime's connection actor has the mailbox the dispatcher runs first;
// the notification mailbox's producer makes one that queues in order.
func TestTheConnectionsMailboxIsTheFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := transport.NewMemoryPair()
		defer server.Close()
		rt := Start(Config{Conn: client})
		defer rt.Close()
		assert.True(t, rt.m.conn.queue.first)
		assert.False(t, newMsgQueue().(*msgQueue).first)
	})
}
