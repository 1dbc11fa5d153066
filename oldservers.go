package conduit

import "github.com/conduitmcp/conduit/era"

// olderRevisionTools takes from tools what the negotiated revision does
// not have: before 2025-06-18 there is no structured tool output, so an
// outputSchema a server sends anyway is not kept (nor checked against).
func olderRevisionTools(version string, tools []Tool) {
	if era.StructuredContent(version) {
		return
	}
	for i := range tools {
		tools[i].OutputSchema = nil
	}
}

// olderRevisionResult likewise drops the structuredContent of a tool
// result before 2025-06-18: the content blocks are the result there.
func olderRevisionResult(version string, r *CallToolResult) {
	if r != nil && !era.StructuredContent(version) {
		r.StructuredContent = nil
	}
}
