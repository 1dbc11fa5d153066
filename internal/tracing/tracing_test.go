package tracing

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/era"
)

func TestMembers(t *testing.T) {
	ctx := context.Background()
	assert.Nil(t, Members(ctx))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Members(ctx) }), "no span: no allocation")

	ts, err := trace.ParseTraceState("a=1,b=2")
	assert.NoError(t, err)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{0xab}, SpanID: trace.SpanID{0xcd}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	got := Members(trace.ContextWithSpanContext(ctx, sc))
	assert.Equal(t, []era.Member{
		{Key: "traceparent", Value: []byte(`"00-ab000000000000000000000000000000-cd00000000000000-01"`)},
		{Key: "tracestate", Value: []byte(`"a=1,b=2"`)},
	}, got)
}

func TestDownstream(t *testing.T) {
	const tp = "00-ab000000000000000000000000000000-cd00000000000000-01"
	for name, c := range map[string]struct {
		meta   map[string]any
		header http.Header
		want   string // the trace id, "" for none
	}{
		"meta":              {meta: map[string]any{"traceparent": tp}, want: "ab000000000000000000000000000000"},
		"header":            {header: http.Header{"Traceparent": {"00-ef000000000000000000000000000000-cd00000000000000-01"}}, want: "ef000000000000000000000000000000"},
		"malformed":         {meta: map[string]any{"traceparent": "00-zz"}, header: http.Header{"Traceparent": {"garbage"}}},
		"not a string":      {meta: map[string]any{"traceparent": map[string]any{"x": 1}}},
		"nothing":           {},
		"all-zero trace id": {meta: map[string]any{"traceparent": "00-00000000000000000000000000000000-cd00000000000000-01"}},
	} {
		sc := trace.SpanContextFromContext(Downstream(context.Background(), c.meta, c.header))
		if c.want == "" {
			assert.False(t, sc.IsValid(), name)
			continue
		}
		assert.Equal(t, c.want, sc.TraceID().String(), name)
		assert.True(t, sc.IsRemote(), name)
	}
}
