package messages

import (
	"encoding/json"
	"fmt"
)

// KindInputRequired: a modern call made with WithManualInput stopped at an
// input_required result, for the caller to answer (its Err is an
// *InputRequiredError). Not a failure of the server nor of the client.
const KindInputRequired Kind = "input_required"

// InputRequest is one entry of a modern input_required result's
// inputRequests, as the server sent it: Method (sampling/createMessage,
// elicitation/create or roots/list) and its Params.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequiredError is the input_required result of a modern call made
// with WithManualInput, given to the caller instead of the handlers: the
// Err of a KindInputRequired *Error, found with errors.As. Answer each
// request under its key and call again with WithInputResponses(
// RequestState, answers).
type InputRequiredError struct {
	// Method is the call's method (tools/call, resources/read,
	// prompts/get).
	Method string
	// InputRequests are the server's requests by the key it gave them.
	InputRequests map[string]InputRequest
	// RequestState is the server's opaque state, byte for byte as it sent
	// it (a JSON string), or nil when it sent none: pass it back as it is.
	RequestState json.RawMessage
}

func (e *InputRequiredError) Error() string {
	return fmt.Sprintf("%s: the server asks for %d input(s)", e.Method, len(e.InputRequests))
}
