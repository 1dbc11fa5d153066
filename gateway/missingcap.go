package gateway

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/messages"
)

// A legacy upstream was told the gateway's capabilities at initialize, so
// during a modern client's call it may ask for input the client did not
// declare. The input is refused upstream (as for a legacy client), and the
// downstream call is answered as the 2026-07-28 spec has a server answer a
// request it cannot serve without a capability the client lacks:
// -32021 MissingRequiredClientCapability, data.requiredCapabilities naming
// what was asked (decision 68). The upstream call is cancelled: nobody can
// resume it.

// neededCapability is the client capability an input request needs, in
// the shape of ClientCapabilities.
func neededCapability(method, mode string) map[string]any {
	switch method {
	case messages.MethodCreateMessage:
		return map[string]any{"sampling": map[string]any{}}
	case messages.MethodElicit:
		if mode == messages.ModeURL {
			return map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
		}
		return map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	case messages.MethodListRoots:
		return map[string]any{"roots": map[string]any{}}
	}
	return map[string]any{}
}

// lacks records that the upstream asked pc's client for input of a
// capability it did not declare (need), and cancels the upstream call.
// The downstream request waiting for pc, or the retry of its parked round,
// gets missingErr.
func (pc *pendingCall) lacks(method string, need map[string]any) {
	pc.mu.Lock()
	if pc.missing == nil {
		pc.missing = map[string]any{}
	}
	for k, v := range need {
		if have, ok := pc.missing[k].(map[string]any); ok {
			if more, ok := v.(map[string]any); ok {
				maps.Copy(have, more)
				continue
			}
		}
		pc.missing[k] = v
	}
	pc.asked = append(pc.asked, method)
	held := slices.Collect(maps.Values(pc.held))
	pc.mu.Unlock()
	pc.cancel()
	// The inputs the client holds are answered now: nobody resumes them.
	for _, a := range held {
		a.fail(errCallEnded)
	}
}

// fail answers a with err unless it has its answer already.
func (a *ask) fail(err error) {
	select {
	case a.reply <- reply{err: err}:
	default:
	}
}

// missingErr is the -32021 error of a call whose upstream asked for input
// the client did not declare, nil when it did not.
func (pc *pendingCall) missingErr() *jsonrpc.Error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.missing == nil {
		return nil
	}
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": pc.missing})
	asked := slices.Clone(pc.asked)
	slices.Sort(asked)
	asked = slices.Compact(asked)
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Data: data,
		Message: "Missing required client capability: the upstream server asked for " + strings.Join(asked, ", ") + ", which the client did not declare"}
}
