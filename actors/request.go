package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
)

// Default handler timeouts (the seed's :handler_timeout).
const (
	DefaultHandlerTimeout     = 60 * time.Second
	DefaultElicitationTimeout = 5 * time.Minute
)

// requestSpec is everything a request child needs, fixed at spawn.
type requestSpec struct {
	id      messages.ID
	method  string
	params  json.RawMessage
	hint    string // transport's related-call hint
	version string
	origin  string
	base    messages.RequestContext // client, server id, era, client assigns
	timeout time.Duration
	tracker *actor.PID
	shared  *shared
}

// request is the child actor for one legacy server request. It asks the
// tracker which call the request belongs to (pausing that call's deadline),
// runs the guards, starts the handler in a goroutine it owns and arms its
// own timer; whichever of answer, timeout or server cancellation comes first
// decides what is sent. It never blocks in Receive.
type request struct {
	spec     requestSpec
	in       *guards.Input
	req      any
	cancel   context.CancelFunc
	handle   *supervisor.Handle
	timer    *time.Timer
	finished bool
}

func (r *request) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		ctx.Request(r.spec.tracker, &inputStarted{token: ctx.Self(), hint: r.spec.hint})
	case *inputGrant:
		r.start(ctx, m)
	case *handlerDone:
		if !r.finished {
			r.answer(ctx, m.out)
		}
	case *handlerTimedOut:
		if r.finished {
			return
		}
		r.giveUp()
		e := &messages.RPCError{Code: messages.CodeInternalError, Message: fmt.Sprintf("Internal error: input handler timed out after %s", r.spec.timeout)}
		r.finish(ctx, messages.NewErrorResponse(r.spec.id, e), guards.OutcomeTimeout, e, nil)
	case *cancelInput:
		if r.finished {
			return
		}
		r.giveUp()
		r.finish(ctx, nil, guards.OutcomeCancelled, nil, nil)
	case *actor.Stopping:
		// Only Conduit's code here: a panic in Stopping leaves a child
		// that never terminates.
		if !r.finished {
			r.giveUp()
			r.finish(ctx, nil, guards.OutcomeCancelled, nil, nil)
		}
	}
}

func (r *request) start(ctx actor.Context, g *inputGrant) {
	s := r.spec
	rc := s.base
	rc.RequestID = s.id
	if g.hasCall {
		rc.RelatedRequestID, rc.Assigns = g.related, g.assigns
	}
	r.in = &guards.Input{Method: s.method, Params: s.params, Context: rc, Version: s.version, CallsInFlight: g.inFlight, Origin: s.origin}
	req, refusal := s.shared.guards.Before(r.in)
	if refusal != nil {
		r.finish(ctx, messages.NewErrorResponse(s.id, refusal.Err), refusal.Outcome, refusal.Err, nil)
		return
	}
	r.req = req
	hctx, cancel := context.WithCancel(s.shared.ctx)
	r.cancel = cancel
	self, root := ctx.Self(), ctx.ActorSystem().Root
	handlers := &s.shared.handlers
	r.handle = supervisor.Go(hctx, &s.shared.abandoned, func(c context.Context) (any, error) {
		return Answer(c, handlers, req)
	}, func(out supervisor.Outcome) { root.Send(self, &handlerDone{out: out}) })
	r.timer = time.AfterFunc(s.timeout, func() { root.Send(self, &handlerTimedOut{}) })
}

// answer turns the handler's outcome into the response, through the
// guards' after-checks.
func (r *request) answer(ctx actor.Context, out supervisor.Outcome) {
	s := r.spec
	if out.Err != nil && errors.Is(out.Err, context.Canceled) && s.shared.ctx.Err() != nil {
		// The client is closing: the handler gave up because we asked it
		// to. That is a cancellation, not a handler failure.
		r.finish(ctx, nil, guards.OutcomeCancelled, nil, nil)
		return
	}
	if out.Err != nil {
		var rpcErr *messages.RPCError
		var panicErr *supervisor.PanicError
		switch {
		case errors.As(out.Err, &panicErr):
			s.shared.logger.Error("input handler panicked", "method", s.method, "id", s.id.String(), "panic", fmt.Sprint(panicErr.Value), "stack", string(panicErr.Stack))
			rpcErr = &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: input handler panicked"}
		case errors.As(out.Err, &rpcErr):
			// The handler refused with its own code: sent as is.
		default:
			s.shared.logger.Warn("input handler failed", "method", s.method, "id", s.id.String(), "err", out.Err)
			rpcErr = &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: input handler failed"}
		}
		r.finish(ctx, messages.NewErrorResponse(s.id, rpcErr), guards.OutcomeRefused, rpcErr, nil)
		return
	}
	result, refusal := s.shared.guards.After(r.in, r.req, out.Result)
	if refusal != nil {
		r.finish(ctx, messages.NewErrorResponse(s.id, refusal.Err), refusal.Outcome, refusal.Err, nil)
		return
	}
	frame, err := messages.NewResult(s.id, result)
	if err != nil {
		e := &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: result could not be encoded"}
		r.finish(ctx, messages.NewErrorResponse(s.id, e), guards.OutcomeRefused, e, nil)
		return
	}
	r.finish(ctx, frame, guards.OutcomeAnswered, nil, result)
}

// giveUp cancels the handler's context and, if it is still running,
// abandons it (counted until it returns).
func (r *request) giveUp() {
	if r.cancel != nil {
		r.cancel()
	}
	if r.handle != nil && r.handle.Abandon() {
		// Info, not Warn: at a timeout or a cancel the handler is still
		// running by definition; it is counted (Stats.AbandonedHandlers)
		// until it returns, which is what an operator watches.
		r.spec.shared.logger.Info("input handler still running after its request ended: abandoned", "method", r.spec.method, "id", r.spec.id.String())
	}
}

func (r *request) finish(ctx actor.Context, frame *messages.Frame, outcome string, rpcErr *messages.RPCError, result any) {
	r.finished = true
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.cancel != nil {
		r.cancel()
	}
	s := r.spec
	rc := s.base
	if r.in != nil {
		rc = r.in.Context
	}
	s.shared.audit(messages.AuditRecord{
		Time: time.Now(), ServerID: rc.ServerID, Era: rc.Era, Method: s.method,
		RequestID: s.id, RelatedRequestID: rc.RelatedRequestID,
		Request: AuditView(r.req), Outcome: outcome, Result: result,
	}, rpcErr)
	ctx.Send(ctx.Parent(), &childReply{child: ctx.Self(), frame: frame})
}

// Answer calls the handler method that matches req, as produced by the
// guards. It is shared by the legacy request child and modern MRTR.
func Answer(ctx context.Context, h *messages.Handlers, req any) (any, error) {
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

// AuditView is the part of a request recorded by the audit hook: the
// params as the handler saw them, plus elicitation's URL verdict.
func AuditView(req any) any {
	switch r := req.(type) {
	case *messages.SamplingRequest:
		return r.Params
	case *messages.ElicitationRequest:
		v := map[string]any{"mode": r.Mode, "params": r.Params}
		if r.Mode == messages.ModeURL {
			v["url"], v["host"], v["idn"], v["origin_mismatch"] = r.URL, r.Host, r.IDN, r.OriginMismatch
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

var _ = slog.LevelInfo
