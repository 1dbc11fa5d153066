package messages

import "context"

// Handlers is a client's handler set: one typed function per kind of input
// a server may ask for, the notification hooks, and the capability flags as
// data. A nil function is a kind the client does not implement: it is not
// advertised, and a server's request for it is refused before any callback
// runs. The zero value advertises nothing and listens to nothing.
//
// Input callbacks (Sampling, Elicitation, Roots) run in a goroutine of
// their own, several at once. Their ctx ends when the callback's time is up
// (HandlerTimeout), when the server cancels its request (legacy), when the
// call that asked ends or a sibling input of the same round fails (modern),
// or when the client closes. A callback that ignores ctx is abandoned,
// counted in Stats.AbandonedHandlers until it returns, and its late answer
// is discarded.
//
// Notification, Progress and Log run one at a time, in arrival order, in one
// goroutine. Their ctx ends when the client closes: what still waits is then
// discarded (Stats.NotificationsDiscarded), and a callback that ignores ctx
// is abandoned and counted like an input callback; Close does not wait for
// it, so a callback may call Close itself.
type Handlers struct {
	// Sampling answers sampling/createMessage; it is the approval point
	// for sampling. Set, it advertises "sampling".
	Sampling func(ctx context.Context, req *SamplingRequest) (*CreateMessageResult, error)
	// SamplingTools declares sampling.tools (2025-11-25 and later): the
	// Sampling callback can run the tools a server offers in a request.
	SamplingTools bool
	// Elicitation answers elicitation/create. Set, it advertises
	// "elicitation" with ElicitationModes. A user who declines is a result
	// ({Action: "decline"}), not an error.
	Elicitation func(ctx context.Context, req *ElicitationRequest) (*ElicitResult, error)
	// ElicitationModes are the modes declared ("form", "url"); empty means
	// form only. Other values are ignored.
	ElicitationModes []string
	// Roots answers roots/list. Set, it advertises "roots".
	Roots func(ctx context.Context, req *RootsRequest) (*ListRootsResult, error)
	// Notification receives server notifications other than log entries
	// (and other than progress when Progress is set), one at a time in
	// arrival order.
	Notification func(ctx context.Context, nc NotificationContext, n *Notification)
	// Progress, when set, receives every notifications/progress decoded
	// (the Notification hook then no longer sees them), one at a time in
	// arrival order with the other notifications. A progress notification
	// without a token or a numeric progress is dropped and counted in
	// Stats.Malformed.
	Progress func(ctx context.Context, nc NotificationContext, p *Progress)
	// Log receives sanitised server log entries (notifications/message),
	// one at a time in arrival order, interleaved with notifications.
	Log func(ctx context.Context, nc NotificationContext, entry *LoggingMessage)
	// ElicitationComplete, when set, receives each
	// notifications/elicitation/complete (2025-11-25) of a URL elicitation
	// the client was asked for (elicitation/create, or a -32042 error),
	// with that request, one at a time in arrival order with the other
	// notifications (the Notification hook then no longer sees them). A
	// completion of an id never issued, forgotten or already completed is
	// dropped and counted in Stats.UnknownResponses.
	ElicitationComplete func(ctx context.Context, nc NotificationContext, c *ElicitationComplete)
}

// Listens reports whether a hook of h receives a server notification of
// method: Log the log entries, Progress (or else Notification) progress,
// Notification the rest.
func (h *Handlers) Listens(method string) bool {
	switch method {
	case MethodLog:
		return h.Log != nil
	case MethodProgress:
		return h.Progress != nil || h.Notification != nil
	case MethodElicitationComplete:
		return h.ElicitationComplete != nil || h.Notification != nil
	}
	return h.Notification != nil
}
