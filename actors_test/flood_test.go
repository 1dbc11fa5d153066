package actors_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// logEntry is a notifications/message frame carrying i.
func logEntry(i int) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":` + strconv.Itoa(i) + `}}`)
}

// flood connects a client with h and the log limit lifted, then writes n
// log entries at once from the server's side (the memory pipe never
// blocks a writer). It returns the client and the server's end; the test
// closes both.
func flood(t *testing.T, h conduit.Handlers, n int) (*conduit.Client, transport.Conn) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	served := make(chan error, 1)
	go func() { served <- handshakeOnly(serverSide) }()
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{Handlers: h, LogRateLimit: rate.Inf})
	require.NoError(t, err)
	require.NoError(t, <-served)
	ctx := context.Background()
	for i := range n {
		require.NoError(t, serverSide.Write(ctx, logEntry(i)))
	}
	return c, serverSide
}

// entryIndex is the i of logEntry(i), from a delivered entry.
func entryIndex(e *conduit.LoggingMessage) int64 {
	i, _ := strconv.ParseInt(fmt.Sprint(e.Data), 10, 64)
	return i
}

// With the log limit lifted, a flood of 100 000 entries written at once is
// delivered in order, and every entry is delivered or counted as dropped:
// nothing is lost uncounted. How many are dropped depends on how the
// scheduler shares the cores between the flood and the handler (on a
// loaded machine even half can be), so the share delivered is measured by
// BenchmarkLogFlood (docs/benchmarks.md), not asserted here.
func TestLogFloodIsDeliveredInOrderAndCounted(t *testing.T) {
	const n = 100_000
	synctest.Test(t, func(t *testing.T) {
		var delivered, outOfOrder atomic.Int64
		last := int64(-1)
		h := conduit.Handlers{Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
			i := entryIndex(e)
			if i <= last {
				outOfOrder.Add(1)
			}
			last = i // one callback at a time: no lock needed
			delivered.Add(1)
		}}
		c, server := flood(t, h, n)
		synctest.Wait()
		s := c.Stats()
		require.NoError(t, c.Close())
		require.NoError(t, server.Close())
		assert.EqualValues(t, n, delivered.Load()+s.NotificationsDropped, "delivered + dropped")
		assert.Positive(t, delivered.Load(), "delivered")
		assert.Zero(t, outOfOrder.Load(), "entries out of order")
		assert.Zero(t, s.LogsDropped, "rate limited")
		assert.Zero(t, s.NotificationsDiscarded, "discarded")
		assert.Zero(t, s.NotificationHandlerPanics, "panics")
		t.Logf("%d delivered, %d dropped", delivered.Load(), s.NotificationsDropped)
	})
}

// A flood that never has more than the queue's bound waiting (written 500
// at a time, each batch handled before the next) is delivered whole, in
// order: the bound drops only what is beyond it.
func TestLogFloodWithinTheBoundIsDeliveredWhole(t *testing.T) {
	const n, batch = 20_000, 500
	synctest.Test(t, func(t *testing.T) {
		var delivered, outOfOrder atomic.Int64
		last := int64(-1)
		h := conduit.Handlers{Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
			if i := entryIndex(e); i <= last {
				outOfOrder.Add(1)
			} else {
				last = i
			}
			delivered.Add(1)
		}}
		c, server := flood(t, h, 0)
		ctx := context.Background()
		for i := range n {
			require.NoError(t, server.Write(ctx, logEntry(i)))
			if (i+1)%batch == 0 {
				synctest.Wait() // the batch is handled
			}
		}
		synctest.Wait()
		s := c.Stats()
		require.NoError(t, c.Close())
		require.NoError(t, server.Close())
		assert.EqualValues(t, n, delivered.Load(), "delivered")
		assert.Zero(t, s.NotificationsDropped, "dropped")
		assert.Zero(t, outOfOrder.Load(), "entries out of order")
	})
}

// A handler slower than the flood fills the queue to its bound: exactly
// one entry in its hands and 1 000 waiting are delivered, every other one
// is dropped and counted.
func TestLogFloodFillsTheQueueWhenTheHandlerIsSlower(t *testing.T) {
	const n = 5_000
	synctest.Test(t, func(t *testing.T) {
		var delivered atomic.Int64
		h := conduit.Handlers{Log: func(context.Context, conduit.NotificationContext, *conduit.LoggingMessage) {
			time.Sleep(time.Millisecond) // the bubble's clock moves only once the flood is in
			delivered.Add(1)
		}}
		c, server := flood(t, h, n)
		synctest.Wait()
		time.Sleep(2 * time.Second) // the queue drains
		synctest.Wait()
		s := c.Stats()
		require.NoError(t, c.Close())
		require.NoError(t, server.Close())
		assert.EqualValues(t, 1001, delivered.Load(), "delivered")
		assert.EqualValues(t, n-1001, s.NotificationsDropped, "dropped")
		assert.Zero(t, s.Malformed)
		assert.Zero(t, s.NotificationHandlerPanics)
	})
}

// BenchmarkLogFlood writes b.N log entries at once (log limit lifted) to a
// client whose handler only counts them, and reports the share delivered
// and the entries handled per second, from the first write until the last
// entry is delivered or dropped.
//
//	go test -run '^$' -bench BenchmarkLogFlood -benchtime 100000x ./actors_test/
func BenchmarkLogFlood(b *testing.B) {
	var delivered atomic.Int64
	h := conduit.Handlers{Log: func(context.Context, conduit.NotificationContext, *conduit.LoggingMessage) { delivered.Add(1) }}
	clientSide, serverSide := transport.NewMemoryPair()
	served := make(chan error, 1)
	go func() { served <- handshakeOnly(serverSide) }()
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{Handlers: h, LogRateLimit: rate.Inf})
	require.NoError(b, err)
	require.NoError(b, <-served)
	defer serverSide.Close()
	defer c.Close()
	entries := make([][]byte, b.N)
	for i := range entries {
		entries[i] = logEntry(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for _, e := range entries {
		if err := serverSide.Write(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	for delivered.Load()+c.Stats().NotificationsDropped < int64(b.N) {
		time.Sleep(50 * time.Microsecond) // a benchmark may poll; tests use synctest
	}
	b.StopTimer()
	b.ReportMetric(100*float64(delivered.Load())/float64(b.N), "%delivered")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
