package actors

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// A connection with a tracer holds no map of traced calls until a call
// with a valid span context runs (decision 74): the global provider gives
// every connection a tracer, and most never trace a call. The map, once
// made, maps the call to its span until the call ends.
func TestTracedCallsMapIsMadeByTheFirstTracedCall(t *testing.T) {
	client, server := transport.NewMemoryPair()
	defer server.Close()
	rt := Start(Config{Conn: client, Tracer: noop.NewTracerProvider().Tracer("test")})
	defer rt.Close()
	sh := &rt.m.sh
	assert.Nil(t, sh.calls.Load(), "an idle connection's map of traced calls")

	id := messages.IntID(7)
	assert.False(t, sh.traceCall(context.Background(), id), "a call without a span")
	assert.Nil(t, sh.calls.Load())
	assert.Equal(t, trace.SpanContext{}, sh.callSpan(id))

	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}})
	require.True(t, sh.traceCall(trace.ContextWithSpanContext(context.Background(), sc), id))
	assert.NotNil(t, sh.calls.Load())
	assert.Equal(t, sc, sh.callSpan(id))
	sh.untraceCall(id)
	assert.Equal(t, trace.SpanContext{}, sh.callSpan(id))
}
