package actors_test

import (
	"context"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
)

// A benchmark reaches a fresh everything-server (its own process, one per
// client) either with Conduit, through connectConduit, or with the go-sdk
// client, through the transport gosdkTransport returns.
type (
	connectConduit func(testing.TB, conduit.Options) *conduit.Client
	gosdkTransport func(testing.TB) mcp.Transport
)

// stdioTransport starts the everything-server as a subprocess on stdio.
func stdioTransport(t testing.TB) mcp.Transport {
	t.Helper()
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	return &mcp.CommandTransport{Command: exec.Command(bin)}
}

// httpTransport starts the everything-server on a loopback port
// (stateless or stateful) and reaches it over Streamable HTTP.
func httpTransport(stateless bool) gosdkTransport {
	return func(t testing.TB) mcp.Transport {
		t.Helper()
		return &mcp.StreamableClientTransport{Endpoint: everythingHTTP(t, stateless)}
	}
}

// BenchmarkLegacySampling answers one legacy sampling/createMessage per op:
// a tools/call of test_sampling on the go-sdk everything-server over stdio,
// whose tool asks the client for a completion. The same trivial handler runs
// under Conduit and under the go-sdk client, in the same run.
func BenchmarkLegacySampling(b *testing.B) {
	benchLegacySampling(b, connectEverything, stdioTransport) // connectEverything pins legacy
}

// BenchmarkHTTPLegacySampling is BenchmarkLegacySampling over Streamable
// HTTP, on a stateful everything-server (-stateless=false: the mode that can
// send the client a request, on the call's own stream) at 2025-11-25.
func BenchmarkHTTPLegacySampling(b *testing.B) {
	benchLegacySampling(b, func(t testing.TB, opts conduit.Options) *conduit.Client {
		opts.Era = conduit.EraLegacy
		c := connectHTTP(t, everythingHTTP(t, false), opts)
		require.Equal(t, "2025-11-25", c.ProtocolVersion())
		return c
	}, httpTransport(false))
}

func benchLegacySampling(b *testing.B, connect connectConduit, dial gosdkTransport) {
	const want = "LLM response: hi"
	args := map[string]any{"prompt": "hi"}
	b.Run("conduit", func(b *testing.B) {
		var answered atomic.Int64
		h := &handler{sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			answered.Add(1)
			return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "test"}, nil
		}}
		// The input budget (10/s) would refuse most of them: lift it here.
		c := connect(b, conduit.Options{Handler: h, InputRateLimit: rate.Inf})
		ctx := context.Background()
		runScripted(b, 1, 1, &answered, func() error {
			r, err := c.CallTool(ctx, "test_sampling", args)
			if err != nil {
				return err
			}
			return checkConduitText(r, want)
		})
	})
	b.Run("gosdk", func(b *testing.B) {
		var answered atomic.Int64
		session := connectGosdk(b, dial, "2025-11-25", &mcp.ClientOptions{
			//lint:ignore SA1019 the legacy sampling round trip is what is measured: deprecated in 2026-07-28, not gone
			CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				answered.Add(1)
				//lint:ignore SA1019 as above
				return &mcp.CreateMessageResult{Role: "assistant", Content: &mcp.TextContent{Text: "hi"}, Model: "test"}, nil
			},
		})
		ctx := context.Background()
		params := &mcp.CallToolParams{Name: "test_sampling", Arguments: args}
		runScripted(b, 1, 1, &answered, func() error {
			r, err := session.CallTool(ctx, params)
			if err != nil {
				return err
			}
			return checkGosdkText(r, want)
		})
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
	benchMRTR(b, connectModern, stdioTransport) // connectModern asserts the probe picked modern
}

// BenchmarkHTTPMRTR is BenchmarkMRTR over Streamable HTTP, on a stateless
// everything-server (the mode that speaks 2026-07-28): each round of a call
// is its own POST.
func BenchmarkHTTPMRTR(b *testing.B) {
	benchMRTR(b, func(t testing.TB, opts conduit.Options) *conduit.Client {
		c := connectHTTP(t, everythingHTTP(t, true), opts) // Era auto: the probe picks
		require.Equal(t, conduit.EraModern, c.Era())
		require.Equal(t, "2026-07-28", c.ProtocolVersion())
		return c
	}, httpTransport(true))
}

func benchMRTR(b *testing.B, connect connectConduit, dial gosdkTransport) {
	const tool, want = "test_input_required_result_elicitation", "Hello, Ada!"
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("conduit/c%d", conc), func(b *testing.B) {
			h := &adaElicitor{}
			// The input budget (10/s, bursts of 20) would refuse most of the
			// elicitations: lift it here. Era auto: the probe picks modern.
			c := connect(b, conduit.Options{Handler: h, InputRateLimit: rate.Inf})
			ctx := context.Background()
			runScripted(b, conc, 1, &h.answered, func() error {
				r, err := c.CallTool(ctx, tool, nil)
				if err != nil {
					return err
				}
				return checkConduitText(r, want)
			})
		})
	}
	for _, conc := range []int{1, 8} {
		b.Run(fmt.Sprintf("gosdk/c%d", conc), func(b *testing.B) {
			var answered atomic.Int64
			session := connectGosdk(b, dial, "2026-07-28", &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					answered.Add(1)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			ctx := context.Background()
			runScripted(b, conc, 1, &answered, func() error {
				// Fresh params per call: CallTool writes the request _meta
				// into them, so they cannot be shared between goroutines.
				r, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool})
				if err != nil {
					return err
				}
				return checkGosdkText(r, want)
			})
		})
	}
}

// connectGosdk connects a go-sdk client with opts through dial's transport,
// requires it to have negotiated version, and closes the session when t ends.
func connectGosdk(t testing.TB, dial gosdkTransport, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "gosdk-bench", Version: "1"}, opts)
	session, err := client.Connect(context.Background(), dial(t), &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	require.Equal(t, version, session.InitializeResult().ProtocolVersion, "negotiated version")
	return session
}

// adaElicitor answers every form elicitation with {"name":"Ada"} and counts
// them; it implements nothing else, so the client advertises elicitation only.
type adaElicitor struct{ answered atomic.Int64 }

func (a *adaElicitor) HandleElicitation(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	a.answered.Add(1)
	return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

func (a *adaElicitor) ElicitationModes() []string { return []string{"form"} }

// checkConduitText and checkGosdkText require a result of exactly one text
// block reading want.
func checkConduitText(r *conduit.CallToolResult, want string) error {
	var text string
	if len(r.Content) > 0 {
		text = r.Content[0].Text
	}
	return checkText(r.IsError, len(r.Content), text, want)
}

func checkGosdkText(r *mcp.CallToolResult, want string) error {
	var text string
	if len(r.Content) > 0 {
		if tc, ok := r.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return checkText(r.IsError, len(r.Content), text, want)
}

func checkText(isError bool, blocks int, text, want string) error {
	if isError || blocks != 1 || text != want {
		return fmt.Errorf("unexpected result: isError=%v, %d blocks, text %q, want %q", isError, blocks, text, want)
	}
	return nil
}
