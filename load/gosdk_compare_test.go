package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/load"
	"github.com/conduitmcp/conduit/transport"
)

// acceptAda answers the everything-server's MRTR form.
func acceptAda(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"name": "Ada"}}, nil
}

// The everything-server's legacy sampling tool and modern MRTR tool: the
// report's counts are the calls made and the audit records.
func TestEverythingServer(t *testing.T) {
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	for name, c := range map[string]struct {
		opts   conduit.Options
		tool   string
		args   json.RawMessage
		method string
	}{
		"legacy sampling": {conduit.Options{Era: conduit.EraLegacy}, "test_sampling", json.RawMessage(`{"prompt": "p{{n}}"}`), "sampling/createMessage"},
		"modern mrtr":     {conduit.Options{Era: conduit.EraModern}, "test_input_required_result_elicitation", nil, "elicitation/create"},
	} {
		t.Run(name, func(t *testing.T) {
			var audited atomic.Int64
			c.opts.Handlers = sampler(load.Fixed(time.Millisecond))
			c.opts.Handlers.Elicitation = acceptAda
			c.opts.Audit = func(conduit.AuditRecord) { audited.Add(1) }
			rep, err := load.Run(context.Background(), load.Config{
				Transport: &transport.Command{Path: bin},
				Options:   c.opts,
				Sessions:  3, Concurrency: 4, Calls: 60, UnlimitedInput: true,
				Mix: []load.Call{{Tool: c.tool, Args: c.args}},
			})
			require.NoError(t, err)
			assert.Equal(t, int64(60), rep.Calls)
			assert.Equal(t, map[string]int64{"ok": 60}, rep.Outcomes)
			assert.Equal(t, int64(60), audited.Load())
			assert.Equal(t, map[string]map[string]int64{c.method: {"answered": 60}}, rep.Input)
			require.Len(t, rep.Servers, 3)
			for _, s := range rep.Servers {
				assert.Equal(t, "everything-serv", s.Name)
				assert.Positive(t, s.PeakRSSBytes)
			}
			// Every call paused at least the 1 ms of its sampling delay
			// (legacy: partly not tied to one call).
			if c.method == "sampling/createMessage" {
				assert.GreaterOrEqual(t, time.Duration(rep.Time.PausedForInput+rep.Time.UnattributedInput), 60*time.Millisecond)
			}
		})
	}
}

// TestCompareWithGoSDK runs the same load through Conduit and through the
// go-sdk client, one after the other against the same server binary, and
// prints both side by side: Conduit's own overhead. It is a measurement,
// not a check: set CONDUIT_LOAD_COMPARE=1 to run it.
//
//	CONDUIT_LOAD_COMPARE=1 go test -run TestCompareWithGoSDK -v ./load/
func TestCompareWithGoSDK(t *testing.T) {
	if os.Getenv("CONDUIT_LOAD_COMPARE") == "" {
		t.Skip("set CONDUIT_LOAD_COMPARE=1 to measure")
	}
	const sessions, concurrency, calls = 4, 8, 2000
	const tool = "test_input_required_result_elicitation"
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	ctx := context.Background()

	rep, err := load.Run(ctx, load.Config{
		Transport: &transport.Command{Path: bin},
		Options:   conduit.Options{Handlers: conduit.Handlers{Elicitation: acceptAda}},
		Sessions:  sessions, Concurrency: concurrency, Calls: calls, UnlimitedInput: true,
		Mix: []load.Call{{Tool: tool}},
	})
	require.NoError(t, err)
	require.Equal(t, int64(calls), rep.OK)

	sdk := goSDKLoad(t, bin, sessions, concurrency, calls, tool)

	fmt.Printf("%d sessions × %d callers, %d calls of %s, closed loop\n", sessions, concurrency, calls, tool)
	fmt.Printf("%-8s %10s %9s %9s %9s %9s %9s\n", "client", "calls/s", "p50", "p90", "p99", "p99.9", "max")
	l := rep.Latency
	fmt.Printf("%-8s %10.1f %9s %9s %9s %9s %9s\n", "conduit", rep.Throughput, l.P50, l.P90, l.P99, l.P999, l.Max)
	fmt.Printf("%-8s %10.1f %9s %9s %9s %9s %9s\n", "go-sdk", sdk.rate, sdk.p50, sdk.p90, sdk.p99, sdk.p999, sdk.max)
}

type sdkResult struct {
	rate                     float64
	p50, p90, p99, p999, max time.Duration
}

// goSDKLoad is the same closed-loop load through go-sdk ClientSessions,
// which answer the MRTR rounds themselves through ElicitationHandler.
func goSDKLoad(t *testing.T, bin string, sessions, concurrency, calls int, tool string) sdkResult {
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-load", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	var css []*mcp.ClientSession
	for range sessions {
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
		require.NoError(t, err)
		css = append(css, cs)
	}
	defer func() {
		for _, cs := range css {
			_ = cs.Close()
		}
	}()
	hist := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	var mu sync.Mutex
	var next, failed atomic.Int64
	var last time.Time
	start := time.Now()
	var wg sync.WaitGroup
	for _, cs := range css {
		for range concurrency {
			wg.Go(func() {
				for next.Add(1) <= int64(calls) {
					sent := time.Now()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
					end := time.Now()
					if err != nil || res.IsError {
						failed.Add(1)
					}
					mu.Lock()
					_ = hist.RecordValue(int64(end.Sub(sent) / time.Microsecond))
					if end.After(last) {
						last = end
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	at := func(q float64) time.Duration { return time.Duration(hist.ValueAtQuantile(q)) * time.Microsecond }
	return sdkResult{rate: float64(calls) / last.Sub(start).Seconds(), p50: at(50), p90: at(90), p99: at(99), p999: at(99.9),
		max: time.Duration(hist.Max()) * time.Microsecond}
}
