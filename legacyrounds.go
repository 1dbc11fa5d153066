package conduit

import (
	"encoding/json"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
)

// asksForInput reports whether a legacy session's result of method asks
// for input, as a go-sdk (v1.8.0) server's does when its tool asks for a
// second round: it turns a handler's first input_required into
// server→client requests for a legacy client and reinvokes the handler
// once; when that asks again, the legacy client gets the round as a result
// with inputRequests and requestState, no resultType. Conduit answers it as
// it answers a modern round: each request through the input pipeline (the
// guards, the handlers, the after-checks), then the same request again
// with inputResponses and the requestState as received, until a result
// asks for nothing, under Options.MaxRounds (then KindProtocol, counted in
// Stats.RoundsCapped). Only the methods that take rounds (tools/call,
// prompts/get, resources/read) are read so.
func asksForInput(method string, res json.RawMessage) bool {
	switch method {
	case messages.MethodCallTool, messages.MethodGetPrompt, messages.MethodReadResource:
		return era.AsksForInput(res)
	}
	return false
}
