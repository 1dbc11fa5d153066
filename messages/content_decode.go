package messages

import "github.com/conduitmcp/conduit/internal/jsonscan"

var contentBlockNames = []string{"type", "text", "data", "mimeType", "uri", "name", "id", "input",
	"toolUseId", "content", "structuredContent", "isError", "resource", "annotations", "_meta"}

// contentTypes are the content block types of the spec, decoded without
// an allocation.
var contentTypes = jsonscan.NewInterner("text", "image", "audio", "resource_link", "resource", "tool_use", "tool_result")

// FastContentBlock decodes one content block in one pass, as json.Unmarshal
// into a ContentBlock does (every raw member a copy). raw must be valid
// JSON: the caller checked the whole text it is part of once. It reports
// false wherever it cannot be sure to give json.Unmarshal's answer (not an
// object, a member of the wrong type, a repeated or case-variant key, an
// escaped key): the caller then decodes with encoding/json, which also
// words the error. It exists for the fast paths of the guards (sampling
// messages) and the Client (tool results), which decode the objects
// around the blocks themselves.
func FastContentBlock(raw []byte) (ContentBlock, bool) {
	var b ContentBlock
	ok := jsonscan.Struct(raw, contentBlockNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "type":
			b.Type, ok = contentTypes.String(v)
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
			b.IsError, ok = jsonscan.BoolPointer(v)
		case "input":
			b.Input = jsonscan.Raw(v)
		case "content":
			b.Content = jsonscan.Raw(v)
		case "structuredContent":
			b.StructuredContent = jsonscan.Raw(v)
		case "resource":
			b.Resource = jsonscan.Raw(v)
		case "annotations":
			b.Annotations = jsonscan.Raw(v)
		case "_meta":
			b.Meta = jsonscan.Raw(v)
		}
		return ok
	})
	return b, ok
}
