package gateway

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A plain result (text blocks only) is built without the JSON round trip
// and serves the same wire result as the round trip; any other goes
// through JSON.
func TestPlainResultIsTheRoundTrip(t *testing.T) {
	yes := true
	cases := []struct {
		name  string
		res   string
		plain bool
	}{
		{"one text", `{"content":[{"type":"text","text":"hi"}]}`, true},
		{"empty text", `{"content":[{"type":"text","text":""}]}`, true},
		{"no content", `{"content":[]}`, true},
		{"null content", `{}`, true},
		{"error", `{"content":[{"type":"text","text":"boom"}],"isError":true}`, true},
		{"structured", `{"content":[{"type":"text","text":"{\"a\":1}"}],"structuredContent":{"a":1,"b":[true,null]}}`, true},
		{"structured null", `{"content":[{"type":"text","text":"x"}],"structuredContent":null}`, true},
		{"meta", `{"content":[{"type":"text","text":"x"}],"_meta":{"k":"v","n":2}}`, true},
		{"text with annotations", `{"content":[{"type":"text","text":"x","annotations":{"priority":0.5}}]}`, false},
		{"text with meta", `{"content":[{"type":"text","text":"x","_meta":{"k":1}}]}`, false},
		{"image", `{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`, false},
		{"text then link", `{"content":[{"type":"text","text":"x"},{"type":"resource_link","uri":"file:///a","name":"a"}]}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res conduit.CallToolResult
			require.NoError(t, json.Unmarshal([]byte(c.res), &res))
			var want mcp.CallToolResult
			require.NoError(t, remarshal(&res, &want))
			got, err := toolResult(&res, nil)
			require.NoError(t, err)
			_, plain := plainResult(&res)
			assert.Equal(t, c.plain, plain)
			wj, err := json.Marshal(&want)
			require.NoError(t, err)
			gj, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, string(wj), string(gj))
		})
	}
	_, plain := plainResult(&conduit.CallToolResult{Content: []conduit.ContentBlock{{Type: "text", Text: "x", IsError: &yes}}})
	assert.False(t, plain)
}
