package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conduitmcp/conduit/messages"
)

// MethodHandler handles one JSON-RPC method: params as JSON (nil for
// none), the result as JSON. For a notification the result is nil.
type MethodHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// Middleware wraps a MethodHandler: it may look at the method, params,
// result, error and timing, rewrite them (see Options.SendingMiddleware
// and Options.ReceivingMiddleware for what each side allows), or fail the
// request without calling next. It runs on the goroutine of the operation
// (the caller's for a request the client sends; the handler's for a
// request the client answers), so it may block only as long as the
// operation may.
type Middleware func(next MethodHandler) MethodHandler

// chain wraps final in mw: mw[0] outermost, as the list reads.
func chain(mw []Middleware, final MethodHandler) MethodHandler {
	for i := len(mw) - 1; i >= 0; i-- {
		final = mw[i](final)
	}
	return final
}

// sendThrough runs a request the client sends through
// Options.SendingMiddleware, send being what sends it. A middleware's own
// error that is not an *Error becomes a KindUsage one (the host's code
// refused the request); a panic in the chain fails the request with
// KindInternal, and the client goes on.
func (c *Client) sendThrough(ctx context.Context, method string, params json.RawMessage, send MethodHandler) (res json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.opts.Logger.Error("a sending middleware panicked", "method", method, "panic", p)
			res, err = nil, &Error{Kind: KindInternal, Method: method, Message: fmt.Sprintf("a sending middleware panicked: %v", p)}
		}
	}()
	final := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if params != nil && !json.Valid(params) {
			return nil, &Error{Kind: KindUsage, Method: method, Message: "a sending middleware passed params that are not valid JSON"}
		}
		return send(ctx, method, params)
	}
	res, err = chain(c.opts.SendingMiddleware, final)(ctx, method, params)
	var ce *Error
	if err != nil && !errors.As(err, &ce) {
		err = &Error{Kind: KindUsage, Method: method, Message: "refused by a sending middleware", Err: err}
	}
	return res, err
}

// receiving wraps each handler of h in Options.ReceivingMiddleware, inside
// the guards: a middleware sees the params the guards let through and its
// result still goes through the answer's checks, so it cannot widen what
// the guards allow. The params are the server's, read only: next gives
// the handler the typed request the guards checked, whatever params it is
// passed. A middleware may refuse (an error, an *RPCError for its code)
// or rewrite the result; its panic is the handler's (-32603 in the legacy
// era, KindInputHandler in the modern one; a notification's is logged and
// skipped).
func receiving(h Handlers, mw []Middleware) Handlers {
	if len(mw) == 0 {
		return h
	}
	if f := h.Sampling; f != nil {
		h.Sampling = func(ctx context.Context, r *SamplingRequest) (*CreateMessageResult, error) {
			return answerThrough(ctx, mw, messages.MethodCreateMessage, r.Params, func(ctx context.Context) (*CreateMessageResult, error) { return f(ctx, r) })
		}
	}
	if f := h.Elicitation; f != nil {
		h.Elicitation = func(ctx context.Context, r *ElicitationRequest) (*ElicitResult, error) {
			return answerThrough(ctx, mw, messages.MethodElicit, r.Params, func(ctx context.Context) (*ElicitResult, error) { return f(ctx, r) })
		}
	}
	if f := h.Roots; f != nil {
		h.Roots = func(ctx context.Context, r *RootsRequest) (*ListRootsResult, error) {
			return answerThrough(ctx, mw, messages.MethodListRoots, nil, func(ctx context.Context) (*ListRootsResult, error) { return f(ctx, r) })
		}
	}
	if f := h.Notification; f != nil {
		h.Notification = func(ctx context.Context, nc NotificationContext, n *Notification) {
			notifyThrough(ctx, mw, n.Method, n.Params, func(ctx context.Context) { f(ctx, nc, n) })
		}
	}
	h.Log = notifyHook(h.Log, mw, messages.MethodLog)
	h.ElicitationComplete = notifyHook(h.ElicitationComplete, mw, messages.MethodElicitationComplete)
	h.ToolsChanged = notifyHook(h.ToolsChanged, mw, messages.MethodToolsListChanged)
	h.PromptsChanged = notifyHook(h.PromptsChanged, mw, messages.MethodPromptsListChanged)
	h.ResourcesChanged = notifyHook(h.ResourcesChanged, mw, messages.MethodResourcesListChanged)
	h.ResourceUpdated = notifyHook(h.ResourceUpdated, mw, messages.MethodResourceUpdated)
	h.Progress = notifyHook(h.Progress, mw, messages.MethodProgress)
	return h
}

// notifyHook runs a typed notification hook f through mw as method, its
// value as the params the middleware sees; nil stays nil.
func notifyHook[T any](f func(context.Context, NotificationContext, T), mw []Middleware, method string) func(context.Context, NotificationContext, T) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context, nc NotificationContext, v T) {
		notifyThrough(ctx, mw, method, v, func(ctx context.Context) { f(ctx, nc, v) })
	}
}

// answerThrough runs a server request's handler through mw; params is
// what the middleware sees of the request.
func answerThrough[R any](ctx context.Context, mw []Middleware, method string, params any, handle func(context.Context) (*R, error)) (*R, error) {
	raw, err := paramsJSON(params)
	if err != nil {
		return nil, err
	}
	var direct *R // the handler's own result, when no middleware replaced it
	var directJSON json.RawMessage
	final := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		res, err := handle(ctx)
		if err != nil {
			return nil, err
		}
		if directJSON, err = json.Marshal(res); err != nil {
			return nil, err
		}
		direct = res
		return directJSON, nil
	}
	out, err := chain(mw, final)(ctx, method, raw)
	if err != nil {
		return nil, err
	}
	if direct != nil && string(out) == string(directJSON) {
		return direct, nil // unchanged: the handler's value, unknown fields and all
	}
	var res R
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("a receiving middleware's result for %s does not decode: %w", method, err)
	}
	return &res, nil
}

// notifyThrough runs a notification's callback through mw.
func notifyThrough(ctx context.Context, mw []Middleware, method string, params any, handle func(context.Context)) {
	raw, err := paramsJSON(params)
	if err != nil {
		raw = nil
	}
	final := func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		handle(ctx)
		return nil, nil
	}
	_, _ = chain(mw, final)(ctx, method, raw)
}

// paramsJSON is params as JSON: raw JSON as it is, a value marshalled.
func paramsJSON(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	return json.Marshal(params)
}
