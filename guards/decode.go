package guards

import (
	"encoding/json"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
)

// The guards decode each request's params once. The common case (valid
// JSON, plain keys, each member once and of its type) is read by hand in
// one pass over the members: the fast decoders below. Anything else (a
// member of the wrong type, a repeated key, a key that matches a field only
// when case is ignored, an escaped key, a missing member a rule asks for)
// makes them report false, and the request takes the general path through
// encoding/json, which words every refusal. A fast decoder reporting true
// gives exactly what the general path gives (decode_test.go holds them to
// it). The pieces (a struct's members, an array, a content block) are
// shared with the Client's fast paths: internal/jsonscan and
// messages.FastContentBlock.

// decodedSampling are sampling params as the sampling rules read them.
type decodedSampling struct {
	samplingWire
	// tools and toolChoice report whether the members are present and
	// not null.
	tools, toolChoice bool
}

var samplingNames = []string{"messages", "modelPreferences", "systemPrompt", "includeContext", "temperature",
	"maxTokens", "stopSequences", "metadata", "tools", "toolChoice", "task", "_meta"}

// decodeSampling decodes sampling params, refusing params that are not an
// object, lack "messages" (an array) or "maxTokens", or do not decode.
func decodeSampling(raw json.RawMessage, mem *samplingMem, valid bool) (decodedSampling, *Refusal) {
	if s, ok := fastSampling(raw, mem, valid); ok {
		return s, nil
	}
	return decodeSamplingJSON(raw)
}

// decodeSamplingJSON is decodeSampling through encoding/json.
func decodeSamplingJSON(raw json.RawMessage) (decodedSampling, *Refusal) {
	fields, r := rawFields(raw)
	if r != nil {
		return decodedSampling{}, r
	}
	msgs, ok := fields["messages"]
	if !ok || messages.FirstByte(msgs) != '[' {
		return decodedSampling{}, invalidParams("messages must be an array")
	}
	mt, ok := fields["maxTokens"]
	if !ok || messages.IsNull(mt) {
		return decodedSampling{}, invalidParams("maxTokens is required")
	}
	var s decodedSampling
	if r := decode(raw, &s.samplingWire); r != nil {
		return decodedSampling{}, r
	}
	// encoding/json fills Tools from "Tools" or "TOOLS" too (it ignores
	// case): what the handler would get counts, not only the exact key.
	s.tools = present(fields, "tools") || given(s.Tools)
	s.toolChoice = present(fields, "toolChoice") || given(s.ToolChoice)
	return s, nil
}

// samplingMem is one allocation for what a sampling request of one
// message with one content block (the common shape) is made of: the
// request the handler receives, its message and its content block. The
// fast decoder fills msg and block in place of slices of their own; a
// request of more messages or blocks grows them as before (both slices
// have capacity 1, so a handler's append copies).
type samplingMem struct {
	req   messages.SamplingRequest
	msg   [1]messages.SamplingMessage
	block [1]messages.ContentBlock
}

// fastSampling is decodeSampling's fast decoder. mem, if not nil, lends
// the first message and its single content block their storage.
func fastSampling(raw json.RawMessage, mem *samplingMem, valid bool) (decodedSampling, bool) {
	var s decodedSampling
	if !valid && !jsonscan.Valid(raw) {
		return s, false
	}
	p := &s.CreateMessageParams
	var msgs []messages.SamplingMessage
	var block []messages.ContentBlock
	if mem != nil {
		msgs, block = mem.msg[:0], mem.block[:0]
	}
	message := func(raw []byte) (messages.SamplingMessage, bool) {
		m, ok := samplingMessage(raw, block)
		block = nil // lent once, to the first message
		return m, ok
	}
	ok := jsonscan.Struct(raw, samplingNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "messages":
			p.Messages, ok = jsonscan.SliceInto(msgs, v, message)
		case "systemPrompt":
			p.SystemPrompt, ok = jsonscan.String(v)
		case "includeContext":
			p.IncludeContext, ok = wireStrings.String(v)
		case "temperature":
			p.Temperature, ok = jsonscan.FloatPointer(v)
		case "maxTokens":
			// Only read by positiveInt, never handed on: not copied.
			s.MaxTokens, ok = v, !jsonscan.IsNull(v)
		case "stopSequences":
			if !jsonscan.IsNull(v) {
				p.StopSequences, ok = jsonscan.Slice(v, jsonscan.String)
			}
		case "modelPreferences":
			p.ModelPreferences = jsonscan.Raw(v)
		case "metadata":
			p.Metadata = jsonscan.Raw(v)
		case "tools":
			p.Tools, s.tools = jsonscan.Raw(v), !jsonscan.IsNull(v)
		case "toolChoice":
			p.ToolChoice, s.toolChoice = jsonscan.Raw(v), !jsonscan.IsNull(v)
		case "task":
			p.Task = jsonscan.Raw(v)
		case "_meta":
			p.Meta = jsonscan.Raw(v)
		}
		return ok
	})
	// Without messages or maxTokens, the general path words the refusal.
	return s, ok && p.Messages != nil && s.MaxTokens != nil
}

// wireStrings are the values of the params' enumerated strings (roles,
// elicitation modes, includeContext), decoded without an allocation.
var wireStrings = jsonscan.NewInterner("user", "assistant", messages.ModeForm, messages.ModeURL, "none", "thisServer", "allServers")

// samplingMessage decodes one element of "messages"; a single content
// block (not an array) goes in block's storage when it has room.
func samplingMessage(raw []byte, block []messages.ContentBlock) (messages.SamplingMessage, bool) {
	var m messages.SamplingMessage
	ok := jsonscan.Struct(raw, []string{"role", "content", "_meta"}, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "role":
			m.Role, ok = wireStrings.String(v)
		case "content":
			m.Content, ok = contents(v, block)
		case "_meta":
			m.Meta = jsonscan.Raw(v)
		}
		return ok
	})
	return m, ok
}

// contents decodes what messages.Contents.UnmarshalJSON accepts: one block
// or an array of blocks.
func contents(raw []byte, block []messages.ContentBlock) (messages.Contents, bool) {
	switch messages.FirstByte(raw) {
	case '{':
		b, ok := messages.FastContentBlock(raw)
		return messages.Contents{Blocks: append(block[:0], b)}, ok
	case '[':
		blocks, ok := jsonscan.Slice(raw, messages.FastContentBlock)
		return messages.Contents{Blocks: blocks, Array: true}, ok
	}
	return messages.Contents{}, false
}

// decodedElicit are elicitation params as the elicitation rules read them.
type decodedElicit struct {
	messages.ElicitParams
	// mode and schema report whether "mode" and "requestedSchema" are
	// present and not null.
	mode, schema bool
}

var elicitNames = []string{"mode", "message", "requestedSchema", "url", "elicitationId", "task", "_meta"}

// decodeElicit decodes elicitation params, refusing params that are not an
// object or do not decode.
func decodeElicit(raw json.RawMessage, valid bool) (decodedElicit, *Refusal) {
	if e, ok := fastElicit(raw, valid); ok {
		return e, nil
	}
	return decodeElicitJSON(raw)
}

// decodeElicitJSON is decodeElicit through encoding/json.
func decodeElicitJSON(raw json.RawMessage) (decodedElicit, *Refusal) {
	fields, r := rawFields(raw)
	if r != nil {
		return decodedElicit{}, r
	}
	var e decodedElicit
	if r := decode(raw, &e.ElicitParams); r != nil {
		return decodedElicit{}, r
	}
	e.mode, e.schema = present(fields, "mode"), present(fields, "requestedSchema")
	return e, nil
}

// fastElicit is decodeElicit's fast decoder.
func fastElicit(raw json.RawMessage, valid bool) (decodedElicit, bool) {
	var e decodedElicit
	if !valid && !jsonscan.Valid(raw) {
		return e, false
	}
	p := &e.ElicitParams
	ok := jsonscan.Struct(raw, elicitNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "mode":
			p.Mode, ok = wireStrings.String(v)
			e.mode = !jsonscan.IsNull(v)
		case "message":
			p.Message, ok = jsonscan.String(v)
		case "url":
			p.URL, ok = jsonscan.String(v)
		case "elicitationId":
			p.ElicitationID, ok = jsonscan.String(v)
		case "requestedSchema":
			p.RequestedSchema, e.schema = jsonscan.Raw(v), !jsonscan.IsNull(v)
		case "task":
			p.Task = jsonscan.Raw(v)
		case "_meta":
			p.Meta = jsonscan.Raw(v)
		}
		return ok
	})
	return e, ok
}
