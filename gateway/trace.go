package gateway

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/internal/tracing"
)

// downstreamTrace returns ctx carrying the W3C trace context the
// downstream client sent with req: in its params._meta (traceparent,
// tracestate), else in the HTTP request's traceparent header. The upstream
// call made under it is a span of that trace, and its own _meta names that
// span: one trace shows the agent, the gateway and the server.
func downstreamTrace(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	var header map[string][]string
	if req.Extra != nil {
		header = req.Extra.Header
	}
	var meta map[string]any
	if req.Params != nil {
		meta = req.Params.Meta
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
