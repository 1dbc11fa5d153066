package messages

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A plain string id (printable ASCII json.Marshal writes as it is) is taken
// as written, in one allocation, and names the same id the general path
// (decode, then StringID) names; anything else still takes that path.
func TestPlainStringID(t *testing.T) {
	for _, raw := range []string{`"1"`, `""`, `"123e4567-e89b-12d3-a456-426614174000"`, `"a b~!#$%'()*+,-./:;=?@[]^_{|}"`,
		`"a<b"`, `"a>b"`, `"a&b"`, `"\u0061"`, `"\\"`, `"é"`, `"\t"`, `"\u2028"`} {
		var s string
		assert.NoError(t, json.Unmarshal([]byte(raw), &s), raw)
		id, exact, ok := NamedID([]byte(raw))
		assert.True(t, ok && exact, raw)
		assert.Equal(t, StringID(s), id, raw)
		assert.Equal(t, plainString([]byte(raw)), raw != `"a<b"` && raw != `"a>b"` && raw != `"a&b"` && raw[1] != '\\' && raw != `"é"`, raw)
	}
	for _, raw := range []string{`"`, `"a`, `"a"b"`, `a"`} {
		assert.False(t, plainString([]byte(raw)), raw)
	}
	raw := []byte(`"4711"`)
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _, _, _ = NamedID(raw) }))
}
