package actors

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// relatedTask skips the decode only when the key cannot be there; an
// escaped key is still found.
func TestRelatedTask(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-1"}},"maxTokens":5}`, "t-1"},
		{`{"_meta":{"io.modelcontextprotocol\/related-task":{"taskId":"t-2"}}}`, "t-2"},
		{`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-3"}},"text":"a\nb"}`, "t-3"},
		{`{"messages":[],"maxTokens":5}`, ""},
		{`{"text":"a\nb"}`, ""},
		{`{"_meta":{"io.modelcontextprotocol/related-task":"not an object"}}`, ""},
		{``, ""},
	} {
		assert.Equal(t, tc.want, relatedTask(json.RawMessage(tc.params)), tc.params)
	}
}
