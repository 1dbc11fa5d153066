package actors_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// BenchmarkLegacySampling answers one legacy sampling/createMessage per op:
// a tools/call of test_sampling on the go-sdk everything-server over stdio,
// whose tool asks the client for a completion. The same trivial handler runs
// under Conduit and under the go-sdk client, in the same run.
func BenchmarkLegacySampling(b *testing.B) {
	b.Run("conduit", func(b *testing.B) {
		h := &handler{} // answers "hi"
		// The input budget (10/s) would refuse most of them: lift it here.
		c := connectEverything(b, conduit.Options{Handler: h, InputRateLimit: rate.Inf})
		ctx := context.Background()
		args := map[string]any{"prompt": "hi"}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := c.CallTool(ctx, "test_sampling", args)
			if err != nil || r.IsError {
				b.Fatalf("call failed: %v %+v", err, r)
			}
		}
	})
	b.Run("gosdk", func(b *testing.B) {
		bin, err := everythingServer()
		if err != nil {
			b.Fatal(err)
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-bench", Version: "1"}, &mcp.ClientOptions{
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}, Model: "test"}, nil
			},
		})
		ctx := context.Background()
		session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			b.Fatal(err)
		}
		defer session.Close()
		params := &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hi"}}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r, err := session.CallTool(ctx, params)
			if err != nil || r.IsError {
				if r != nil && len(r.Content) > 0 {
					if tc, ok := r.Content[0].(*mcp.TextContent); ok {
						b.Fatalf("call failed: %s", tc.Text)
					}
				}
				b.Fatalf("call failed: %v", err)
			}
		}
	})
}

// BenchmarkMRTR runs one full multi-round-trip request (SEP-2322) per op: a
// tools/call of test_input_required_result_elicitation on the go-sdk
// everything-server over stdio at protocol 2026-07-28. The server answers the
// first round with an input_required result holding one elicitation (key
// "user_name", a required string "name"); the client answers it with
// {"action":"accept","content":{"name":"Ada"}} and retries, and the server
// completes with "Hello, Ada!". Both clients run the round themselves (Conduit
// in the caller's goroutine, the go-sdk client in its MRTR middleware).
//
// cN is the number of goroutines sharing one client (one session, one server
// process) and splitting the b.N calls between them.
func BenchmarkMRTR(b *testing.B) {
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("conduit/c%d", conc), func(b *testing.B) {
			h := &adaElicitor{}
			// The input budget (10/s, bursts of 20) would refuse most of the
			// elicitations: lift it here. Era auto: the probe picks modern.
			c := connectModern(b, conduit.Options{Handler: h, InputRateLimit: rate.Inf})
			ctx := context.Background()
			runCalls(b, conc, &h.answered, func() error {
				r, err := c.CallTool(ctx, "test_input_required_result_elicitation", nil)
				if err != nil {
					return err
				}
				var text string
				if len(r.Content) > 0 {
					text = r.Content[0].Text
				}
				return checkHello(r.IsError, len(r.Content), text)
			})
		})
	}
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("gosdk/c%d", conc), func(b *testing.B) {
			bin, err := everythingServer()
			if err != nil {
				b.Fatal(err)
			}
			var answered atomic.Int64
			client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-bench", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					answered.Add(1)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			ctx := context.Background()
			session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			if err != nil {
				b.Fatal(err)
			}
			defer session.Close()
			if v := session.InitializeResult().ProtocolVersion; v != "2026-07-28" {
				b.Fatalf("negotiated %q, want 2026-07-28", v)
			}
			runCalls(b, conc, &answered, func() error {
				// Fresh params per call: CallTool writes the request _meta
				// into them, so they cannot be shared between goroutines.
				r, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "test_input_required_result_elicitation"})
				if err != nil {
					return err
				}
				var text string
				if len(r.Content) > 0 {
					if tc, ok := r.Content[0].(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				return checkHello(r.IsError, len(r.Content), text)
			})
		})
	}
}

// adaElicitor answers every form elicitation with {"name":"Ada"} and counts
// them; it implements nothing else, so the client advertises elicitation only.
type adaElicitor struct{ answered atomic.Int64 }

func (a *adaElicitor) HandleElicitation(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	a.answered.Add(1)
	return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

func (a *adaElicitor) ElicitationModes() []string { return []string{"form"} }

func checkHello(isError bool, blocks int, text string) error {
	if isError || blocks != 1 || text != "Hello, Ada!" {
		return fmt.Errorf("unexpected result: isError=%v, %d blocks, text %q", isError, blocks, text)
	}
	return nil
}

// runCalls times b.N calls of call spread over conc goroutines, then checks
// that every call answered exactly one elicitation (one full MRTR round) and
// reports calls/s.
func runCalls(b *testing.B, conc int, answered *atomic.Int64, call func() error) {
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
	if first != nil {
		b.Fatalf("call failed: %v", first)
	}
	if got := answered.Load(); got != n {
		b.Fatalf("answered %d elicitations for %d calls, want one each", got, n)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

var _ = messages.MethodCallTool
