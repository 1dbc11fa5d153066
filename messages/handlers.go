package messages

import (
	"context"
	"time"
)

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
	// ToolsChanged, PromptsChanged and ResourcesChanged receive
	// notifications/{tools,prompts,resources}/list_changed, one at a time
	// with the other notifications (Notification no longer sees them). In
	// the modern era setting one makes the client open a
	// subscriptions/listen stream for the kinds the server says change
	// (listChanged); they advertise nothing.
	ToolsChanged     func(ctx context.Context, nc NotificationContext, c *ToolsChange)
	PromptsChanged   func(ctx context.Context, nc NotificationContext, c *PromptsChange)
	ResourcesChanged func(ctx context.Context, nc NotificationContext, c *ResourcesChange)
	// ResourceUpdated receives notifications/resources/updated for the
	// resources subscribed to (Client.Subscribe); Notification no longer
	// sees them.
	ResourceUpdated func(ctx context.Context, nc NotificationContext, u *ResourceUpdate)
	// RefreshLists makes the list-changed hooks receive the fresh list:
	// once no notification of that kind has come for RefreshDelay (0:
	// DefaultRefreshDelay), the client lists it and calls the hook once
	// for all of them.
	RefreshLists bool
	RefreshDelay time.Duration
}

// Listens reports whether a hook of h receives a server notification of
// method: Log the log entries, Progress (or else Notification) progress,
// a typed change hook (or else Notification) its change, Notification
// the rest.
func (h *Handlers) Listens(method string) bool {
	switch method {
	case MethodLog:
		return h.Log != nil
	case MethodProgress:
		return h.Progress != nil || h.Notification != nil
	case MethodElicitationComplete:
		return h.ElicitationComplete != nil || h.Notification != nil
	case MethodToolsListChanged:
		return h.ToolsChanged != nil || h.Notification != nil
	case MethodPromptsListChanged:
		return h.PromptsChanged != nil || h.Notification != nil
	case MethodResourcesListChanged:
		return h.ResourcesChanged != nil || h.Notification != nil
	case MethodResourceUpdated:
		return h.ResourceUpdated != nil || h.Notification != nil
	}
	return h.Notification != nil
}

// Changes are the subscriptions/listen kinds h's change hooks ask for
// (resource subscriptions apart: Client.Subscribe adds them).
func (h *Handlers) Changes() Subscriptions {
	return Subscriptions{ToolsListChanged: h.ToolsChanged != nil, PromptsListChanged: h.PromptsChanged != nil, ResourcesListChanged: h.ResourcesChanged != nil}
}
