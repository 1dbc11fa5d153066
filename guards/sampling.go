package guards

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/conduitmcp/conduit/messages"
)

// samplingWire decodes CreateMessageParams with maxTokens kept raw, so a
// missing, fractional, string or huge value gets a precise answer.
type samplingWire struct {
	messages.CreateMessageParams
	MaxTokens json.RawMessage `json:"maxTokens"`
}

// beforeSampling applies the sampling rules, in this order: idle (legacy),
// shape (-32602), tools capability (-32602), tool iterations, then the
// maxTokens clamp and the includeContext coercion.
func (p *Pipeline) beforeSampling(in *Input) (any, *Refusal) {
	cfg := p.cfg.Sampling
	if in.Context.Era == messages.EraLegacy && in.CallsInFlight <= 0 && !cfg.AllowIdle {
		return nil, refuse(cfg.RejectionCode, "Sampling rejected: no call in flight")
	}
	mem := &samplingMem{}
	w, r := decodeSampling(in.Params, mem, in.ParamsValid)
	if r != nil {
		return nil, r
	}
	params := w.CreateMessageParams
	maxTokens, r := positiveInt(w.MaxTokens, cfg.MaxTokens)
	if r != nil {
		return nil, r
	}
	params.MaxTokens = maxTokens
	for i, m := range params.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, invalidParams("messages[%d].role must be \"user\" or \"assistant\"", i)
		}
		if len(m.Content.Blocks) == 0 {
			return nil, invalidParams("messages[%d].content is required", i)
		}
	}
	// sampling.tools does not exist before 2025-11-25: declared or not,
	// the client does not advertise it there.
	if !cfg.Tools || olderThan(in.Version, messages.Version20251125) {
		if w.tools {
			return nil, invalidParams("tools require the sampling.tools capability, which this client did not declare")
		}
		if w.toolChoice {
			return nil, invalidParams("toolChoice requires the sampling.tools capability, which this client did not declare")
		}
	}
	if n := toolTurns(params.Messages); n > cfg.MaxToolIterations {
		return nil, refuse(cfg.RejectionCode, "Sampling rejected: more than %d tool iterations", cfg.MaxToolIterations)
	}
	// includeContext: absent stays absent; "none" stays; anything else
	// ("thisServer", "allServers", unknown) becomes "none" unless the
	// operator allowed context, and even then an unknown value becomes
	// "none".
	switch params.IncludeContext {
	case "", "none":
	case "thisServer", "allServers":
		if !cfg.Context {
			params.IncludeContext = "none"
		}
	default:
		params.IncludeContext = "none"
	}
	mem.req = messages.SamplingRequest{RequestContext: in.Context, Params: params, Raw: in.Params}
	return &mem.req, nil
}

// positiveInt reads maxTokens: a JSON integer literal greater than zero,
// clamped to limit (a positive integer too large for int is clamped too).
func positiveInt(raw json.RawMessage, limit int) (int, *Refusal) {
	s := string(bytes.TrimSpace(raw))
	if !jsonInteger(s) {
		return 0, invalidParams("maxTokens must be a positive integer, got %.32s", s)
	}
	if s[0] == '-' || s == "0" {
		return 0, invalidParams("maxTokens must be a positive integer, got %.32s", s)
	}
	if len(s) > 18 { // beyond int64: a positive integer, so clamped
		return limit, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, invalidParams("maxTokens must be a positive integer, got %.32s", s)
	}
	if n > int64(limit) {
		return limit, nil
	}
	return int(n), nil
}

// jsonInteger reports whether s is a JSON number literal without fraction
// or exponent: -?(0|[1-9][0-9]*).
func jsonInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// toolTurns counts the assistant messages holding at least one tool_use
// block: each is one iteration of a tool loop.
func toolTurns(msgs []messages.SamplingMessage) int {
	n := 0
	for _, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content.Blocks {
			if b.Type == "tool_use" {
				n++
				break
			}
		}
	}
	return n
}

// afterSampling checks the handler's answer: it must name the model and
// carry content; an empty role becomes "assistant".
func (p *Pipeline) afterSampling(r *messages.CreateMessageResult) (any, *Refusal) {
	if r == nil {
		return nil, internalError("sampling handler returned no result")
	}
	if r.Model == "" {
		return nil, internalError("sampling result has no model")
	}
	if len(r.Content.Blocks) == 0 {
		return nil, internalError("sampling result has no content")
	}
	if r.Role != "" {
		return r, nil // nothing to complete: the handler's value, unchanged
	}
	out := *r
	out.Role = "assistant"
	return &out, nil
}

// olderThan reports whether version is a revision before min (revisions
// are dates, ordered as strings); "" is not older than anything.
func olderThan(version, min string) bool { return version != "" && version < min }
