package actors_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// The Scripted benchmarks run Conduit, the go-sdk v1.8.0 client and the
// floor client (floor_test.go) against the scripted server
// (scripted_server_test.go) over one in-memory pair each, in the same run,
// so the three are measured side by side and the server costs almost
// nothing. docs/benchmarks.md records the figures.

// burstSize is how many sampling requests the burst benchmark's one call
// carries.
const burstSize = 1000

// BenchmarkScriptedSampling: one op is one legacy tools/call that carries
// one sampling/createMessage, answered by a trivial handler; cN is N
// goroutines sharing one client, splitting the b.N calls.
func BenchmarkScriptedSampling(b *testing.B) {
	for _, conc := range []int{1, 8} {
		for _, client := range scriptedClients {
			b.Run(fmt.Sprintf("c%d/%s", conc, client.name), func(b *testing.B) {
				var answered atomic.Int64
				call := client.legacy(b, startScripted(b, false, 0), conduit.Options{InputRateLimit: rate.Inf}, &answered, "sample")
				runScripted(b, conc, 1, &answered, call)
			})
		}
	}
}

// BenchmarkScriptedBurst: one op is one legacy tools/call during which the
// server sends 1 000 sampling requests at once; the call completes when
// every one is answered. Conduit's cap and budget are lifted
// (MaxServerRequests 1 000, InputRateLimit rate.Inf). ns/request is the
// time per sampling request.
func BenchmarkScriptedBurst(b *testing.B) {
	for _, client := range scriptedClients {
		b.Run(client.name, func(b *testing.B) {
			var answered atomic.Int64
			opts := conduit.Options{InputRateLimit: rate.Inf, MaxServerRequests: burstSize}
			call := client.legacy(b, startScripted(b, false, burstSize), opts, &answered, "burst")
			runScripted(b, 1, burstSize, &answered, call)
		})
	}
}

// BenchmarkScriptedMRTR: one op is one 2026-07-28 tools/call answered
// input_required with one form elicitation, answered in process, then
// retried with the answer and completed: two round trips, c1.
func BenchmarkScriptedMRTR(b *testing.B) {
	for _, client := range scriptedClients {
		b.Run(client.name, func(b *testing.B) {
			var answered atomic.Int64
			call := client.modern(b, startScripted(b, true, 0), &answered)
			runScripted(b, 1, 1, &answered, call)
		})
	}
}

// scriptedClient connects one kind of client to a scripted server's conn
// and returns the call one op makes.
type scriptedClient struct {
	name string
	// legacy connects at 2025-11-25 with a sampling handler counting into
	// answered; the op calls tool.
	legacy func(b *testing.B, conn transport.Conn, opts conduit.Options, answered *atomic.Int64, tool string) func() error
	// modern connects at 2026-07-28 with an elicitation handler answering
	// {"name":"Ada"}; the op is one MRTR call.
	modern func(b *testing.B, conn transport.Conn, answered *atomic.Int64) func() error
}

var scriptedClients = []scriptedClient{
	{
		name: "conduit",
		legacy: func(b *testing.B, conn transport.Conn, opts conduit.Options, answered *atomic.Int64, tool string) func() error {
			opts.Era = conduit.EraLegacy
			opts.Handlers.Sampling = func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				answered.Add(1)
				return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "test"}, nil
			}
			c := connectScripted(b, conn, opts)
			require.Equal(b, conduit.EraLegacy, c.Era())
			return func() error {
				r, err := c.CallTool(context.Background(), tool, nil)
				if err != nil {
					return err
				}
				return checkConduitText(r, scriptedWant)
			}
		},
		modern: func(b *testing.B, conn transport.Conn, answered *atomic.Int64) func() error {
			opts := conduit.Options{InputRateLimit: rate.Inf, Handlers: conduit.Handlers{
				Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
					answered.Add(1)
					return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			}}
			c := connectScripted(b, conn, opts) // Era auto: the probe picks modern
			require.Equal(b, conduit.EraModern, c.Era())
			return func() error {
				r, err := c.CallTool(context.Background(), "ask", nil)
				if err != nil {
					return err
				}
				return checkConduitText(r, scriptedWant)
			}
		},
	},
	{
		name: "gosdk",
		legacy: func(b *testing.B, conn transport.Conn, _ conduit.Options, answered *atomic.Int64, tool string) func() error {
			session := connectGosdk(b, func(testing.TB) mcp.Transport { return memTransport{conn} }, "2025-11-25", &mcp.ClientOptions{
				//lint:ignore SA1019 the legacy sampling round trip is what is measured: deprecated in 2026-07-28, not gone
				CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					answered.Add(1)
					//lint:ignore SA1019 as above
					return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}, Model: "test"}, nil
				},
			})
			return func() error {
				r, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})
				if err != nil {
					return err
				}
				return checkGosdkText(r, scriptedWant)
			}
		},
		modern: func(b *testing.B, conn transport.Conn, answered *atomic.Int64) func() error {
			session := connectGosdk(b, func(testing.TB) mcp.Transport { return memTransport{conn} }, "2026-07-28", &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					answered.Add(1)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			return func() error {
				r, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask"})
				if err != nil {
					return err
				}
				return checkGosdkText(r, scriptedWant)
			}
		},
	},
	{
		name: "floor",
		legacy: func(b *testing.B, conn transport.Conn, _ conduit.Options, answered *atomic.Int64, tool string) func() error {
			c := connectFloor(b, conn, false, answered)
			return func() error { return c.callTool(tool) }
		},
		modern: func(b *testing.B, conn transport.Conn, answered *atomic.Int64) func() error {
			c := connectFloor(b, conn, true, answered)
			return func() error { return c.callToolMRTR("ask") }
		},
	},
}

func connectScripted(b *testing.B, conn transport.Conn, opts conduit.Options) *conduit.Client {
	b.Helper()
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(conn), opts)
	require.NoError(b, err)
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func connectFloor(b *testing.B, conn transport.Conn, modern bool, answered *atomic.Int64) *floorClient {
	b.Helper()
	c, err := startFloor(conn, modern, answered)
	b.Cleanup(c.close)
	require.NoError(b, err)
	return c
}

// runScripted times b.N calls of call spread over conc goroutines, checks
// that every call answered perCall input requests, and reports calls/s,
// the process's CPU time per op (steadier than wall time when other
// processes load the machine) and, when a call carries more than one input
// request, ns/request.
func runScripted(b *testing.B, conc, perCall int, answered *atomic.Int64, call func() error) {
	b.Helper()
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	n := int64(b.N)
	answered.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := processCPU()
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= n {
				if err := call(); err != nil {
					errOnce.Do(func() { first = err })
					next.Store(math.MaxInt64 / 2) // stop the others
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu1, _ := processCPU()
	if first != nil {
		b.Fatalf("call failed: %v", first)
	}
	if got, want := answered.Load(), n*int64(perCall); got != want {
		b.Fatalf("answered %d input requests for %d calls, want %d", got, n, want)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	if cpuOK {
		// The whole process: the client, the scripted server (a small
		// part) and the runtime.
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
	}
	if perCall > 1 {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*int64(perCall)), "ns/request")
	}
}
