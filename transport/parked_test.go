package transport

import (
	"context"
	"log/slog"
	"runtime"
	"testing"
)

// An idle stdio connection holds no read buffer: its stdout and stderr
// readers wait for the next bytes in a small buffer and give the 64 KB and
// 8 KB ones they read the last burst through back to their pools (decision
// 60). n connections that each
// answered one message keep well under one such buffer apiece (heap after
// two collections, which empty the pool, relative to before them).
func TestStdioIdleConnectionHoldsNoReadBuffer(t *testing.T) {
	const n = 16
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	ctx := context.Background()
	for range n {
		c := startHelper(t, "echo", Command{Logger: slog.New(slog.DiscardHandler)}) // stderr read too
		if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"ping"}`)); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, c); got != `{"jsonrpc":"2.0","method":"ping"}` {
			t.Fatalf("echo = %q", got)
		}
	}
	per := (heap() - before) / n
	t.Logf("%d idle stdio connections: %d B of heap each", n, per)
	if per > 16<<10 {
		t.Errorf("an idle stdio connection holds %d B of heap; its read buffer (%d B) should be back in the pool", per, stdoutBufSize)
	}
}
