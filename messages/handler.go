package messages

import (
	"context"
	"encoding/json"
)

// A handler is any value. It implements zero or more of the interfaces
// below, found by type assertion; the client advertises exactly the
// capabilities whose interface is implemented, and refuses a server's request
// for anything else before any callback runs.
//
// Input callbacks (sampling, elicitation, roots) run in a goroutine of
// their own, several at once. Their ctx ends when the handler's time is up
// (HandlerTimeout), when the server cancels its request (legacy), when the
// call that asked ends or a sibling input of the same round fails (modern),
// or when the client closes. A callback that ignores ctx is abandoned,
// counted in Stats.AbandonedHandlers until it returns, and its late answer
// is discarded.
//
// Notification and log callbacks run one at a time, in arrival order, in
// one goroutine. Their ctx ends when the client closes: what still waits is
// then discarded (Stats.NotificationsDiscarded), and a callback that ignores
// ctx is abandoned and counted like an input callback; Close does not wait
// for it, so a callback may call Close itself.

// SamplingHandler answers sampling/createMessage; it is the approval point
// for sampling. Implementing it advertises "sampling".
type SamplingHandler interface {
	HandleSampling(ctx context.Context, req *SamplingRequest) (*CreateMessageResult, error)
}

// SamplingToolUser is implemented by sampling handlers that can run the
// tools a server offers in a sampling request; only then is sampling.tools
// declared (2025-11-25 and later).
type SamplingToolUser interface {
	UsesSamplingTools() bool
}

// ElicitationHandler answers elicitation/create. Implementing it advertises
// "elicitation" with the modes of ElicitationModes (form only by default).
// A user who declines is a result ({Action: "decline"}), not an error.
type ElicitationHandler interface {
	HandleElicitation(ctx context.Context, req *ElicitationRequest) (*ElicitResult, error)
}

// ElicitationModer declares the elicitation modes a handler supports
// ("form", "url"). Without it, a handler supports form mode only.
type ElicitationModer interface {
	ElicitationModes() []string
}

// RootsLister answers roots/list. Implementing it advertises "roots".
type RootsLister interface {
	ListRoots(ctx context.Context, req *RootsRequest) (*ListRootsResult, error)
}

// NotificationHandler receives server notifications other than log
// entries, one at a time in arrival order.
type NotificationHandler interface {
	HandleNotification(ctx context.Context, nc NotificationContext, n *Notification)
}

// LogHandler receives sanitised server log entries (notifications/message),
// one at a time in arrival order, interleaved with notifications.
type LogHandler interface {
	HandleLog(ctx context.Context, nc NotificationContext, entry *LoggingMessage)
}

// RequestContext is what every input callback learns about the request.
type RequestContext struct {
	// Client is the client's Name.
	Client string
	// ServerID is the operator-assigned id of the asking server.
	ServerID string
	// Era is the era of the connection.
	Era Era
	// Assigns are the related call's assigns, or the client's when the
	// request is not tied to a call.
	Assigns map[string]any
	// RelatedRequestID is the in-flight client request this input belongs
	// to; zero when none (always zero for modern input).
	RelatedRequestID ID
	// RequestID is the server's JSON-RPC id of a legacy request (zero for
	// modern input requests, which are keyed instead).
	RequestID ID
}

// SamplingRequest is a sampling/createMessage request after the guards.
type SamplingRequest struct {
	RequestContext
	// Params are the params after the guards (maxTokens clamped,
	// includeContext coerced); Raw is what the server sent.
	Params CreateMessageParams
	Raw    json.RawMessage
}

// FieldInfo describes one field of an elicitation form.
type FieldInfo struct {
	// SensitiveSuspected is true for a field that looks like it asks for a
	// secret (password, token, API key, card number…).
	SensitiveSuspected bool `json:"sensitive_suspected"`
}

// ElicitationRequest is an elicitation/create request after the guards.
type ElicitationRequest struct {
	RequestContext
	// Mode is "form" or "url".
	Mode string
	// URL mode: the full URL, its host, whether the host has a punycode
	// (xn--) label after IDNA conversion, and whether it lies off the
	// server's origin (always true when the origin is unknown).
	URL            string
	Host           string
	IDN            bool
	OriginMismatch bool
	// Fields flags the form's fields by name.
	Fields map[string]FieldInfo
	Params ElicitParams
	Raw    json.RawMessage
}

// RootsRequest is a roots/list request.
type RootsRequest struct {
	RequestContext
}

// NotificationContext is what notification callbacks learn.
type NotificationContext struct {
	// Client is the client's Name.
	Client string
	// ServerID is the operator-assigned id of the server.
	ServerID string
	// Era is the negotiated era of the connection.
	Era Era
}
