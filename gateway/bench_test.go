package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/load"
	"github.com/conduitmcp/conduit/transport"
	"golang.org/x/time/rate"
)

// BenchmarkThroughput is the gateway check's throughput load (conduit
// load --era legacy --sessions 2 --concurrency 8 test_simple_text) run in
// process: through the gateway (the everything-server behind it over
// stdio, legacy, "prefix": false) and straight to the everything-server's
// own HTTP endpoint (stateful, as the check runs it). One op is one call;
// calls/s is reported. gateway-floor holds the 32 MB floor under the
// collector's target that conduit gateway holds (gcFloor); the load's
// clients run in this process too, so they share the floor and the cores.
func BenchmarkThroughput(b *testing.B) {
	bin, err := testpeer.EverythingServer()
	if err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, url string) {
		b.ReportAllocs()
		rep, err := load.Run(context.Background(), load.Config{
			Transport: &transport.HTTP{URL: url}, Options: conduit.Options{Era: conduit.EraLegacy},
			Sessions: 2, Concurrency: 8, Calls: b.N, Mix: []load.Call{{Tool: "test_simple_text"}},
		})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Failed != 0 {
			b.Fatalf("%d calls of %d failed", rep.Failed, rep.Calls)
		}
		b.ReportMetric(rep.Throughput, "calls/s")
	}
	gw := func(b *testing.B, floor bool) {
		if floor {
			ballast := make([]byte, 32<<20) // conduit gateway's gcFloor (cmd/conduit/gateway.go)
			defer runtime.KeepAlive(ballast)
		}
		cfg := host.Config{Servers: map[string]host.Server{"every": {Command: bin, Conduit: host.Settings{Era: conduit.EraLegacy, NoPrefix: true}}}}
		g, err := New(cfg, Options{})
		if err != nil {
			b.Fatal(err)
		}
		url, stop := serveForBench(b, g)
		defer stop()
		run(b, url)
	}
	b.Run("gateway", func(b *testing.B) { gw(b, false) })
	b.Run("gateway-floor", func(b *testing.B) { gw(b, true) })
	b.Run("direct", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin, "-http", addr, "-stateless=false")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			if i == 200 {
				b.Fatal(fmt.Errorf("everything-server did not listen: %w", err))
			}
			time.Sleep(25 * time.Millisecond)
		}
		run(b, "http://"+addr+"/mcp")
	})
}

// BenchmarkMRTRElicitation is an MRTR elicitation tool
// (test_input_required_result_elicitation: one input_required round, then
// the result) under the same load shape, modern era end to end: through
// the gateway (the everything-server behind it over stdio, pinned modern,
// so not gated) and straight to the everything-server's own stateless HTTP
// endpoint. One op is one call (two requests each); calls/s is reported.
func BenchmarkMRTRElicitation(b *testing.B) {
	bin, err := testpeer.EverythingServer()
	if err != nil {
		b.Fatal(err)
	}
	opts := conduit.Options{Era: conduit.EraModern, Handlers: conduit.Handlers{
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "bench"}}, nil
		},
	}}
	run := func(b *testing.B, url string) {
		b.ReportAllocs()
		rep, err := load.Run(context.Background(), load.Config{
			Transport: &transport.HTTP{URL: url}, Options: opts,
			Sessions: 2, Concurrency: 8, Calls: b.N, UnlimitedInput: true,
			Mix: []load.Call{{Tool: "test_input_required_result_elicitation"}},
		})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Failed != 0 {
			b.Fatalf("%d calls of %d failed", rep.Failed, rep.Calls)
		}
		b.ReportMetric(rep.Throughput, "calls/s")
	}
	b.Run("gateway", func(b *testing.B) {
		cfg := host.Config{Servers: map[string]host.Server{"every": {Command: bin, Conduit: host.Settings{Era: conduit.EraModern, NoPrefix: true}}}}
		// The upstream's input budget lifted too, as the load's is: the
		// figure is the relay's, not the budget's.
		ho := host.Options{}
		ho.Client.InputRateLimit, ho.Client.InputBurst = rate.Inf, 0
		g, err := New(cfg, Options{Host: ho})
		if err != nil {
			b.Fatal(err)
		}
		url, stop := serveForBench(b, g)
		defer stop()
		run(b, url)
	})
	b.Run("direct", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		cmd := exec.Command(bin, "-http", addr)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			if i == 200 {
				b.Fatal(fmt.Errorf("everything-server did not listen: %w", err))
			}
			time.Sleep(25 * time.Millisecond)
		}
		run(b, "http://"+addr+"/mcp")
	})
}

// serveForBench serves g over HTTP once its server is ready, and returns
// the URL and what stops both (each run of a benchmark function stops its
// own before the next starts).
func serveForBench(b *testing.B, g *Gateway) (string, func()) {
	b.Helper()
	events, cancel := g.Host().Subscribe()
	for ev := range events {
		if ev.State == host.StateReady {
			break
		}
		if ev.State == host.StateParked {
			b.Fatalf("server parked: %v", ev.Err)
		}
	}
	cancel()
	g.Sync()
	srv := httptest.NewServer(g.Handler(HTTPOptions{}))
	return srv.URL, func() {
		srv.CloseClientConnections()
		srv.Close()
		_ = g.Close()
	}
}
