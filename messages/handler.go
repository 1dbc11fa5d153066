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
// Callbacks run in a goroutine of their own. ctx ends when the handler's
// time is up (HandlerTimeout), when the server cancels its request, or when
// the client closes; a callback that ignores ctx is abandoned (and counted),
// its late answer discarded.

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
	// Form is the form's fields, typed, in the order the server wrote
	// them (nil in URL mode): build the prompt from it, not from
	// Params.RequestedSchema.
	Form   []FormField
	Params ElicitParams
	Raw    json.RawMessage
}

// RootsRequest is a roots/list request.
type RootsRequest struct {
	RequestContext
}

// NotificationContext is what notification callbacks learn.
type NotificationContext struct {
	Client   string
	ServerID string
	Era      Era
}
