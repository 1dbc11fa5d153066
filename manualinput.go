package conduit

import (
	"encoding/json"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/messages"
)

// KindInputRequired: a modern call made WithManualInput stopped at the
// server's input_required result; errors.As gets the
// *InputRequiredError.
const KindInputRequired = messages.KindInputRequired

// InputRequiredError is [messages.InputRequiredError]: the input_required
// result of a modern call made WithManualInput (Method, InputRequests by
// key, each an [InputRequest] {Method, Params} as the server sent it, and
// RequestState, byte for byte), found with errors.As.
type InputRequiredError = messages.InputRequiredError

// InputRequest is [messages.InputRequest], one request of an
// input_required result: Method and Params as the server sent them.
type InputRequest = messages.InputRequest

// manualInput is what WithManualInput and WithInputResponses ask of one
// call.
type manualInput struct {
	manual    bool            // WithManualInput
	answered  bool            // WithInputResponses
	state     json.RawMessage // its requestState
	responses map[string]any  // its inputResponses
}

// WithManualInput makes a modern call that the server answers with
// input_required return it, as an error of KindInputRequired whose Err is
// an *InputRequiredError, instead of answering it with the handlers: the
// caller answers its InputRequests itself (the handlers' guards do not run
// on them, nor are a form's defaults filled in: check them as an
// elicitation/create's would be) and calls again, the same call with
// WithInputResponses. The client still declares only the capabilities its
// handlers implement, and a server asks only for those. A state-only
// input_required (no input requests) is still retried as usual, and a
// modern task's input (tasks/get) is answered by the handlers.
// Options.MaxRounds counts the rounds of one call: a caller answering by
// hand keeps its own count.
//
// In the legacy era it has no effect: a server asks for input with
// requests of its own, answered by the handlers while the call runs.
func WithManualInput() CallOption {
	return func(o *callOptions) {
		m := o.manual.copy()
		m.manual = true
		o.manual = m
	}
}

// WithInputResponses makes the call the follow-up of one that stopped at
// input_required (WithManualInput): its request carries responses (by the
// keys of the InputRequests: a *CreateMessageResult, *ElicitResult or
// *ListRootsResult each, or anything that marshals to one) and state (the
// RequestState, exactly as received; nil when the server sent none). Give
// the same method and params as the first call. Without WithManualInput a
// further input_required is answered by the handlers. In the legacy era
// the call fails with KindUsage.
func WithInputResponses(state json.RawMessage, responses map[string]any) CallOption {
	return func(o *callOptions) {
		m := o.manual.copy()
		m.answered, m.state, m.responses = true, state, responses
		if responses == nil {
			m.responses = map[string]any{}
		}
		o.manual = m
	}
}

// copy returns a copy of m (a new one when m is nil): an option never
// changes what another call's options point to.
func (m *manualInput) copy() *manualInput {
	if m == nil {
		return &manualInput{}
	}
	cp := *m
	return &cp
}

// apply sets a modern call's manual input.
func (m *manualInput) apply(mod *actors.Modern) {
	if m == nil {
		return
	}
	mod.Manual = m.manual
	if m.answered {
		mod.Responses, mod.State = m.responses, m.state
	}
}
