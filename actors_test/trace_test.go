package actors_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes each
// ExportTraceServiceRequest (protobuf, the collector's own types) posted
// to /v1/traces and keeps its spans.
type otlpReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	posts atomic.Int64
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: %s %s (%s)", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var export coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &export); err != nil {
			t.Errorf("OTLP receiver: not an ExportTraceServiceRequest: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.posts.Add(1)
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// provider is an SDK tracer provider exporting to r over OTLP/HTTP.
func (r *otlpReceiver) provider(t *testing.T) *sdktrace.TracerProvider {
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(r.srv.URL+"/v1/traces"))
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// flush exports what tp holds and returns every span r received.
func (r *otlpReceiver) flush(t *testing.T, tp *sdktrace.TracerProvider) []*tracepb.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tp.ForceFlush(ctx))
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func spanNamed(t *testing.T, spans []*tracepb.Span, name string) *tracepb.Span {
	t.Helper()
	var names []string
	for _, s := range spans {
		if s.Name == name {
			return s
		}
		names = append(names, s.Name)
	}
	require.Failf(t, "no span", "%q among %q", name, names)
	return nil
}

// attrs are a span's attributes as Go values.
func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		m[kv.Key] = anyValue(kv.Value)
	}
	return m
}

func anyValue(v *commonpb.AnyValue) any {
	switch x := v.Value.(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	}
	return fmt.Sprint(v)
}

// assertNoContent checks that no attribute, name or status of any span
// holds one of the secrets (arguments, prompts, answers, URLs).
func assertNoContent(t *testing.T, spans []*tracepb.Span, secrets ...string) {
	t.Helper()
	for _, s := range spans {
		text := s.Name + " " + s.GetStatus().GetMessage() + " " + fmt.Sprint(attrs(s))
		for _, e := range s.Events {
			text += " " + e.Name + fmt.Sprint(e.Attributes)
		}
		for _, secret := range secrets {
			assert.NotContains(t, text, secret, "span %q", s.Name)
		}
	}
}

// TestTracesLegacySamplingOverOTLP: against the go-sdk everything-server
// (legacy, stdio), a tools/call that makes the server ask for sampling is
// exported over OTLP/HTTP as the call's client span, a child of the
// agent's span, with the sampling request a child of it: outcome
// answered, the deadline's pause, the server's name; no prompt, argument
// or answer anywhere.
func TestTracesLegacySamplingOverOTLP(t *testing.T) {
	recv := newOTLPReceiver(t)
	tp := recv.provider(t)
	h := &handler{sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		time.Sleep(20 * time.Millisecond) // a person answering: the deadline is paused meanwhile
		return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("secret-answer-Paris"), Model: "test"}, nil
	}}
	c := connectEverything(t, conduit.Options{Handler: h, ServerID: "every", TracerProvider: tp})
	ctx, agent := tp.Tracer("agent").Start(callCtx(t), "agent turn")
	r, err := c.CallTool(ctx, "test_sampling", map[string]any{"prompt": "secret-prompt-xyz"})
	agent.End()
	require.NoError(t, err)
	require.Contains(t, textOf(t, r), "secret-answer-Paris")

	spans := recv.flush(t, tp)
	top := spanNamed(t, spans, "agent turn")
	call := spanNamed(t, spans, "tools/call test_sampling")
	input := spanNamed(t, spans, "sampling/createMessage")
	assert.Equal(t, tracepb.Span_SPAN_KIND_CLIENT, call.Kind)
	assert.Equal(t, top.TraceId, call.TraceId)
	assert.Equal(t, top.SpanId, call.ParentSpanId)
	assert.Equal(t, call.TraceId, input.TraceId)
	assert.Equal(t, call.SpanId, input.ParentSpanId, "the input request is a child of its call")
	assert.Equal(t, map[string]any{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "test_sampling", "conduit.server": "every",
		"conduit.era": "legacy", "mcp.protocol.version": "2025-11-25",
	}, attrs(call))
	a := attrs(input)
	paused, _ := a["conduit.deadline.paused_ms"].(float64)
	delete(a, "conduit.deadline.paused_ms")
	assert.Equal(t, map[string]any{
		"mcp.method.name": "sampling/createMessage", "conduit.era": "legacy", "conduit.input.outcome": "answered", "conduit.server": "every",
	}, a)
	assert.GreaterOrEqual(t, paused, 20.0, "the deadline was paused while the handler ran")
	assert.Less(t, paused, float64(time.Since(time.Unix(0, int64(call.StartTimeUnixNano))).Milliseconds()))
	assert.Equal(t, tracepb.Status_STATUS_CODE_UNSET, input.GetStatus().GetCode())
	assertNoContent(t, spans, "secret-prompt-xyz", "secret-answer-Paris")
	assert.Positive(t, recv.posts.Load())
}

// TestTracesModernMRTROverOTLP: against the everything-server in the
// modern era, an MRTR call's input request is a child span of the call.
func TestTracesModernMRTROverOTLP(t *testing.T) {
	recv := newOTLPReceiver(t)
	tp := recv.provider(t)
	c := connectModern(t, conduit.Options{Handler: answering(), ServerID: "every", TracerProvider: tp})
	r, err := c.CallTool(callCtx(t), "test_input_required_result_elicitation", nil)
	require.NoError(t, err)
	require.Equal(t, "Hello, Ada!", textOf(t, r))

	spans := recv.flush(t, tp)
	call := spanNamed(t, spans, "tools/call test_input_required_result_elicitation")
	input := spanNamed(t, spans, "elicitation/create")
	assert.Empty(t, call.ParentSpanId, "no span in the caller's ctx: the call is the root")
	assert.Equal(t, call.TraceId, input.TraceId)
	assert.Equal(t, call.SpanId, input.ParentSpanId)
	assert.Equal(t, "modern", attrs(call)["conduit.era"])
	assert.Equal(t, "2026-07-28", attrs(call)["mcp.protocol.version"])
	assert.Equal(t, "answered", attrs(input)["conduit.input.outcome"])
	assert.Equal(t, "modern", attrs(input)["conduit.era"])
	assertNoContent(t, spans, "Ada")
}

// traceparentOf returns the traceparent of a request frame's _meta.
func traceparentOf(t *testing.T, m map[string]any) string {
	t.Helper()
	p, _ := m["params"].(map[string]any)
	mt, _ := p["_meta"].(map[string]any)
	tp, _ := mt["traceparent"].(string)
	return tp
}

// wantTraceparent is the W3C traceparent naming sc (sampled).
func wantTraceparent(sc trace.SpanContext) string {
	return fmt.Sprintf("00-%s-%s-01", sc.TraceID().String(), sc.SpanID().String())
}

// TestTraceparentGoesUpstreamInMeta: in both eras the request carries the
// call span's W3C trace context in params._meta (traceparent, and
// tracestate when the trace has one), over a traceparent given with
// WithMeta; a modern call sends it again on its retry with the answers;
// the input request is a child span of the call.
func TestTraceparentGoesUpstreamInMeta(t *testing.T) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			c, srv := e.connect(t, conduit.Options{Handler: &handler{}, ServerID: "fake", TracerProvider: tp, InputRateLimit: rate.Inf})
			ts, err := trace.ParseTraceState("vendor=opaque")
			require.NoError(t, err)
			parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
			done := make(chan callResult, 1)
			go func() {
				ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
				r, err := c.CallTool(ctx, "x", map[string]any{"q": "secret-argument"}, conduit.WithUnvalidatedResult(),
					conduit.WithMeta(map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x.example/k": "v"}))
				done <- callResult{r, err}
			}()
			first := srv.next()
			require.Equal(t, "tools/call", first["method"])
			tpHeader := traceparentOf(t, first)
			mt := first["params"].(map[string]any)["_meta"].(map[string]any)
			assert.Equal(t, "vendor=opaque", mt["tracestate"])
			assert.Equal(t, "v", mt["x.example/k"], "the caller's own _meta stays")
			if e.era == conduit.EraLegacy {
				srv.request("in", "sampling/createMessage", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "secret-prompt"}}}, "maxTokens": 10})
				srv.expectResponse("in")
				srv.reply(first["id"], map[string]any{"content": []any{}})
			} else {
				srv.reply(first["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
					"k": map[string]any{"method": "sampling/createMessage", "params": map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "secret-prompt"}}}, "maxTokens": 10}},
				}})
				retry := srv.next()
				assert.Equal(t, tpHeader, traceparentOf(t, retry), "the retry carries the same trace context")
				srv.reply(retry["id"], map[string]any{"resultType": "complete", "content": []any{}})
			}
			require.NoError(t, (<-done).err)
			require.NoError(t, tp.ForceFlush(context.Background()))

			var call, input sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				switch s.Name() {
				case "tools/call x":
					call = s
				case "sampling/createMessage":
					input = s
				}
			}
			require.NotNil(t, call)
			require.NotNil(t, input)
			assert.Equal(t, parent.TraceID(), call.SpanContext().TraceID(), "the call continues the caller's trace")
			assert.Equal(t, parent.SpanID(), call.Parent().SpanID())
			assert.Equal(t, wantTraceparent(call.SpanContext()), tpHeader, "_meta.traceparent names the call's span")
			assert.Equal(t, call.SpanContext().SpanID(), input.Parent().SpanID())
			for _, s := range rec.Ended() {
				for _, kv := range s.Attributes() {
					assert.NotContains(t, kv.Value.String(), "secret", "span %q attribute %s", s.Name(), kv.Key)
				}
			}
		})
	}
}

// TestTracingOffSendsNoTraceContext: with a no-op provider, and with the
// global one before the program sets any, nothing of tracing reaches the
// wire.
func TestTracingOffSendsNoTraceContext(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"noop": noop.NewTracerProvider(), "global": nil} {
		t.Run(name, func(t *testing.T) {
			c, srv := connect(t, conduit.Options{TracerProvider: tp}, "2025-11-25")
			d := callAsync(c, "x")
			f := srv.next()
			assert.NotContains(t, f["params"], "_meta", "frame: %v", f)
			srv.reply(f["id"], map[string]any{"content": []any{}})
			require.NoError(t, (<-d).err)
		})
	}
}

// TestTraceInputOutcomes: each input request of a legacy call is a child
// span with its outcome, refusals included: answered, busy (over
// MaxServerRequests), refused (a capability the client did not declare,
// with its code), refused by a guard (sampling without maxTokens).
func TestTraceInputOutcomes(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	release := make(chan struct{})
	h := conduit.Handlers{Sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		<-release
		return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "m"}, nil
	}}
	c, srv := connect(t, conduit.Options{Handlers: h, MaxServerRequests: 1, InputRateLimit: rate.Inf, TracerProvider: tp}, "2025-11-25")
	d := callAsync(c, "x")
	call := srv.next()
	sample := func(id string, maxTokens int) {
		srv.request(id, "sampling/createMessage", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "secret"}}}, "maxTokens": maxTokens})
	}
	sample("a", 10)
	require.Eventually(t, func() bool { return c.Stats().ServerRequests == 1 }, 5*time.Second, time.Millisecond)
	sample("b", 10) // the one slot is taken
	srv.expectError("b", messages.CodeBusy)
	srv.request("c", "elicitation/create", map[string]any{"message": "secret", "requestedSchema": map[string]any{"type": "object"}})
	srv.expectError("c", messages.CodeMethodNotFound)
	close(release)
	srv.expectResponse("a")
	srv.request("d", "sampling/createMessage", map[string]any{"messages": []any{}}) // no maxTokens
	srv.expectError("d", messages.CodeInvalidParams)
	srv.reply(call["id"], map[string]any{"content": []any{}})
	require.NoError(t, (<-d).err)
	require.NoError(t, tp.ForceFlush(context.Background()))

	var callSpan sdktrace.ReadOnlySpan
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() == "tools/call x" {
			callSpan = s
		}
	}
	require.NotNil(t, callSpan)
	for _, s := range rec.Ended() {
		if s == callSpan {
			continue
		}
		assert.Equal(t, callSpan.SpanContext().SpanID(), s.Parent().SpanID(), "span %q", s.Name())
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		got = append(got, strings.Join([]string{s.Name(), a["conduit.input.outcome"], a["rpc.jsonrpc.error_code"], s.Status().Code.String()}, " "))
	}
	assert.ElementsMatch(t, []string{
		"sampling/createMessage busy -32000 Error",
		"elicitation/create refused -32601 Error",
		"sampling/createMessage answered  Unset",
		"sampling/createMessage refused -32602 Error",
	}, got)
}

// BenchmarkScriptedTracing: one op is BenchmarkScriptedSampling's (a
// legacy tools/call carrying one sampling request, c1, against the
// scripted server) with tracing off (a no-op provider: nothing of tracing
// runs), with otel's global provider before the program sets one (the
// default: a tracer whose spans record nothing and carry no trace), and
// with an SDK provider that records every span and exports none (the cost
// of the spans themselves; the traceparent goes in _meta).
func BenchmarkScriptedTracing(b *testing.B) {
	for _, c := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", noop.NewTracerProvider()},
		{"global", nil},
		{"recording", sdktrace.NewTracerProvider()},
	} {
		b.Run(c.name, func(b *testing.B) {
			var answered atomic.Int64
			opts := conduit.Options{InputRateLimit: rate.Inf, TracerProvider: c.tp}
			call := scriptedClients[0].legacy(b, startScripted(b, false, 0), opts, &answered, "sample")
			runScripted(b, 1, 1, &answered, call)
		})
	}
}

// TestGlobalProviderSetAfterConnect: with no TracerProvider a client
// follows otel's global provider: nothing while the program has set none,
// then the provider it sets, even after Connect.
func TestGlobalProviderSetAfterConnect(t *testing.T) {
	c, srv := connect(t, conduit.Options{}, "2025-11-25")
	d := callAsync(c, "x")
	f := srv.next()
	assert.NotContains(t, f["params"], "_meta")
	srv.reply(f["id"], map[string]any{"content": []any{}})
	require.NoError(t, (<-d).err)

	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	d = callAsync(c, "x")
	f = srv.next()
	tp := traceparentOf(t, f)
	srv.reply(f["id"], map[string]any{"content": []any{}})
	require.NoError(t, (<-d).err)
	require.Len(t, rec.Ended(), 1)
	assert.Equal(t, wantTraceparent(rec.Ended()[0].SpanContext()), tp)
}

// TestTraceInputTimeoutAndCancel: an input whose handler runs out of time
// is a span with outcome timeout (and the -32603 sent), one the server
// cancels a span with outcome cancelled.
func TestTraceInputTimeoutAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		h := conduit.Handlers{Sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return nil, block(ctx)
		}}
		c, srv := connect(t, conduit.Options{Handlers: h, HandlerTimeout: time.Second, InputRateLimit: rate.Inf, TracerProvider: tp}, "2025-11-25")
		d := callAsync(c, "x")
		call := srv.next()
		params := map[string]any{"messages": []any{}, "maxTokens": 10}
		srv.request("t", "sampling/createMessage", params)
		srv.expectError("t", messages.CodeInternalError) // after the handler's second
		srv.request("c", "sampling/createMessage", params)
		synctest.Wait()
		srv.notify("notifications/cancelled", map[string]any{"requestId": "c"})
		synctest.Wait()
		srv.reply(call["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-d).err)

		got := map[string]string{}
		for _, s := range rec.Ended() {
			for _, kv := range s.Attributes() {
				if kv.Key == "conduit.input.outcome" {
					got[kv.Value.String()] = s.Name()
					if kv.Value.String() == "timeout" {
						paused := 0.0
						for _, a := range s.Attributes() {
							if a.Key == "conduit.deadline.paused_ms" {
								paused = a.Value.AsFloat64()
							}
						}
						assert.Equal(t, 1000.0, paused, "the deadline was paused for the handler's second")
					}
				}
			}
		}
		assert.Equal(t, map[string]string{"timeout": "sampling/createMessage", "cancelled": "sampling/createMessage"}, got)
	})
}

// TestGoSDKServerSeesTraceparent: a go-sdk server (in process) reads the
// call span's traceparent in its request's _meta: legacy over stdio, and
// modern (2026-07-28) over stateless Streamable HTTP.
func TestGoSDKServerSeesTraceparent(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "trace-server", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "show_traceparent"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		tp, _ := req.Params.GetMeta()["traceparent"].(string)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: tp}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			opts := conduit.Options{Era: era, TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))}
			var c *conduit.Client
			if era == conduit.EraLegacy {
				var err error
				c, err = conduit.Connect(callCtx(t), inProcessServer(t, server), opts)
				require.NoError(t, err)
				defer c.Close()
			} else {
				c = connectHTTP(t, ts.URL, opts)
				require.Equal(t, "2026-07-28", c.ProtocolVersion())
			}
			r, err := c.CallTool(callCtx(t), "show_traceparent", nil)
			require.NoError(t, err)
			var call sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "tools/call show_traceparent" {
					call = s
				}
			}
			require.NotNil(t, call)
			assert.Equal(t, wantTraceparent(call.SpanContext()), textOf(t, r))
		})
	}
}
