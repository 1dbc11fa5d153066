package actors_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// BenchmarkIdleConnections connects n clients, one after the other, each
// to its own handshakeOnly server over an in-memory pair, and reports what
// an idle connection costs once connected: heap + stack bytes (after GC),
// goroutines, and the time of a connect. Conduit uses the default Connect
// (the shared actor system, made by a first connection before the
// measure); the go-sdk v1.8.0 client runs over the same pipe through
// memTransport. Run it once per size:
//
//	go test -run '^$' -bench BenchmarkIdleConnections -benchtime 1x ./actors_test/
func BenchmarkIdleConnections(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("conduit/n%d", n), func(b *testing.B) {
			benchIdle(b, n, func(b *testing.B) func() {
				_, closeIt := idleClient(b, conduit.Options{})
				return closeIt
			})
		})
		b.Run(fmt.Sprintf("gosdk/n%d", n), func(b *testing.B) {
			benchIdle(b, n, idleGosdkClient)
		})
	}
}

func benchIdle(b *testing.B, n int, connect func(*testing.B) (close func())) {
	connect(b)() // what is made once per process
	for range b.N {
		closers := make([]func(), 0, n)
		b.StopTimer()
		before, goroutines := memInUse(), runtime.NumGoroutine()
		b.StartTimer()
		start := time.Now()
		for range n {
			closers = append(closers, connect(b))
		}
		elapsed := time.Since(start)
		b.StopTimer()
		after := memInUse()
		b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/float64(n), "B/conn")
		b.ReportMetric(float64(after.stack-before.stack)/float64(n), "stack-B/conn")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(n), "goroutines/conn")
		b.ReportMetric(float64(elapsed.Microseconds())/float64(n), "µs/connect")
		for _, closeIt := range closers {
			closeIt()
		}
		b.StartTimer()
	}
}

// memInUse is the live heap and the goroutine stacks in use, after a
// collection.
func memInUse() (m struct{ heap, stack int64 }) {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.heap, m.stack = int64(s.HeapAlloc), int64(s.StackInuse)
	return m
}

// idleGosdkClient connects a go-sdk client to a handshakeOnly server over
// an in-memory pair, at 2025-11-25.
func idleGosdkClient(b *testing.B) func() {
	clientSide, serverSide := transport.NewMemoryPair()
	served := make(chan error, 1)
	go func() { served <- handshakeOnly(serverSide) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-idle", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), memTransport{clientSide}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(b, err)
	require.NoError(b, <-served)
	return func() {
		_ = session.Close()
		_ = serverSide.Close()
	}
}
