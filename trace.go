package conduit

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/conduitmcp/conduit/internal/tracing"
	"github.com/conduitmcp/conduit/messages"
)

// Traces (docs/operations.md, "Traces"): each request a client sends
// through its methods is a span of kind client, named after its method
// ("tools/call NAME" for a tool), in the caller's trace; each input
// request the server makes for it (a legacy server request, an entry of a
// modern input_required round) is a child span, with its guard outcome and
// the time it paused the call's deadline. The span's W3C trace context
// goes upstream in params._meta (traceparent, tracestate), in both eras.
// The handshake, notifications and the requests of a 2025-11-25 task are
// not traced.

// unsetGlobal is otel's global provider before the program sets one: a
// delegate that records nothing until then.
var unsetGlobal = otel.GetTracerProvider()

// tracerOf returns the tracer of tp (nil: the global provider), or nil
// when tp is a no-op provider: then nothing of tracing runs at all. The
// global provider's tracer delegates to the provider the program sets,
// even later; its calls use callTracer.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	switch tp.(type) {
	case noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(tracing.Scope)
}

// callTracer is the tracer of a call: Options.TracerProvider's; with the
// global provider, none while the program has set no provider (a call
// then costs nothing of tracing: no span, no allocation), else the set
// provider's tracer, looked up once per provider.
func (c *Client) callTracer() trace.Tracer {
	if c.opts.TracerProvider != nil {
		return c.tracer
	}
	tp := otel.GetTracerProvider()
	if tp == unsetGlobal {
		return nil
	}
	if g := c.global.Load(); g != nil && g.provider == tp {
		return g.tracer
	}
	g := &globalTracer{provider: tp, tracer: tracerOf(tp)}
	c.global.Store(g)
	return g.tracer
}

// globalTracer is the tracer of the global provider the program set.
type globalTracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
}

var clientKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// startCall starts the span of a call of method with params (the caller's,
// before encoding: a tool's name is read from them). It returns ctx
// unchanged and a nil span when tracing is off (callTracer), or when the
// span neither records nor carries a trace.
func (c *Client) startCall(ctx context.Context, method string, params any) (context.Context, trace.Span) {
	tracer := c.callTracer()
	if tracer == nil {
		return ctx, nil
	}
	sctx, span := tracer.Start(ctx, method, clientKind...)
	if !span.IsRecording() {
		if !span.SpanContext().IsValid() {
			return ctx, nil
		}
		return sctx, nil // a trace to carry upstream, nothing to record
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, tracing.Method.String(method))
	if p, ok := params.(messages.CallToolParams); ok && method == messages.MethodCallTool {
		span.SetName(method + " " + p.Name)
		attrs = append(attrs, tracing.Tool.String(p.Name))
	}
	if c.opts.ServerID != "" {
		attrs = append(attrs, tracing.Server.String(c.opts.ServerID))
	}
	if s := c.sess(); s != nil {
		attrs = append(attrs, tracing.Era.String(string(s.rt.Era())), tracing.Version.String(s.rt.Version()))
	}
	span.SetAttributes(attrs...)
	return sctx, span
}

// endCall ends a call's span (nil: none) with err: its Kind as error.type
// and the status description, a JSON-RPC error's code; never its message,
// which may quote the server or the arguments.
func endCall(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		kind := "error"
		var ce *Error
		if errors.As(err, &ce) {
			kind = string(ce.Kind)
			if ce.RPC != nil {
				span.SetAttributes(tracing.ErrorCode.Int(ce.RPC.Code))
			}
		}
		span.SetAttributes(tracing.ErrorType.String(kind))
		span.SetStatus(codes.Error, kind)
	}
	span.End()
}
