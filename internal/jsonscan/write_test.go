package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// marshaledCases are raw values for Marshaled, named: valid and not,
// compact and not, with and without bytes json.Marshal escapes.
var marshaledCases = []struct {
	name string
	raw  json.RawMessage
}{
	{"object", json.RawMessage(`{"a":1}`)},
	{"spaced", json.RawMessage(` { "a" : [1, 2] } `)},
	{"html and separators", json.RawMessage(`"<b>&\u2028"`)},
	{"raw separator", json.RawMessage("\"\u2028\"")},
	{"space in string", json.RawMessage(`{"a":"x y"}`)},
	{"truncated", json.RawMessage(`[1,`)},
	{"empty", json.RawMessage(``)},
	{"null", json.RawMessage(`null`)},
	{"escaped lt", json.RawMessage(`"\u003c"`)},
	// A nil RawMessage marshals as null (RawMessage.MarshalJSON).
	{"nil", nil},
}

// checkMarshaled holds Marshaled to json.Marshal of raw as a
// json.RawMessage: the same bytes, and false where it fails.
func checkMarshaled(t *testing.T, raw json.RawMessage) {
	t.Helper()
	want, wantErr := json.Marshal(raw)
	got, ok := Marshaled(raw)
	if ok != (wantErr == nil) {
		t.Fatalf("%q: ok %v, json.Marshal error %v", raw, ok, wantErr)
	}
	if ok && string(got) != string(want) {
		t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
	}
}

func TestMarshaledIsMarshal(t *testing.T) {
	for _, tc := range marshaledCases {
		t.Run(tc.name, func(t *testing.T) { checkMarshaled(t, tc.raw) })
	}
}

// FuzzMarshaled is TestMarshaledIsMarshal on arbitrary raw values.
func FuzzMarshaled(f *testing.F) {
	for _, tc := range marshaledCases {
		f.Add(string(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw string) { checkMarshaled(t, json.RawMessage(raw)) })
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"plain", "q\"uote", "<&>", "\u2028", "\xff", "tab\t"} {
		want, _ := json.Marshal(s)
		if got := string(AppendString(nil, s)); got != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

// checkCompacted holds Compacted to json.Compact: the same bytes (strings
// byte for byte, no escaping added), and false where raw is not valid.
func checkCompacted(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var want bytes.Buffer
	wantErr := json.Compact(&want, raw)
	if raw == nil {
		want.Reset()
		want.WriteString("null")
		wantErr = nil
	}
	got, ok := Compacted(raw)
	if ok != (wantErr == nil) {
		t.Fatalf("%q: ok %v, json.Compact error %v", raw, ok, wantErr)
	}
	if ok && string(got) != want.String() {
		t.Fatalf("%q:\n got %s\nwant %s", raw, got, want.String())
	}
}

func TestCompactedKeepsStringsAsTheyCame(t *testing.T) {
	for _, tc := range marshaledCases {
		t.Run(tc.name, func(t *testing.T) { checkCompacted(t, tc.raw) })
	}
	raw := []byte("\"<b>&\u2028\u2029\\u0026\"")
	got, ok := Compacted(raw)
	if !ok || string(got) != string(raw) || &got[0] != &raw[0] {
		t.Fatalf("compact raw: got %s (copied: %v), want it as is", got, ok && &got[0] != &raw[0])
	}
}

// FuzzCompacted is TestCompactedKeepsStringsAsTheyCame on arbitrary values.
func FuzzCompacted(f *testing.F) {
	for _, tc := range marshaledCases {
		f.Add(string(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw string) { checkCompacted(t, json.RawMessage(raw)) })
}
