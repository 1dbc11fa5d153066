package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/conduitmcp/conduit/messages"
)

// handlerCtx is an input handler's ctx: the ctx its input made for it,
// which also leads back to the input (NotifyProgress). It lives inside the
// input, so a handler's ctx costs no allocation of its own.
type handlerCtx struct {
	context.Context
	in *input
}

// handlerKey finds the input behind a handler's ctx.
type handlerKey struct{}

func (c *handlerCtx) Value(key any) any {
	if key == (handlerKey{}) {
		return c.in
	}
	return c.Context.Value(key)
}

// InputContext is the RequestContext of the input request whose handler's
// ctx (or its receiving middleware's) ctx is; false for any other ctx.
func InputContext(ctx context.Context) (messages.RequestContext, bool) {
	in, _ := ctx.Value(handlerKey{}).(*input)
	if in == nil {
		return messages.RequestContext{}, false
	}
	return in.guard.Context, true
}

// progressSent is the last progress an input's handler reported.
type progressSent struct {
	mu   sync.Mutex
	last float64
	any  bool // a progress was reported
}

// advance records p when it is the first report or above the last one;
// otherwise it returns the last one and false.
func (s *progressSent) advance(p float64) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.any && p <= s.last {
		return s.last, false
	}
	s.last, s.any = p, true
	return p, true
}

// NotifyProgress sends notifications/progress to the server for the
// request the input handler whose ctx this is answers: legacy only, and
// only when that request carried _meta.progressToken. progress must grow
// with each report; total (0: unknown) and message ("": none) are optional.
// Every other case is the caller's mistake (KindUsage); a request that has
// ended gets its ctx's error.
func NotifyProgress(ctx context.Context, progress, total float64, message string) error {
	usage := func(format string, args ...any) error {
		return &messages.Error{Kind: messages.KindUsage, Method: messages.MethodProgress, Message: fmt.Sprintf(format, args...)}
	}
	in, _ := ctx.Value(handlerKey{}).(*input)
	if in == nil {
		return usage("NotifyProgress needs the ctx of an input handler (sampling, elicitation, roots)")
	}
	if in.guard.Context.RequestID.IsZero() {
		return usage("input requests embedded in a modern result have no channel back to the server: no progress can be sent for %s", in.guard.Method)
	}
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if err := json.Unmarshal(in.guard.Params, &p); err != nil || len(p.Meta.Token) == 0 || messages.IsNull(p.Meta.Token) {
		return usage("the server's %s request carried no progressToken", in.guard.Method)
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return usage("progress and total must be finite numbers")
	}
	if ctx.Err() != nil {
		return messages.ContextEnded(ctx, messages.MethodProgress)
	}
	if last, ok := in.progress.advance(progress); !ok {
		return usage("progress must grow with each report: %g is not above %g", progress, last)
	}
	params := map[string]any{"progressToken": p.Meta.Token, "progress": progress}
	if total != 0 {
		params["total"] = total
	}
	if message != "" {
		params["message"] = message
	}
	return in.shared.rt.Notify(messages.MethodProgress, params)
}
