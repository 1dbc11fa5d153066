package messages

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/testpeer"
)

func boolPtr(b bool) *bool { return &b }

// MarshalResult writes a sampling result byte for byte as json.Marshal
// does, and fails where it fails.
func TestMarshalResultIsMarshal(t *testing.T) {
	block := ContentBlock{Type: "text", Text: "hi <b>&</b> \u2028 \xff \"q\" \\ \n"}
	full := ContentBlock{Type: "tool_result", Text: "t", Data: "d", MimeType: "m", URI: "u", Name: "n", ID: "i",
		Input: json.RawMessage(` { "a" : [1, 2] } `), ToolUseID: "tu", Content: json.RawMessage(`[{"type":"text","text":"<x>"}]`),
		StructuredContent: json.RawMessage(`{"k":"v\u2029"}`), IsError: boolPtr(false),
		Resource: json.RawMessage(`null`), Annotations: json.RawMessage(`{}`), Meta: json.RawMessage(`{"m":1}`)}
	// Contents.MarshalJSON is appendJSON too: each block is held to
	// json.Marshal's reflection on its own.
	for _, cb := range []ContentBlock{block, full, {Type: "x", IsError: boolPtr(true)}, {}} {
		want, err := json.Marshal(cb)
		require.NoError(t, err)
		got, err := cb.appendJSON(nil)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	for _, r := range []*CreateMessageResult{
		{Role: "assistant", Content: Contents{Blocks: []ContentBlock{block}}, Model: "m"},
		{Role: "assistant", Content: Contents{Blocks: []ContentBlock{block}, Array: true}, Model: "m", StopReason: "endTurn"},
		{Role: "assistant", Content: Contents{Blocks: []ContentBlock{block, full}}, Model: "", Meta: json.RawMessage(`{"x": true}`)},
		{Role: "", Content: Contents{}, Model: "m"},
		{Role: "a", Content: Contents{Blocks: []ContentBlock{}}, Model: "m"},
		{Role: "a", Content: Contents{Blocks: []ContentBlock{{Type: "x", IsError: boolPtr(true)}}}, Model: "m"},
	} {
		want, err := json.Marshal(r)
		require.NoError(t, err)
		got, err := MarshalResult(r)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	bad := &CreateMessageResult{Role: "a", Content: Contents{Blocks: []ContentBlock{{Type: "x", Input: json.RawMessage(`{nope`)}}}}
	_, wantErr := json.Marshal(bad)
	_, err := MarshalResult(bad)
	assert.Error(t, wantErr)
	assert.Error(t, err)
	other := &ListRootsResult{Roots: []Root{{URI: "file:///a", Name: "<a>"}}}
	want, _ := json.Marshal(other)
	got, err := MarshalResult(other)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// TestMarshalResultWritesEveryField: a block and a result with every field
// set are written as json.Marshal writes them, so a field added to either
// type cannot be left out by the hand encoder.
func TestMarshalResultWritesEveryField(t *testing.T) {
	var cb ContentBlock
	testpeer.FillFields(t, &cb)
	want, err := json.Marshal(cb)
	require.NoError(t, err)
	got, err := cb.appendJSON(nil)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	r := &CreateMessageResult{}
	testpeer.FillFields(t, r)
	r.Content = Contents{Blocks: []ContentBlock{cb}}
	want, err = json.Marshal(r)
	require.NoError(t, err)
	got, err = MarshalResult(r)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// EncodeResponse is the frame that carries MarshalResult's encoding, in
// one buffer, for either kind of id (and none: "id": null), and fails
// where MarshalResult fails.
func TestEncodeResponseIsTheFrameOfMarshalResult(t *testing.T) {
	results := []any{
		&CreateMessageResult{Role: "assistant", Content: Text("hi <b>&</b>"), Model: "m"},
		&CreateMessageResult{Role: "a", Content: Contents{Blocks: []ContentBlock{{Type: "x", Input: json.RawMessage(` { "a" : 1 } `)}}, Array: true}, Model: "m"},
		&ListRootsResult{Roots: []Root{{URI: "file:///a", Name: "<a>"}}},
		&ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada & <Bob>"}},
		map[string]any{},
	}
	for _, id := range []ID{IntID(7), IntID(-1), StringID("x\"<y>"), {}} {
		for _, r := range results {
			raw, err := MarshalResult(r)
			require.NoError(t, err)
			f := Frame{JSONRPC: Version, ID: id, Result: raw}
			want, err := f.Encode()
			require.NoError(t, err)
			got, err := EncodeResponse(id, r)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
		}
	}
	_, err := EncodeResponse(IntID(1), &CreateMessageResult{Role: "a", Content: Contents{Blocks: []ContentBlock{{Type: "x", Input: json.RawMessage(`{nope`)}}}})
	assert.Error(t, err)
	_, err = EncodeResponse(IntID(1), map[string]any{"f": func() {}})
	assert.Error(t, err)
}

// FuzzMarshalResult holds MarshalResult (a block, then a result) to
// json.Marshal, and EncodeResponse to the frame of MarshalResult's
// encoding, on arbitrary strings and raw members.
func FuzzMarshalResult(f *testing.F) {
	f.Add("assistant", "hi <there>", "m", "endTurn", `{"a":1}`, true, ``, int64(1))
	f.Add("", "\xff\u2028", "", "", ``, false, ` { "k" : "<>" } `, int64(-1))
	f.Fuzz(func(t *testing.T, role, text, model, stop, raw string, array bool, meta string, id int64) {
		cb := ContentBlock{Type: "text", Text: text, Input: json.RawMessage(raw)}
		wantBlock, wantErr := json.Marshal(cb) // reflection: ContentBlock has no MarshalJSON
		gotBlock, err := cb.appendJSON(nil)
		if (wantErr == nil) != (err == nil) || err == nil && string(wantBlock) != string(gotBlock) {
			t.Fatalf("block: got %s (%v), want %s (%v)", gotBlock, err, wantBlock, wantErr)
		}
		r := &CreateMessageResult{Role: role, Model: model, StopReason: stop,
			Content: Contents{Blocks: []ContentBlock{cb}, Array: array}, Meta: json.RawMessage(meta)}
		want, wantErr := json.Marshal(r)
		got, err := MarshalResult(r)
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("errors differ: %v / %v", wantErr, err)
		}
		if err == nil && string(want) != string(got) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
		resp, err := EncodeResponse(IntID(id), r)
		if (wantErr == nil) != (err == nil) {
			t.Fatalf("EncodeResponse error %v, json.Marshal error %v", err, wantErr)
		}
		if err != nil {
			return
		}
		wantResp, err := json.Marshal(&Frame{JSONRPC: Version, ID: IntID(id), Result: want})
		if err != nil || string(resp) != string(wantResp) {
			t.Fatalf("EncodeResponse:\n got %s\nwant %s (%v)", resp, wantResp, err)
		}
	})
}
