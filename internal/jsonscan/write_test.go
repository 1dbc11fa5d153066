package jsonscan

import (
	"encoding/json"
	"testing"
)

// Marshaled writes raw as json.Marshal writes a json.RawMessage, and
// refuses what it refuses.
func FuzzMarshaled(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "a" : [1, 2] } `, `"<b>&\u2028"`, "\"\u2028\"", `{"a":"x y"}`, `[1,`, ``, `null`, `"\u003c"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want, wantErr := json.Marshal(json.RawMessage(raw))
		got, ok := Marshaled([]byte(raw))
		if ok != (wantErr == nil) {
			t.Fatalf("%q: ok %v, json.Marshal error %v", raw, ok, wantErr)
		}
		if ok && string(got) != string(want) {
			t.Fatalf("%q:\n got %s\nwant %s", raw, got, want)
		}
	})
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"plain", "q\"uote", "<&>", "\u2028", "\xff", "tab\t"} {
		want, _ := json.Marshal(s)
		if got := string(AppendString(nil, s)); got != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}
