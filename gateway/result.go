package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
)

// plainResult is res as the go-sdk serves it, built field by field when
// every content block is plain text (no annotations, no _meta): the common
// case, which the round trip through JSON (remarshal) costs a go-sdk
// decode of for nothing (the go-sdk's JSON decoder takes a 32 KB buffer per
// call). Any other result is not plain (ok false) and goes through JSON,
// which knows every content type. The two give the same wire result.
func plainResult(res *conduit.CallToolResult) (out *mcp.CallToolResult, ok bool) {
	if res == nil || res.Task != nil {
		return nil, false
	}
	content := make([]mcp.Content, len(res.Content))
	for i, b := range res.Content {
		if b.Type != "text" || b.Data != "" || b.MimeType != "" || b.URI != "" || b.Name != "" || b.ID != "" || b.ToolUseID != "" ||
			len(b.Input) > 0 || len(b.Content) > 0 || len(b.StructuredContent) > 0 || b.IsError != nil ||
			len(b.Resource) > 0 || len(b.Annotations) > 0 || len(b.Meta) > 0 {
			return nil, false
		}
		content[i] = &mcp.TextContent{Text: b.Text}
	}
	out = &mcp.CallToolResult{Content: content, IsError: res.IsError}
	if sc := res.StructuredContent; len(sc) > 0 && string(sc) != "null" {
		out.StructuredContent = sc
	}
	if m := res.Meta; len(m) > 0 && string(m) != "null" {
		if err := json.Unmarshal(m, &out.Meta); err != nil {
			return nil, false
		}
	}
	return out, true
}
