package era

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

// resultTypeByUnmarshal is ResultType reading resultType through
// json.Unmarshal, as it was first written: the reference the scan is held
// to (the rules applied to what is read are the same code).
func resultTypeByUnmarshal(raw json.RawMessage, method string, tasks bool) (string, error) {
	var r struct {
		ResultType *string `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("result is not an object: %w", err)
	}
	if r.ResultType == nil {
		return classifyResultType("", false, method, tasks)
	}
	return classifyResultType(*r.ResultType, true, method, tasks)
}

// resultTypeCases are valid JSON results: ResultType may assume that much
// (a decoded frame's result is valid JSON), nothing else.
var resultTypeCases = []string{
	`{}`, ` { } `, `{"content":[]}`,
	`{"resultType":"complete"}`, `{"resultType":"input_required","inputRequests":{}}`, `{"resultType":"task","taskId":"t"}`,
	`{"resultType":"partial"}`, `{"resultType":""}`, `{"resultType":"Complete"}`,
	// Where it is found: last wins, any ASCII case, at the top level only.
	`{"resultType":"task","resultType":"complete"}`, `{"resultType":"complete","resultType":"task"}`,
	`{"resultType":"complete","resultType":null}`, `{"resultType":null}`, `{"resultType":null,"resultType":"task"}`,
	`{"ResultType":"task"}`, `{"RESULTTYPE":"input_required"}`, `{"resulttype":"task","resultType":"complete"}`,
	`{"result_type":"task"}`, `{"resultTypes":"task"}`, `{"resultTyp":"task"}`,
	`{"x":{"resultType":"task"}}`, `{"x":[{"resultType":"task"}],"y":"resultType"}`, `{"x":"\"resultType\":\"task\""}`,
	`{"content":[{"type":"text","text":"a } ] { [ \\\" \\\\"}],"resultType":"task"}`,
	` { "resultType" : "input_required" , "a" : [ 1 , 2 , { } ] , "b" : -1.5e3 , "c" : true , "d" : false , "e" : null } `,
	"{\n\t\"resultType\":\r\n\"complete\"\n}",
	// Escapes and bytes beyond ASCII, in keys and values.
	`{"result\u0054ype":"task"}`, `{"resultType":"comp\u006cete"}`, `{"resultType":"ta\"sk"}`,
	`{"reſultType":"task"}`, `{"résultType":"task"}`, `{"resultType":"tâche"}`, "{\"resultType\":\"\xff\"}",
	`{"resultType":"<b>"}`, `{"é":1,"resultType":"task"}`,
	// Not a string, not an object.
	`{"resultType":1}`, `{"resultType":true}`, `{"resultType":{}}`, `{"resultType":["task"]}`,
	`{"resultType":1,"resultType":"complete"}`, `{"resultType":"complete","resultType":{}}`,
	`[]`, `[{"resultType":"task"}]`, `"complete"`, `null`, `1`, `true`,
}

func TestResultTypeIsUnmarshal(t *testing.T) {
	for _, raw := range resultTypeCases {
		require.True(t, json.Valid([]byte(raw)), raw)
		for _, method := range []string{messages.MethodCallTool, messages.MethodListTools, messages.MethodGetTask} {
			for _, tasks := range []bool{false, true} {
				want, wantErr := resultTypeByUnmarshal(json.RawMessage(raw), method, tasks)
				got, err := ResultType(json.RawMessage(raw), method, tasks)
				assert.Equal(t, want, got, "%s %s tasks=%v", raw, method, tasks)
				if wantErr == nil {
					assert.NoError(t, err, raw)
				} else if assert.Error(t, err, raw) {
					assert.Equal(t, wantErr.Error(), err.Error(), raw)
				}
			}
		}
	}
}

// TestResultTypeMalformed: JSON that is not valid (which a decoded frame
// never holds) is never a panic.
func TestResultTypeMalformed(t *testing.T) {
	for _, raw := range []string{``, ` `, `{`, `{"`, `{"resultType"`, `{"resultType":`, `{"resultType":"`, `{"resultType":"task`,
		`{"resultType":"task"`, `{"resultType":"task",`, `{"a":[`, `{"a":{"b":"}`, `{"a"}`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`, `{"a":\`, "{\"a\":\"\\"} {
		assert.NotPanics(t, func() { _, _ = ResultType(json.RawMessage(raw), messages.MethodCallTool, true) }, raw)
	}
}

// TestDecodeValidatesResults pins what ResultType and the MRTR round rely
// on: a frame whose result is not valid JSON never decodes, so a result
// handed on is valid JSON and need not be checked again.
func TestDecodeValidatesResults(t *testing.T) {
	for _, frame := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete",}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"resultType":tru}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":"\x"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"é":1,"a":}}`,
	} {
		_, derr := messages.Decode([]byte(frame))
		assert.NotNil(t, derr, frame)
	}
}

// FuzzResultType holds ResultType to the reference on any valid JSON, and
// to no panic on the rest.
func FuzzResultType(f *testing.F) {
	for _, raw := range resultTypeCases {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := ResultType(raw, messages.MethodCallTool, true)
		if !json.Valid(raw) {
			return
		}
		want, wantErr := resultTypeByUnmarshal(raw, messages.MethodCallTool, true)
		if got != want || (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("%s: got %q, %v; want %q, %v", raw, got, err, want, wantErr)
		}
	})
}
