package conduit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
)

// benchToolResult is a tools/call answer as a modern server sends it.
const benchToolResult = `{"resultType":"complete","content":[{"type":"text","text":"done"}],"structuredContent":{"n":1},"_meta":{"k":"v"}}`

// blockInputs are content blocks of every kind, each member set.
var blockInputs = []string{
	`{"type":"text","text":"hi"}`,
	`{"type":"text","text":"caf\u00e9 \"q\" \n \ud83d\ude00 \ud800","annotations":{"audience":["user"],"priority":0.5},"_meta":{"a":1}}`,
	"{\"type\":\"text\",\"text\":\"bad \xff utf8\"}",
	`{"type":"image","data":"AAA=","mimeType":"image/png"}`,
	`{"type":"audio","data":"AAA=","mimeType":"audio/wav","annotations":null}`,
	`{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"}`,
	`{"type":"resource","resource":{"uri":"file:///a","text":"x"}}`,
	`{"type":"tool_use","id":"t1","name":"f","input":{"a":[1,2]}}`,
	`{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"r"}],"structuredContent":{"a":1},"isError":true,"_meta":{"m":1}}`,
	`{"type":"tool_result","toolUseId":"t1","isError":false}`,
	`{"type":"tool_result","isError":null,"input":null,"content":null}`,
	`{"type":"text","text":null,"other":{"x":[1,{"y":2}]}}`,
	` { "type" : "text" , "text" : "hi" } `,
	`{}`,
}

// fastToolResults are results the fast decoder reads: the common ones,
// every member set.
var fastToolResults = append([]string{
	benchToolResult,
	`{"content":[{"type":"text","text":"done"}]}`,
	`{"content":[]}`, `{"content":null}`, `{}`,
	`{"content":[],"structuredContent":null,"isError":null,"_meta":null}`,
	`{"content":[],"isError":true}`, `{"content":[],"isError":false}`,
	`{"content":[],"structuredContent":[1,"a",{"b":null}],"_meta":{"progressToken":1},"task":{"taskId":"x"},"Task":1,"-":2}`,
	`{"content":[` + strings.Join(blockInputs, ",") + `],"isError":true}`,
	` { "content" : [ { "type" : "text" , "text" : "hi" } ] , "isError" : false } `,
	`{"resultType":"complete","other":{"deep":[[[[[[[[[[{}]]]]]]]]]]},"content":[]}`,
}, blockResults()...)

// blockResults puts each of blockInputs alone in a result.
func blockResults() []string {
	var out []string
	for _, b := range blockInputs {
		out = append(out, `{"content":[`+b+`]}`)
	}
	return out
}

// toolResultInputs are results common and odd: every member of its type
// and of the wrong type, null, repeated keys, keys that match a field only
// when case is ignored (the Kelvin sign folds to k), escaped keys, deep
// nesting, malformed text.
var toolResultInputs = append([]string{
	``, ` `, `null`, ` null `, `[]`, `"x"`, `1`, `{`, `{"content":[}`, `{"content":[]}x`, `{} {}`, `nul`,
	`{"content":{}}`, `{"content":"text"}`, `{"content":1}`, `{"content":true}`,
	`{"content":[null]}`, `{"content":[1]}`, `{"content":["x"]}`, `{"content":[[]]}`,
	`{"content":[{"type":1}]}`, `{"content":[{"type":"text","text":5}]}`, `{"content":[{"type":"text","text":"a"},{"text":[]}]}`,
	`{"content":[{"type":"tool_result","isError":"yes"}]}`, `{"content":[{"type":"tool_result","isError":0}]}`,
	`{"content":[{"type":"text","type":"image"}]}`, `{"content":[{"Type":"text"}]}`, `{"content":[{"TEXT":"x","type":"text"}]}`,
	`{"content":[{"t\u0079pe":"text"}]}`, `{"content":[{"type":"text","é":1}]}`, `{"content":[{"mimetype":"a/b"}]}`,
	`{"content":[],"isError":"true"}`, `{"content":[],"isError":1}`, `{"content":[],"isError":{}}`, `{"content":[],"isError":[]}`,
	`{"content":[],"isError":true,"isError":false}`, `{"content":[],"IsError":true}`, `{"content":[],"iserror":true}`,
	`{"content":[{"type":"text"}],"content":[{"type":"image"}]}`, `{"content":[{"type":"text","text":"a"}],"content":null}`,
	`{"Content":[{"type":"text"}]}`, `{"CONTENT":[],"content":[]}`, `{"c\u006fntent":[{"type":"text"}]}`,
	`{"content":[],"structuredContent":{"a":1},"structuredcontent":{"b":2}}`, `{"_meta":{"a":1},"_META":{}}`,
	`{"content":[],"_meta":1,"_meta":2}`,
	`{"content":[],"isErro` + "\u212a" + `":true}`, `{"content":[],"é":1}`, "\t{\"é\":1}\n",
	`{"content":[{"type":"text","structuredContent":1,"structuredContent":2}]}`,
	`{"content":[],"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"content":[],"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"content":[],"x":"\u00zz"}`, "{\"content\":[],\"x\":\"\x01\"}", `{"content":[],}`, `{"content":[,]}`,
}, fastToolResults...)

// TestToolResultIsUnmarshal holds unmarshalToolResult to json.Unmarshal on
// toolResultInputs (the same value, nil and empty alike, no member
// aliasing the input, the same error), and checks that the common results
// take the fast path.
func TestToolResultIsUnmarshal(t *testing.T) {
	for _, in := range toolResultInputs {
		checkToolResult(t, in)
	}
	for _, in := range fastToolResults {
		if _, ok := fastToolResult([]byte(in)); !ok {
			t.Errorf("fastToolResult(%s) did not answer", in)
		}
	}
}

// TestToolResultReadsEveryField: every field of a CallToolResult, with a
// value of each kind, is read as json.Unmarshal reads it or left to it.
func TestToolResultReadsEveryField(t *testing.T) {
	for _, m := range testpeer.JSONMembers(t, reflect.TypeFor[CallToolResult]()) {
		checkToolResult(t, "{"+m+"}")
	}
}

// FuzzToolResult is TestToolResultIsUnmarshal on arbitrary results.
func FuzzToolResult(f *testing.F) {
	for _, in := range toolResultInputs {
		f.Add(in)
	}
	f.Fuzz(checkToolResult)
}

func checkToolResult(t *testing.T, in string) {
	var want CallToolResult
	wantErr := json.Unmarshal([]byte(in), &want)
	raw := []byte(in)
	got, err := unmarshalToolResult(raw)
	for i := range raw {
		raw[i] = 'x' // nothing decoded may alias the input
	}
	if len(in) > 300 {
		in = in[:300] + "…"
	}
	if !reflect.DeepEqual(err, wantErr) {
		t.Fatalf("unmarshalToolResult(%q) error = %v, json.Unmarshal says %v", in, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unmarshalToolResult(%q)\n got %#v\nwant %#v", in, got, want)
	}
}

// TestDecodeToolResultError: a malformed result is a protocol error
// carrying encoding/json's own error.
func TestDecodeToolResultError(t *testing.T) {
	_, err := decodeToolResult(messages.MethodCallTool, json.RawMessage(`{"content":[{"type":1}]}`))
	e, ok := err.(*Error)
	if !ok || e.Kind != KindProtocol || e.Method != messages.MethodCallTool || e.Message != "malformed result" {
		t.Fatalf("decodeToolResult error = %#v", err)
	}
	if want := "json: cannot unmarshal number into Go struct field ContentBlock.content.type of type string"; e.Err.Error() != want {
		t.Fatalf("decodeToolResult error wraps %q, want %q", e.Err, want)
	}
}

// TestDecodeToolResultAllocs: a common result costs its own values only:
// the result, its content slice, its text and two raw members (the block's
// type, "text", is interned).
func TestDecodeToolResultAllocs(t *testing.T) {
	raw := []byte(benchToolResult)
	if n := testing.AllocsPerRun(100, func() { _, _ = decodeToolResult(messages.MethodCallTool, raw) }); n != 5 {
		t.Fatalf("%v allocations, want 5", n)
	}
}

func BenchmarkDecodeToolResult(b *testing.B) {
	raw := []byte(benchToolResult)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeToolResult(messages.MethodCallTool, raw); err != nil {
			b.Fatal(err)
		}
	}
}
