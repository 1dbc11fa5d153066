package messages

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/internal/testpeer"
)

// fastBlocks are content blocks of every kind, each member set: read by
// FastContentBlock.
var fastBlocks = []string{
	`{"type":"text","text":"hi","annotations":{"audience":["user"]},"_meta":{"a":1}}`,
	`{"type":"text","text":"caf\u00e9 \ud800","other":[1,{"x":null}]}`,
	`{"type":"image","data":"AAA=","mimeType":"image/png"}`,
	`{"type":"resource_link","uri":"file:///a","name":"a"}`,
	`{"type":"resource","resource":{"uri":"file:///a"}}`,
	`{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}`,
	`{"type":"tool_result","toolUseId":"t1","content":[],"structuredContent":{},"isError":true}`,
	`{"type":"tool_result","isError":null,"input":null}`, `{}`,
}

// blockInputs are fastBlocks and blocks it leaves to encoding/json.
var blockInputs = append([]string{
	`null`, `[]`, `"text"`, `{"type":1}`, `{"text":["x"]}`, `{"isError":"true"}`, `{"isError":0}`,
	`{"type":"text","type":"image"}`, `{"Type":"text"}`, `{"t\u0079pe":"text"}`, `{"type":"text","é":1}`,
	`{"type":"text","TEXT":"a","text":"b"}`,
}, fastBlocks...)

// TestFastContentBlockIsUnmarshal: where FastContentBlock answers,
// json.Unmarshal into a ContentBlock gives the same block, and the common
// blocks are answered.
func TestFastContentBlockIsUnmarshal(t *testing.T) {
	for _, in := range blockInputs {
		checkContentBlock(t, in)
	}
	for _, in := range fastBlocks {
		if _, ok := FastContentBlock([]byte(in)); !ok {
			t.Errorf("FastContentBlock(%s) did not answer", in)
		}
	}
}

// TestFastContentBlockReadsEveryField: every field of a ContentBlock, with
// a value of each kind, is read as json.Unmarshal reads it or left to it.
func TestFastContentBlockReadsEveryField(t *testing.T) {
	for _, m := range testpeer.JSONMembers(t, reflect.TypeFor[ContentBlock]()) {
		checkContentBlock(t, "{"+m+"}")
	}
}

// FuzzFastContentBlock is TestFastContentBlockIsUnmarshal on arbitrary
// blocks.
func FuzzFastContentBlock(f *testing.F) {
	for _, in := range blockInputs {
		f.Add(in)
	}
	f.Fuzz(checkContentBlock)
}

func checkContentBlock(t *testing.T, in string) {
	if !jsonscan.Valid([]byte(in)) {
		return // FastContentBlock reads parts of valid JSON only
	}
	raw := []byte(in)
	got, ok := FastContentBlock(raw)
	for i := range raw {
		raw[i] = 'x' // nothing decoded may alias the input
	}
	if !ok {
		return
	}
	var want ContentBlock
	if err := json.Unmarshal([]byte(in), &want); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("FastContentBlock(%q)\n got %#v\nwant %#v, %v", in, got, want, err)
	}
}
