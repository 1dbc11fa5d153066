package era

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestToolHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		want         map[string]string
		err          string
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, nil, ""},
		{"valid", `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"Flag"}}}`,
			map[string]string{"region": "Region", "n": "N", "b": "Flag"}, ""},
		{"empty", `{"properties":{"a":{"type":"string","x-mcp-header":""}}}`, nil, "not an HTTP token"},
		{"space", `{"properties":{"a":{"type":"string","x-mcp-header":"Bad Name"}}}`, nil, "not an HTTP token"},
		{"colon", `{"properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}`, nil, "not an HTTP token"},
		{"slash", `{"properties":{"a":{"type":"string","x-mcp-header":"A/B"}}}`, nil, "not an HTTP token"},
		{"non-ASCII", `{"properties":{"a":{"type":"string","x-mcp-header":"Régión"}}}`, nil, "not an HTTP token"},
		{"every tchar", `{"properties":{"a":{"type":"string","x-mcp-header":"!#$%&'*+-.^_|~09azAZ"}}}`, map[string]string{"a": "!#$%&'*+-.^_|~09azAZ"}, ""},
		{"not a string", `{"properties":{"a":{"type":"string","x-mcp-header":5}}}`, nil, "not an HTTP token"},
		{"number type", `{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, nil, `type "number"`},
		{"object type", `{"properties":{"a":{"type":"object","x-mcp-header":"A"}}}`, nil, `type "object"`},
		{"duplicate", `{"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"region"}}}`, nil, "duplicate"},
		{"nested", `{"properties":{"a":{"type":"object","properties":{"b":{"type":"string","x-mcp-header":"B"}}}}}`, nil, "nested"},
		{"in items", `{"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"B"}}}}`, nil, "nested"},
		{"in anyOf", `{"anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]}`, nil, "outside the top-level properties"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ToolHeaders([]byte(tc.schema))
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
