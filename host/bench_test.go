package host

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// BenchmarkCall is one tools/call of test_simple_text on the
// everything-server (stdio), through the host and through a bare client:
// the difference is the host's overhead per call.
func BenchmarkCall(b *testing.B) {
	bin, err := testpeer.EverythingServer()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		c, err := conduit.Connect(ctx, &transport.Command{Path: bin}, conduit.Options{Era: conduit.EraLegacy})
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		for b.Loop() {
			if _, err := c.CallTool(ctx, "test_simple_text", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("host", func(b *testing.B) {
		b.ReportAllocs()
		h, err := New(Config{Servers: map[string]Server{"every": {Command: bin, Conduit: Settings{Era: conduit.EraLegacy}}}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		// The server starts in the background: the first call waits for it.
		if _, err := h.CallTool(ctx, "every", "test_simple_text", nil); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := h.CallTool(ctx, "every", "test_simple_text", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRestart is the time from a server's SIGKILL to its being ready
// again (a new process, the handshake, tools/list), with a 1 ms backoff:
// the supervision's own latency. It reports the p50 and p99.
func BenchmarkRestart(b *testing.B) {
	bin, err := testpeer.EverythingServer()
	if err != nil {
		b.Fatal(err)
	}
	policy := RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Intensity: 1 << 30, Period: time.Hour}
	h, err := New(Config{Servers: map[string]Server{"every": {Command: bin, Conduit: Settings{Era: conduit.EraLegacy, Restart: policy}}}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	events, cancel := h.Subscribe()
	defer cancel()
	next := func(state State) {
		for ev := range events {
			if ev.State == state {
				return
			}
		}
	}
	next(StateReady)
	var took []time.Duration
	for b.Loop() {
		pid := childPID(b, bin)
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		next(StateReady)
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}
