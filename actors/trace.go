package actors

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/internal/tracing"
	"github.com/conduitmcp/conduit/messages"
)

// Input requests are traced as spans (Config.Tracer): one per input
// request, a child of the span of the call it belongs to (the tracker's
// relation, the one that pauses the call's deadline), written when the
// input ends, with its grant as start time. An input that belongs to no
// call with a valid span context (none in flight, or a call made while
// tracing records nothing) is no span. With no tracer nothing of this
// runs: the hot path pays a nil check per call and per input.

// traceCall registers the span context of call id while it runs, for the
// spans of its inputs; it reports whether it did (then untraceCall must
// follow).
func (s *shared) traceCall(ctx context.Context, id messages.ID) bool {
	if s.tracer() == nil {
		return false
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return false
	}
	calls := s.calls.Load()
	if calls == nil {
		s.calls.CompareAndSwap(nil, new(sync.Map))
		calls = s.calls.Load()
	}
	calls.Store(id, sc)
	return true
}

func (s *shared) untraceCall(id messages.ID) { s.calls.Load().Delete(id) } // only after traceCall's true

var internalKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// callSpan returns the span context of call id, the zero one when it is
// not traced.
func (s *shared) callSpan(id messages.ID) trace.SpanContext {
	calls := s.calls.Load()
	if calls == nil {
		return trace.SpanContext{}
	}
	if sc, ok := calls.Load(id); ok {
		return sc.(trace.SpanContext)
	}
	return trace.SpanContext{}
}

// inputTrace is what an input traced under its call keeps: the call's
// span context and when the input started (its grant).
type inputTrace struct {
	span    trace.SpanContext
	started time.Time
}

// traceStart traces an input granted to a call (g.hasCall) when that call
// has a valid span context: the one in parent (a modern call gathers its
// input under its own ctx), else the one registered for it (a legacy
// server request).
func (in *input) traceStart(parent context.Context, g *inputGrant) {
	sc := trace.SpanContextFromContext(parent)
	if !sc.IsValid() {
		sc = in.shared.callSpan(g.related)
	}
	if sc.IsValid() {
		in.trace = &inputTrace{span: sc, started: time.Now()}
	}
}

// inputSpan records one input request that started at started (zero: it
// was refused on arrival) and ended now with outcome (guards.Outcome…);
// parent is its call's span context (valid), hasCall whether it was
// granted to that call (and so paused its deadline); rpc is the JSON-RPC
// error it was refused or failed with. rc names the server and the era. No content:
// no params, no answer, no error message (a guard's message may quote
// the request).
func (s *shared) inputSpan(started time.Time, parent trace.SpanContext, hasCall bool, method string, rc *messages.RequestContext, outcome string, rpc *messages.RPCError) {
	end := time.Now()
	if started.IsZero() {
		started = end
	}
	ctx := trace.ContextWithSpanContext(context.Background(), parent)
	var paused time.Duration
	if hasCall {
		paused = end.Sub(started)
	}
	_, span := s.tracer().Start(ctx, method, append(internalKind, trace.WithTimestamp(started))...)
	if !span.IsRecording() {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, tracing.Method.String(method), tracing.Era.String(string(rc.Era)),
		tracing.Outcome.String(outcome), tracing.Paused.Float64(float64(paused)/float64(time.Millisecond)))
	if rc.ServerID != "" {
		attrs = append(attrs, tracing.Server.String(rc.ServerID))
	}
	if rpc != nil {
		attrs = append(attrs, tracing.ErrorCode.Int(rpc.Code))
	}
	span.SetAttributes(attrs...)
	if outcome != guards.OutcomeAnswered {
		span.SetStatus(codes.Error, outcome)
	}
	span.End(trace.WithTimestamp(end))
}

// refusalSpan records a legacy server request refused on arrival, before
// the input pipeline (busy, undeclared, before the handshake, closing), as
// a child of the call it would have belonged to.
func (c *connection) refusalSpan(f *messages.Frame, hint string, sess *session, outcome string, e *messages.RPCError) {
	var parent trace.SpanContext
	call := c.trk().relate(hint, relatedTask(f.Params))
	if call != nil {
		parent = c.shared.callSpan(call.id)
	}
	if !parent.IsValid() {
		return
	}
	rc := messages.RequestContext{ServerID: c.cfg.ServerID, Era: sess.era}
	c.shared.inputSpan(time.Time{}, parent, false, f.Method, &rc, outcome, e)
}
