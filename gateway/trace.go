package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/internal/tracing"
)

// downstreamTrace returns ctx carrying the W3C trace context the
// downstream client sent with a request: in its params' _meta (meta:
// traceparent, tracestate), else in the HTTP request's traceparent header
// (extra). The upstream
// call made under it is a span of that trace, and its own _meta names that
// span: one trace shows the agent, the gateway and the server.
func downstreamTrace(ctx context.Context, extra *mcp.RequestExtra, meta map[string]any) context.Context {
	var header map[string][]string
	if extra != nil {
		header = extra.Header
	}
	return tracing.Downstream(ctx, meta, header)
}

// continueTrace returns ctx (a modern call's own, which outlives the
// request) with the span context traced carries, when it carries one.
func continueTrace(ctx, traced context.Context) context.Context {
	if sc := trace.SpanContextFromContext(traced); sc.IsValid() {
		return trace.ContextWithSpanContext(ctx, sc)
	}
	return ctx
}
