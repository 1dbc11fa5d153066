package era

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readInputRequiredByUnmarshal is how input_required results were first
// read: the reference the scan is held to.
func readInputRequiredByUnmarshal(raw []byte) (InputRequired, error) {
	var ir struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	err := json.Unmarshal(raw, &ir)
	if err != nil {
		// The type Unmarshal names is inputRequired (a result that is
		// not an object never gets here: ResultType refuses it).
		text := strings.Replace(err.Error(), "Go struct field .", "Go struct field inputRequired.", 1)
		text = strings.Replace(text, reflect.TypeOf(ir).String(), "era.inputRequired", 1)
		return InputRequired{}, jsonError(text)
	}
	return InputRequired(ir), nil
}

type jsonError string

func (e jsonError) Error() string { return string(e) }

var inputRequiredCases = []string{
	`{}`, `{"resultType":"input_required"}`,
	`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}},"requestState":"s1"}`,
	`{"inputRequests":{}}`, `{"inputRequests":null}`, `{"requestState":null}`, `{"requestState":7}`, `{"requestState":{"x" : [1, 2]}}`,
	`{"inputRequests":{"a":1},"inputRequests":{"b":2}}`, `{"inputRequests":{"a":1},"inputRequests":null}`,
	`{"inputRequests":null,"inputRequests":{"a":1}}`, `{"inputRequests":{"a":1},"INPUTREQUESTS":{"a":2,"c":null}}`,
	`{"requestState":"a","RequestState":"b"}`, `{"inputRequests":{"a":1,"a":{"b" : 2}}}`,
	` { "inputRequests" : { "k" : { "method" : "x" } , "l" : [ ] } , "requestState" : "s 1" } `,
	`{"x":{"inputRequests":{"a":1}},"inputRequests":{"b":"}{"}}`,
	// Escapes and bytes beyond ASCII in keys: the full decode.
	`{"input\u0052equests":{"a":1}}`, `{"inputRequests":{"\u00e9":1,"b":2}}`, `{"inputRequests":{"é":1}}`, "{\"inputRequests\":{\"\xff\":1}}",
	`{"requestſtate":"s"}`, `{"é":1,"inputRequests":{"a":1}}`,
	// Not what the fields take.
	`{"inputRequests":3}`, `{"inputRequests":[]}`, `{"inputRequests":"a"}`, `{"inputRequests":{"a":1},"inputRequests":3}`,
	`[]`, `null`, `"x"`,
}

func TestReadInputRequiredIsUnmarshal(t *testing.T) {
	for _, raw := range inputRequiredCases {
		require.True(t, json.Valid([]byte(raw)), raw)
		want, wantErr := readInputRequiredByUnmarshal([]byte(raw))
		got, err := ReadInputRequired(json.RawMessage(raw))
		if wantErr != nil {
			assert.EqualError(t, err, wantErr.Error(), raw)
			continue
		}
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
		assert.Equal(t, want.InputRequests == nil, got.InputRequests == nil, "nil map: %s", raw)
		assert.Equal(t, want.RequestState == nil, got.RequestState == nil, "nil state: %s", raw)
	}
}

// TestReadInputRequiredError: the words CallModern has always reported.
func TestReadInputRequiredError(t *testing.T) {
	_, err := ReadInputRequired(json.RawMessage(`{"inputRequests":3}`))
	assert.EqualError(t, err, "json: cannot unmarshal number into Go struct field inputRequired.inputRequests of type map[string]json.RawMessage")
}

func TestReadInputRequiredMalformed(t *testing.T) {
	for _, raw := range []string{``, `{`, `{"inputRequests":{`, `{"inputRequests":{"a"`, `{"inputRequests":{"a":`, `{"inputRequests":{"a":1`,
		`{"inputRequests":{"a":1}`, `{"inputRequests":{"a":1},`, `{"requestState":`, `{"inputRequests":{]}`, `{"inputRequests":{"a" 1}}`} {
		assert.NotPanics(t, func() { _, _ = ReadInputRequired(json.RawMessage(raw)) }, raw)
	}
}

func FuzzReadInputRequired(f *testing.F) {
	for _, raw := range inputRequiredCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ReadInputRequired(raw)
		if !json.Valid(raw) {
			return
		}
		want, wantErr := readInputRequiredByUnmarshal(raw)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("%s: error %v, want %v", raw, err, wantErr)
		}
		if err == nil && (!assert.ObjectsAreEqual(want, got) || (want.InputRequests == nil) != (got.InputRequests == nil) || (want.RequestState == nil) != (got.RequestState == nil)) {
			t.Fatalf("%s: got %#v, want %#v", raw, got, want)
		}
	})
}
