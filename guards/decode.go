package guards

import (
	"encoding/json"
	"strconv"
	"strings"

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
// it).

// decodeStruct walks the members of raw, valid JSON, as json.Unmarshal into
// a struct with the JSON field names names: set gets each member whose key
// is one of the names, members with other keys are skipped. It reports
// false when raw is not an object, a key is escaped or beyond ASCII, a key
// matches a name only when case is ignored (encoding/json would take it
// for the field), a name comes twice (encoding/json would merge the two
// values) or set reports false.
func decodeStruct(raw []byte, names []string, set func(name string, value []byte) bool) bool {
	var seen uint64
	return jsonscan.Object(raw, func(key, value []byte) bool {
		for i, name := range names {
			if !strings.EqualFold(string(key), name) {
				continue
			}
			if string(key) != name || seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			return set(name, value)
		}
		return true
	})
}

// decodeArray decodes the JSON array raw into a new slice, non-nil even
// when empty (as encoding/json makes it), each element by elem; it reports
// false when raw is not an array or elem reports false.
func decodeArray[T any](raw []byte, elem func(raw []byte) (T, bool)) ([]T, bool) {
	out := []T{}
	ok := jsonscan.Array(raw, func(e []byte) bool {
		v, ok := elem(e)
		out = append(out, v)
		return ok
	})
	return out, ok
}

// rawCopy is value as a json.RawMessage field decodes it: a copy.
func rawCopy(value []byte) json.RawMessage { return append(json.RawMessage(nil), value...) }

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
func decodeSampling(raw json.RawMessage) (decodedSampling, *Refusal) {
	if s, ok := fastSampling(raw); ok {
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
	s.tools, s.toolChoice = present(fields, "tools"), present(fields, "toolChoice")
	return s, nil
}

// fastSampling is decodeSampling's fast decoder.
func fastSampling(raw json.RawMessage) (decodedSampling, bool) {
	var s decodedSampling
	if !jsonscan.Valid(raw) {
		return s, false
	}
	p := &s.CreateMessageParams
	ok := decodeStruct(raw, samplingNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "messages":
			p.Messages, ok = decodeArray(v, samplingMessage)
		case "systemPrompt":
			p.SystemPrompt, ok = jsonscan.String(v)
		case "includeContext":
			p.IncludeContext, ok = jsonscan.String(v)
		case "temperature":
			p.Temperature, ok = floatPointer(v)
		case "maxTokens":
			// Only read by positiveInt, never handed on: not copied.
			s.MaxTokens, ok = v, !messages.IsNull(v)
		case "stopSequences":
			if !messages.IsNull(v) {
				p.StopSequences, ok = decodeArray(v, jsonscan.String)
			}
		case "modelPreferences":
			p.ModelPreferences = rawCopy(v)
		case "metadata":
			p.Metadata = rawCopy(v)
		case "tools":
			p.Tools, s.tools = rawCopy(v), !messages.IsNull(v)
		case "toolChoice":
			p.ToolChoice, s.toolChoice = rawCopy(v), !messages.IsNull(v)
		case "task":
			p.Task = rawCopy(v)
		case "_meta":
			p.Meta = rawCopy(v)
		}
		return ok
	})
	// Without messages or maxTokens, the general path words the refusal.
	return s, ok && p.Messages != nil && s.MaxTokens != nil
}

// samplingMessage decodes one element of "messages".
func samplingMessage(raw []byte) (messages.SamplingMessage, bool) {
	var m messages.SamplingMessage
	ok := decodeStruct(raw, []string{"role", "content", "_meta"}, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "role":
			m.Role, ok = jsonscan.String(v)
		case "content":
			m.Content, ok = contents(v)
		case "_meta":
			m.Meta = rawCopy(v)
		}
		return ok
	})
	return m, ok
}

// contents decodes what messages.Contents.UnmarshalJSON accepts: one block
// or an array of blocks.
func contents(raw []byte) (messages.Contents, bool) {
	switch messages.FirstByte(raw) {
	case '{':
		b, ok := contentBlock(raw)
		return messages.Contents{Blocks: []messages.ContentBlock{b}}, ok
	case '[':
		blocks, ok := decodeArray(raw, contentBlock)
		return messages.Contents{Blocks: blocks, Array: true}, ok
	}
	return messages.Contents{}, false
}

var contentBlockNames = []string{"type", "text", "data", "mimeType", "uri", "name", "id", "input",
	"toolUseId", "content", "structuredContent", "isError", "resource", "annotations", "_meta"}

// contentBlock decodes one content block, an object.
func contentBlock(raw []byte) (messages.ContentBlock, bool) {
	var b messages.ContentBlock
	ok := decodeStruct(raw, contentBlockNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "type":
			b.Type, ok = jsonscan.String(v)
		case "text":
			b.Text, ok = jsonscan.String(v)
		case "data":
			b.Data, ok = jsonscan.String(v)
		case "mimeType":
			b.MimeType, ok = jsonscan.String(v)
		case "uri":
			b.URI, ok = jsonscan.String(v)
		case "name":
			b.Name, ok = jsonscan.String(v)
		case "id":
			b.ID, ok = jsonscan.String(v)
		case "toolUseId":
			b.ToolUseID, ok = jsonscan.String(v)
		case "isError":
			b.IsError, ok = boolPointer(v)
		case "input":
			b.Input = rawCopy(v)
		case "content":
			b.Content = rawCopy(v)
		case "structuredContent":
			b.StructuredContent = rawCopy(v)
		case "resource":
			b.Resource = rawCopy(v)
		case "annotations":
			b.Annotations = rawCopy(v)
		case "_meta":
			b.Meta = rawCopy(v)
		}
		return ok
	})
	return b, ok
}

// floatPointer decodes a number or null as a *float64 field decodes it.
func floatPointer(raw []byte) (*float64, bool) {
	if messages.IsNull(raw) {
		return nil, true
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return nil, false
	}
	return &f, true
}

// boolPointer decodes true, false or null as a *bool field decodes it.
func boolPointer(raw []byte) (*bool, bool) {
	var b bool
	switch string(raw) {
	case "null":
		return nil, true
	case "true":
		b = true
	case "false":
	default:
		return nil, false
	}
	return &b, true
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
func decodeElicit(raw json.RawMessage) (decodedElicit, *Refusal) {
	if e, ok := fastElicit(raw); ok {
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
func fastElicit(raw json.RawMessage) (decodedElicit, bool) {
	var e decodedElicit
	if !jsonscan.Valid(raw) {
		return e, false
	}
	p := &e.ElicitParams
	ok := decodeStruct(raw, elicitNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "mode":
			p.Mode, ok = jsonscan.String(v)
			e.mode = !messages.IsNull(v)
		case "message":
			p.Message, ok = jsonscan.String(v)
		case "url":
			p.URL, ok = jsonscan.String(v)
		case "elicitationId":
			p.ElicitationID, ok = jsonscan.String(v)
		case "requestedSchema":
			p.RequestedSchema, e.schema = rawCopy(v), !messages.IsNull(v)
		case "task":
			p.Task = rawCopy(v)
		case "_meta":
			p.Meta = rawCopy(v)
		}
		return ok
	})
	return e, ok
}
