package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
)

// input is one input request on the one pipeline every input request takes,
// whichever era asked and whoever drives it:
//
//	grant → before-guards → handler (its own goroutine, panic recovered,
//	with its timeout) → after-guards → encoding → audit
//
// A driver gives it the grant, then the first event it observes (the
// handler's outcome, the timeout, a cancellation), and maps the outcome it
// gets back onto its era: the legacy request child onto a JSON-RPC frame,
// MRTR and task input onto a *messages.Error. The first event ends the
// input: the audit record is written then, once, the handler's ctx is
// cancelled and a handler still running is abandoned (counted until it
// returns). Later events report false and are ignored: a late result is
// discarded. An input is driven by one goroutine at a time (the request
// child's, or the gathering goroutine's).
type input struct {
	shared   *shared
	guard    guards.Input
	key      string // modern: the input request's key
	timeout  time.Duration
	parent   context.Context    // its end is a cancellation of the request
	req      any                // what the handler got, after the before-guards
	cancel   context.CancelFunc // the handler ctx's, unless own is
	own      ownCancel          // the handler ctx's cancellation when parent has no deadline
	owned    bool               // own is the handler ctx's
	ended    bool               // beside owned, in one word (TestRequestChildFitsItsSizeClass)
	handle   supervisor.Handle  // its handler goroutine, once started
	driver   driver             // gets the handler's outcome; set when the handler starts
	hctx     handlerCtx         // the handler's ctx
	progress progressSent       // what NotifyProgress reported last
	trace    *inputTrace        // its call's span and its start, when traced (trace.go)
}

// driver is what drives an input: it gets the handler's outcome from the
// handler's goroutine, and must not block there.
type driver interface {
	handlerDone(supervisor.Outcome)
}

// outcomeChan drives an input from a goroutine waiting on it (input.run).
type outcomeChan chan supervisor.Outcome

func (c outcomeChan) handlerDone(out supervisor.Outcome) { c <- out }

// Run and Done make an input the supervisor's Job: Run calls the handler
// that matches the request the before-guards produced.
func (in *input) Run(ctx context.Context) (any, error) {
	return answer(ctx, in.shared.handlers(), in.req)
}

// Done hands the handler's outcome to the input's driver.
func (in *input) Done(out supervisor.Outcome) { in.driver.handlerDone(out) }

// ending says how an input ended.
type ending int

const (
	answered  ending = iota
	refused          // the before-guards refused it: no callback ran
	failed           // the handler returned an error or panicked
	rejected         // the after-guards refused the answer, or it could not be encoded
	timedOut         // the handler's time was up
	cancelled        // the server, the call, a sibling input or Close ended it
)

// outcome is how an input ended.
type outcome struct {
	ending ending
	// result is the answer after the after-guards, raw its encoding
	// (answered only): for a legacy server request (its RequestID set) the
	// whole JSON-RPC response, for any other input the result alone.
	result any
	raw    json.RawMessage
	// rpc is the JSON-RPC error a legacy server is sent; in both eras it is
	// the audited Code and Message. Nil when answered or cancelled.
	rpc *messages.RPCError
	// err is the handler's own error (failed): a *supervisor.PanicError for
	// a panic.
	err error
	// audit is the audited outcome (guards.Outcome…).
	audit string
}

// init starts an input request's way through the pipeline: g is the
// request as the guards see it (the grant fills in its call), key its key
// (modern), timeout the handler's time. It returns in.
func (in *input) init(s *shared, g guards.Input, key string, timeout time.Duration) *input {
	*in = input{shared: s, guard: g, key: key, timeout: timeout}
	return in
}

// start applies the grant (the related call, its assigns, the calls in
// flight), runs the before-guards and, when they pass, starts the handler
// under a ctx derived from parent; d gets the handler's outcome. It reports
// the outcome and true when the input ended here (refused, or ended before
// its grant came).
//
// The driver ends the input when parent ends (every driver watches its
// parent: the request child is cancelled by the connection before the
// connection's ctx ends, MRTR selects on its caller's ctx), and the end
// cancels the handler's ctx. So a parent without a deadline is not
// registered with: that registration took the lock of the connection's
// ctx twice per request, from every worker at once.
func (in *input) start(parent context.Context, g *inputGrant, d driver) (outcome, bool) {
	if in.ended {
		return outcome{}, false
	}
	in.guard.CallsInFlight = g.inFlight
	if in.shared.tracer() != nil && g.hasCall {
		in.traceStart(parent, g)
	}
	if g.hasCall {
		in.guard.Context.RelatedRequestID, in.guard.Context.Assigns = g.related, g.assigns
	}
	req, refusal := in.shared.guards().Before(&in.guard)
	if refusal != nil {
		in.shared.refusedBy(refusal)
		return in.end(outcome{ending: refused, rpc: refusal.Err, audit: refusal.Outcome}), true
	}
	in.req, in.parent = req, parent
	in.shared.issueURL(req) // awaiting its completion, when a hook listens
	in.driver = d
	if _, ok := parent.Deadline(); ok {
		hctx, cancel := context.WithCancel(parent)
		in.cancel = cancel
		in.hctx = handlerCtx{Context: hctx, in: in}
	} else {
		// Its values, not its Done. The connection's ctx (a request
		// child's parent) carries none: comparing with it cannot panic,
		// its dynamic type is a pointer.
		in.own.values = context.Background()
		if parent != in.shared.ctx {
			in.own.values = context.WithoutCancel(parent)
		}
		in.owned = true
		in.hctx = handlerCtx{Context: &in.own, in: in}
	}
	supervisor.Go(&in.hctx, &in.shared.abandoned, &in.handle, in)
	return outcome{}, false
}

// returned takes the handler's outcome through the after-guards. It
// reports false when the input had already ended.
func (in *input) returned(out supervisor.Outcome) (outcome, bool) {
	if in.ended {
		return outcome{}, false
	}
	if out.Err != nil && in.parent.Err() != nil {
		// The handler gave up because its request was cancelled: that
		// is a cancellation, not a handler failure.
		return in.end(outcome{ending: cancelled, audit: guards.OutcomeCancelled}), true
	}
	if out.Err != nil {
		return in.end(in.failure(out.Err)), true
	}
	result, refusal := in.shared.guards().After(&in.guard, in.req, out.Result)
	if refusal != nil {
		in.shared.refusedBy(refusal)
		return in.end(outcome{ending: rejected, rpc: refusal.Err, audit: refusal.Outcome}), true
	}
	var raw json.RawMessage
	var err error
	if id := in.guard.Context.RequestID; !id.IsZero() {
		raw, err = messages.EncodeResponse(id, result) // sent as it is
	} else {
		raw, err = messages.MarshalResult(result)
	}
	if err != nil {
		in.shared.logger().Error("input result could not be encoded", in.logAttrs("err", err)...)
		e := &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: result could not be encoded"}
		return in.end(outcome{ending: rejected, rpc: e, audit: guards.OutcomeRefused}), true
	}
	return in.end(outcome{ending: answered, result: result, raw: raw, audit: guards.OutcomeAnswered}), true
}

// failure is a handler's error: its own JSON-RPC error is sent as is, a
// panic or any other error as -32603, and logged.
func (in *input) failure(err error) outcome {
	o := outcome{ending: failed, err: err, audit: guards.OutcomeRefused}
	var panicErr *supervisor.PanicError
	switch {
	case errors.As(err, &panicErr):
		in.shared.logger().Error("input handler panicked", in.logAttrs("panic", fmt.Sprint(panicErr.Value), "stack", string(panicErr.Stack))...)
		o.rpc = &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: input handler panicked"}
	case errors.As(err, &o.rpc):
		// The handler refused with its own code.
	default:
		in.shared.logger().Warn("input handler failed", in.logAttrs("err", err)...)
		o.rpc = &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: input handler failed"}
	}
	return o
}

// timedOut ends the input because the handler's time is up. It reports
// false when the input had already ended.
func (in *input) timedOut() (outcome, bool) {
	if in.ended {
		return outcome{}, false
	}
	e := &messages.RPCError{Code: messages.CodeInternalError, Message: fmt.Sprintf("Internal error: input handler timed out after %s", in.timeout)}
	return in.end(outcome{ending: timedOut, rpc: e, audit: guards.OutcomeTimeout}), true
}

// cancelled ends the input because its request was cancelled. It reports
// false when the input had already ended.
func (in *input) cancelled() (outcome, bool) {
	if in.ended {
		return outcome{}, false
	}
	return in.end(outcome{ending: cancelled, audit: guards.OutcomeCancelled}), true
}

// end writes the one audit record, cancels the handler's ctx and abandons
// the handler if it is still running.
func (in *input) end(o outcome) outcome {
	in.ended = true
	if in.cancel != nil {
		in.cancel()
	} else if in.owned {
		in.own.cancel()
	}
	if in.driver != nil && in.handle.Abandon() {
		// Info, not Warn: at a timeout or a cancellation the handler is
		// still running by definition; it is counted
		// (Stats.AbandonedHandlers) until it returns, which is what an
		// operator watches.
		in.shared.logger().Info("input handler still running after its request ended: abandoned", in.logAttrs()...)
	}
	if in.trace != nil {
		in.shared.inputSpan(in.trace.started, in.trace.span, true, in.guard.Method, &in.guard.Context, o.audit, o.rpc)
	}
	if in.shared.rt.cfg.Audit == nil {
		return o // no hook: no record to build
	}
	rc := in.guard.Context
	in.shared.audit(messages.AuditRecord{
		Time: time.Now(), ServerID: rc.ServerID, Session: messages.SessionOf(rc.Assigns), Era: rc.Era, Method: in.guard.Method,
		RequestID: rc.RequestID, RelatedRequestID: rc.RelatedRequestID, Key: in.key,
		Request: auditView(in.req), Outcome: o.audit, Result: o.result,
	}, o.rpc)
	return o
}

// run drives the input from the calling goroutine, once granted: the first
// of the handler's outcome, its timeout, the end of ctx, an error on abort
// and the end of the connection decides. It returns the abort's error when
// that ended it. An input whose request already ended (its call's time ran
// out while the round was read, the caller gave up) is cancelled before
// any handler runs: a person would see a prompt flash up and vanish.
func (in *input) run(ctx context.Context, g *inputGrant, abort <-chan error) (outcome, error) {
	select {
	case aborted := <-abort:
		o, _ := in.cancelled()
		return o, aborted
	default:
	}
	if ctx.Err() != nil || in.shared.ctx.Err() != nil {
		o, _ := in.cancelled()
		return o, nil
	}
	done := make(outcomeChan, 1)
	if o, ended := in.start(ctx, g, done); ended {
		return o, nil
	}
	timer := time.NewTimer(in.timeout)
	defer timer.Stop()
	var o outcome
	var aborted error
	select {
	case out := <-done:
		o, _ = in.returned(out)
	case <-timer.C:
		o, _ = in.timedOut()
	case <-ctx.Done():
		o, _ = in.cancelled()
	case aborted = <-abort:
		o, _ = in.cancelled()
	case <-in.shared.ctx.Done():
		o, _ = in.cancelled()
	}
	return o, aborted
}

// logAttrs names the input in a log record: its method and its id or key.
func (in *input) logAttrs(kv ...any) []any {
	attrs := []any{"method", in.guard.Method}
	if in.key != "" {
		attrs = append(attrs, "key", in.key)
	} else {
		attrs = append(attrs, "id", in.guard.Context.RequestID.String())
	}
	return append(attrs, kv...)
}

// undeclared refuses an input request for a capability the client did not
// declare, before any callback runs, and audits it (rec without outcome).
// Both eras refuse it the same way.
func (s *shared) undeclared(rec messages.AuditRecord) *messages.RPCError {
	e := &messages.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (the client did not declare this capability)", rec.Method)}
	rec.Time, rec.Outcome = time.Now(), guards.OutcomeRefused
	s.count().refused.Add(1)
	s.audit(rec, e)
	return e
}

// answer calls the handler method that matches req, as produced by the
// guards.
func answer(ctx context.Context, h *messages.Handlers, req any) (any, error) {
	switch r := req.(type) {
	case *messages.SamplingRequest:
		if h.Sampling != nil {
			return h.Sampling(ctx, r)
		}
	case *messages.ElicitationRequest:
		if h.Elicitation != nil {
			return h.Elicitation(ctx, r)
		}
	case *messages.RootsRequest:
		if h.Roots != nil {
			return h.Roots(ctx, r)
		}
	}
	return nil, &messages.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: no handler for %T", req)}
}

// auditView is the part of a request recorded by the audit hook: the
// params as the handler saw them, plus elicitation's URL verdict.
func auditView(req any) any {
	switch r := req.(type) {
	case *messages.SamplingRequest:
		return r.Params
	case *messages.ElicitationRequest:
		v := map[string]any{"mode": r.Mode, "params": r.Params}
		if r.Mode == messages.ModeURL {
			v["url"], v["host"], v["idn"], v["origin_mismatch"] = r.URL, r.Host, r.IDN, r.OriginMismatch
			v["host_mapped"] = r.HostMapped
		}
		if len(r.Fields) > 0 {
			v["fields"] = r.Fields
		}
		return v
	case *messages.RootsRequest:
		return map[string]any{}
	}
	return nil
}
