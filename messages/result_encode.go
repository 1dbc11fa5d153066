package messages

import (
	"encoding/json"

	"github.com/conduitmcp/conduit/internal/jsonscan"
)

// MarshalResult encodes an input handler's result (after the guards) as
// json.Marshal does, byte for byte. A sampling result, the one on every
// sampling round trip, is written by hand (json.Marshal spent more on it,
// through reflection and Contents.MarshalJSON, than decoding the whole
// request); any other value goes through json.Marshal.
func MarshalResult(v any) ([]byte, error) {
	return appendResult(make([]byte, 0, 128), v)
}

// EncodeResponse encodes the JSON-RPC response to request id carrying the
// result v, byte for byte as Frame{JSONRPC: Version, ID: id, Result:
// MarshalResult(v)} encodes, in one buffer: a legacy server request's
// answer is written once, not encoded and then copied (and scanned again)
// into its frame.
func EncodeResponse(id ID, v any) ([]byte, error) {
	b := id.appendJSON(append(make([]byte, 0, 160), `{"jsonrpc":"2.0","id":`...))
	b, err := appendResult(append(b, `,"result":`...), v)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendResult appends v as MarshalResult encodes it.
func appendResult(b []byte, v any) ([]byte, error) {
	if r, ok := v.(*CreateMessageResult); ok && r != nil {
		return r.appendJSON(b)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, raw...), nil
}

// appendJSON appends r as json.Marshal encodes it.
func (r *CreateMessageResult) appendJSON(b []byte) ([]byte, error) {
	b = jsonscan.AppendString(append(b, `{"role":`...), r.Role)
	b, err := r.Content.appendJSON(append(b, `,"content":`...))
	if err != nil {
		return nil, err
	}
	b = jsonscan.AppendString(append(b, `,"model":`...), r.Model)
	if r.StopReason != "" {
		b = jsonscan.AppendString(append(b, `,"stopReason":`...), r.StopReason)
	}
	if b, err = appendRawMember(b, "_meta", r.Meta); err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendJSON appends c as its MarshalJSON does.
func (c Contents) appendJSON(b []byte) ([]byte, error) {
	if !c.Array && len(c.Blocks) == 1 {
		return c.Blocks[0].appendJSON(b)
	}
	b = append(b, '[')
	for i := range c.Blocks {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = c.Blocks[i].appendJSON(b); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendJSON appends cb as json.Marshal encodes it, its fields in order,
// the empty ones left out.
func (cb *ContentBlock) appendJSON(b []byte) ([]byte, error) {
	b = jsonscan.AppendString(append(b, `{"type":`...), cb.Type)
	for _, f := range [...]struct{ name, value string }{
		{"text", cb.Text}, {"data", cb.Data}, {"mimeType", cb.MimeType}, {"uri", cb.URI}, {"name", cb.Name}, {"id", cb.ID},
	} {
		if f.value != "" {
			b = jsonscan.AppendString(append(append(append(b, `,"`...), f.name...), `":`...), f.value)
		}
	}
	var err error
	if b, err = appendRawMember(b, "input", cb.Input); err != nil {
		return nil, err
	}
	if cb.ToolUseID != "" {
		b = jsonscan.AppendString(append(b, `,"toolUseId":`...), cb.ToolUseID)
	}
	for _, f := range [...]struct {
		name  string
		value json.RawMessage
	}{{"content", cb.Content}, {"structuredContent", cb.StructuredContent}} {
		if b, err = appendRawMember(b, f.name, f.value); err != nil {
			return nil, err
		}
	}
	if cb.IsError != nil {
		if *cb.IsError {
			b = append(b, `,"isError":true`...)
		} else {
			b = append(b, `,"isError":false`...)
		}
	}
	for _, f := range [...]struct {
		name  string
		value json.RawMessage
	}{{"resource", cb.Resource}, {"annotations", cb.Annotations}, {"_meta", cb.Meta}} {
		if b, err = appendRawMember(b, f.name, f.value); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendRawMember appends ,"name":raw unless raw is empty (omitempty).
func appendRawMember(b []byte, name string, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return b, nil
	}
	return appendRaw(append(append(append(b, `,"`...), name...), `":`...), raw)
}
