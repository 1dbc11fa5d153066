package messages

import "encoding/json"

// The request types below are what input callbacks receive (see Handlers).

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
	// InputKey is a modern input request's key in the server's
	// inputRequests (empty for legacy requests).
	InputKey string
	// InputsInRound is how many input requests the modern server's round
	// holds, this one among them (0 for legacy requests).
	InputsInRound int
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
	// Mode is "form" or "url". A URL elicitation of 2025-11-25 has its id
	// in Params.ElicitationID: the id its completion names
	// (Handlers.ElicitationComplete).
	Mode string
	// URL mode: the full URL, the host it leads to, whether the host has a
	// punycode (xn--) label after IDNA conversion, and whether it lies off
	// the server's origin (always true when the origin is unknown).
	URL            string
	Host           string
	IDN            bool
	OriginMismatch bool
	// WrittenHost is the host as the URL writes it; HostMapped is true
	// when that is not Host, the host the URL leads to (beyond letter
	// case and an IDN's Unicode form): "https://example.com。evil.com/"
	// leads to example.com.evil.com. Show Host and warn
	// (guards.URLInfo.HostMapped).
	WrittenHost string
	HostMapped  bool
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
	// Client is the client's Name.
	Client string
	// ServerID is the operator-assigned id of the server.
	ServerID string
	// Era is the negotiated era of the connection.
	Era Era
}
