package gateway

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/internal/tracing"
	"github.com/conduitmcp/conduit/transport"
)

// spanOf returns the ended span named name.
func spanOf(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var names []string
	for _, s := range rec.Ended() {
		if s.Name() == name {
			return s
		}
		names = append(names, s.Name())
	}
	require.Failf(t, "no span", "%q among %q", name, names)
	return nil
}

// A downstream client's trace continues through the gateway: the agent's
// call span (its traceparent in _meta) is the parent of the gateway's
// upstream call span, in the same trace, for a legacy and a modern
// downstream client, to a legacy and a modern upstream; the upstream's
// input request is a child of the gateway's span.
func TestGatewayContinuesTheDownstreamTrace(t *testing.T) {
	bin := everything(t)
	gwRec := tracetest.NewSpanRecorder()
	gwTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(gwRec))
	_, url := serveWith(t, host.Config{Servers: map[string]host.Server{
		"a": {Command: bin, Conduit: host.Settings{Era: conduit.EraLegacy}},
		"b": {Command: bin, Conduit: host.Settings{Era: conduit.EraModern}},
	}}, Options{Host: host.Options{Client: conduit.Options{TracerProvider: gwTP}}})
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			agentRec := tracetest.NewSpanRecorder()
			agentTP := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(agentRec))
			var asked atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := conduit.Connect(ctx, &transport.HTTP{URL: url + "/mcp"}, conduit.Options{Era: era, TracerProvider: agentTP,
				Handlers: conduit.Handlers{Sampling: answer("Paris-42", &asked)}})
			require.NoError(t, err)
			defer c.Close()
			for _, tool := range []string{"a__test_sampling", "b__test_input_required_result_sampling"} {
				_, err := c.CallTool(ctx, tool, map[string]any{"prompt": "capital?"})
				require.NoError(t, err)
				agent := spanOf(t, agentRec, "tools/call "+tool)
				upstream := spanOf(t, gwRec, "tools/call "+tool[len("a__"):])
				assert.Equal(t, agent.SpanContext().TraceID(), upstream.SpanContext().TraceID(), "%s: one trace", tool)
				assert.Equal(t, agent.SpanContext().SpanID(), upstream.Parent().SpanID(), "%s: the gateway's call is the agent's child", tool)
				assert.True(t, upstream.Parent().IsRemote())
				input := spanOf(t, gwRec, "sampling/createMessage")
				assert.Equal(t, upstream.SpanContext().TraceID(), input.SpanContext().TraceID())
				gwRec.Reset()
			}
		})
	}
}

// The HTTP traceparent header names the trace when _meta does not.
func TestDownstreamTraceFromHeader(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}, TraceFlags: trace.FlagsSampled})
	h := http.Header{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), propagation.HeaderCarrier(h))
	require.NotEmpty(t, h.Get("traceparent"))
	other := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{6}, TraceFlags: trace.FlagsSampled})
	for name, c := range map[string]struct {
		meta   map[string]any
		header http.Header
		want   trace.SpanContext
	}{
		"header":           {header: h, want: sc.WithRemote(true)},
		"meta over header": {meta: map[string]any{"traceparent": "00-07000000000000000000000000000000-0600000000000000-01"}, header: h, want: other.WithRemote(true)},
		"malformed meta":   {meta: map[string]any{"traceparent": 42}, header: h, want: sc.WithRemote(true)},
		"none":             {meta: map[string]any{"progressToken": "p"}},
	} {
		ctx := continueTrace(context.Background(), tracing.Downstream(context.Background(), c.meta, c.header))
		assert.Equal(t, c.want, trace.SpanContextFromContext(ctx), name)
	}
}
