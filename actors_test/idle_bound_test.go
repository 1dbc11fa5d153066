package actors_test

import (
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit"
)

// idleBounds are what an idle client over an in-memory pair may hold: its
// live heap after a collection, both sides of the pipe included (the
// server side is a struct: its goroutine has returned), and its goroutine
// stacks: one reader's 2 KB, and the share of the stack spans the
// handshake's goroutines left. Decision 60 brought the heap from
// 7.05–7.3 KB to 5.5–5.6 KB a connection (400 connections), its second pass
// to 5.32–5.66 KB (5.64–5.67 KB under -race), decision 74's to 4.96–5.21
// KB (5.01–5.24 KB under -race), decision 75's (the call tracker and the
// counters out of every connection's runtime, the Client a size class
// smaller) to 4.94–5.02 KB (4.75–5.26 KB under -race); the bound leaves room for the measure's
// noise, not for a kept timer or a struct of a few hundred bytes more.
// Under the race detector objects and stacks are larger: its bounds are
// its own.
func idleBounds() (heap, stack int64) {
	if raceEnabled {
		return 5632, 8 << 10
	}
	return 5376, 3584
}

// An idle connection costs no more than idleBounds: n clients connected in
// a synctest bubble (so that the dispatcher's workers have ended before
// the measure), heap and stacks from runtime.MemStats relative to before
// the first of them, over n.
func TestIdleConnectionStaysUnderItsBound(t *testing.T) {
	const n = 400
	synctest.Test(t, func(t *testing.T) {
		_, closeIt := idleClient(t, conduit.Options{}) // what is made once per process
		closeIt()
		idle()
		before := memStats()
		closers := make([]func(), 0, n)
		for range n {
			_, closeIt := idleClient(t, conduit.Options{})
			closers = append(closers, closeIt)
		}
		idle()
		after := memStats()
		heap := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
		stack := (int64(after.StackInuse) - int64(before.StackInuse)) / n
		t.Logf("%d idle connections: %d B of heap and %d B of stack each", n, heap, stack)
		maxHeap, maxStack := idleBounds()
		assert.LessOrEqual(t, heap, maxHeap, "heap per idle connection")
		assert.LessOrEqual(t, stack, maxStack, "stack per idle connection")
		for _, closeIt := range closers {
			closeIt()
		}
		synctest.Wait()
	})
}

// memStats is runtime.MemStats after a collection.
func memStats() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
