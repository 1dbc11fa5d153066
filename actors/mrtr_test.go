package actors

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// readInputRequest gives what encoding/json gives, for every entry of
// inputRequests a server may send (valid JSON: its frame was checked).
func TestReadInputRequestIsUnmarshal(t *testing.T) {
	for _, raw := range []string{
		`{"method":"elicitation/create","params":{"message":"hi","requestedSchema":{"type":"object"}}}`,
		`{"params":{"a":1},"method":"sampling/createMessage","extra":[1,2]}`,
		`{"method":"roots/list"}`,
		`{"method":"roots/list","params":null}`,
		`{"method":null,"params":{}}`,
		`{"method":7}`,
		`{"method":"a","method":"b"}`,
		`{"Method":"roots/list"}`,
		`{"me\u0074hod":"roots/list"}`,
		`{"method":"roots\/list"}`,
		`{}`,
		`[]`,
		`"roots/list"`,
		`null`,
	} {
		var want wireInputRequest
		wantOK := json.Unmarshal([]byte(raw), &want) == nil
		got, ok := readInputRequest([]byte(raw))
		assert.Equal(t, wantOK, ok, raw)
		if wantOK {
			assert.Equal(t, want.Method, got.Method, raw)
			assert.Equal(t, string(want.Params), string(got.Params), raw)
		}
	}
}
