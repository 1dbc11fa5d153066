package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// decodeTexts are values for the decoders of decode.go, beyond texts.
var decodeTexts = []string{
	`true`, `false`, `null`, `0`, `-0`, `1.5e3`, `-2`, `1e999`, `"1"`, `"true"`, `[]`, `{}`,
	`{"a":"x","b":["y","z"]}`, `{"a":"x","b":[]}`, `{"a":"x","b":null}`, `{"b":["y"],"c":{"a":1}}`,
	`{"a":"x","a":"y"}`, `{"A":"x"}`, `{"a":"x","A":"y"}`, `{"\u0061":"x"}`, `{"a":1}`, `{"b":[1]}`, `{"b":"y"}`,
	`{"b":[null]}`, `{"a":null}`, `{"é":1,"a":"x"}`,
}

// pair is the struct checkDecoders decodes with Struct and Slice.
type pair struct {
	A string   `json:"a"`
	B []string `json:"b"`
}

// checkDecoders holds Struct, Slice, Raw, Bool, BoolPointer and
// FloatPointer to json.Unmarshal on the value s: where one answers,
// encoding/json gives the same value without error.
func checkDecoders(t *testing.T, s string) {
	if !Valid([]byte(s)) {
		return
	}
	v := bytes.TrimSpace([]byte(s)) // values come without space around them
	same := func(name string, got any, ok bool, want any) {
		t.Helper()
		err := json.Unmarshal(v, want)
		if !ok {
			return
		}
		if w := reflect.ValueOf(want).Elem().Interface(); err != nil || !reflect.DeepEqual(got, w) {
			t.Fatalf("%s(%q) = %#v; json.Unmarshal = %#v, %v", name, s, got, w, err)
		}
	}
	b, ok := Bool(v)
	same("Bool", b, ok, new(bool))
	bp, ok := BoolPointer(v)
	same("BoolPointer", bp, ok, new(*bool))
	fp, ok := FloatPointer(v)
	same("FloatPointer", fp, ok, new(*float64))
	same("Raw", Raw(v), true, new(json.RawMessage))
	var p pair
	ok = Struct(v, []string{"a", "b"}, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "a":
			p.A, ok = String(v)
		case "b":
			if !IsNull(v) {
				p.B, ok = Slice(v, String)
			}
		}
		return ok
	})
	same("Struct", p, ok, new(pair))
}

func TestDecodersAreUnmarshal(t *testing.T) {
	for _, s := range append(texts, decodeTexts...) {
		checkDecoders(t, s)
	}
	// The common values are read.
	for _, s := range []string{`true`, `false`, `null`} {
		if _, ok := Bool([]byte(s)); !ok {
			t.Errorf("Bool(%s) did not answer", s)
		}
		if _, ok := BoolPointer([]byte(s)); !ok {
			t.Errorf("BoolPointer(%s) did not answer", s)
		}
	}
	for _, s := range []string{`null`, `0`, `-0.5`, `1e3`} {
		if _, ok := FloatPointer([]byte(s)); !ok {
			t.Errorf("FloatPointer(%s) did not answer", s)
		}
	}
	for _, s := range []string{`{}`, `{"a":"x","b":["y","z"]}`, `{"b":null,"c":{"a":1}}`} {
		if !Struct([]byte(s), []string{"a", "b"}, func(string, []byte) bool { return true }) {
			t.Errorf("Struct(%s) did not answer", s)
		}
	}
	if got, ok := Slice([]byte(`[]`), String); !ok || got == nil {
		t.Errorf("Slice([]) = %#v, %v; want an empty slice", got, ok)
	}
}

// FuzzDecoders is TestDecodersAreUnmarshal on arbitrary values.
func FuzzDecoders(f *testing.F) {
	for _, s := range append(texts, decodeTexts...) {
		f.Add(s)
	}
	f.Fuzz(checkDecoders)
}
