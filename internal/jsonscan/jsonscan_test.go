package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
	"unsafe"
)

// texts are JSON texts and near misses: every grammar rule, broken once.
var texts = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{`, `}`, `[`, `]`, `{]`, `[}`, `[1,]`, `{"a":1,}`, `[,1]`, `{,}`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1e-5`, `1E5`, `-1.5e+300`, `1e999999`, `99999999999999999999999`,
	`+1`, `0x1`, `1 2`, `NaN`, `Infinity`, `--1`, `0.e1`, `1.5.5`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `nulll`, `[true,false,null]`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00"`, `"\x"`, `"\'"`,
	"\"\t\"", "\"\x01\"", "\"\x7f\"", "\"\xff\"", "\"é\"", `"a`, `"\`, `"\u`,
	`{"a":1}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1,"a":2}`, `{1:2}`, `{"a":[1,{"b":null}]}`,
	" \t\r\n{ \"a\" \n: [ 1 , 2 ] }\n ", "{\"a\":1}\v", "\u00a0{}",
	`[[[[]]]]`, `[[[[]]]`, `[[[[]]]]]`, `[{"a":[{"b":[]}]}]`,
	`{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}`,
}

func TestValidIsJSONValid(t *testing.T) {
	for _, s := range texts {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// The nesting limit is encoding/json's: 10 000 levels, empty innermost
// containers included.
func TestValidDepth(t *testing.T) {
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, s := range []string{
			strings.Repeat("[", depth) + strings.Repeat("]", depth),
			strings.Repeat(`{"a":`, depth-1) + "{}" + strings.Repeat("}", depth-1),
			strings.Repeat(`[{"a":`, depth/2) + "1" + strings.Repeat("}]", depth/2),
		} {
			got, want := Valid([]byte(s)), json.Valid([]byte(s))
			if got != want {
				t.Errorf("depth %d %.12q…: Valid = %v, json.Valid = %v", depth, s, got, want)
			}
		}
	}
}

// TestObjectIsUnmarshal holds Object to json.Unmarshal into a map of raw
// members: the same members, in the order written, where Object answers.
func TestObjectIsUnmarshal(t *testing.T) {
	for _, s := range texts {
		checkObject(t, s)
	}
	for _, s := range []string{`{"a\u0062":1}`, `{"é":1}`, `{"\"":1}`} {
		if Object([]byte(s), func(_, _ []byte) bool { return true }) {
			t.Errorf("Object(%s) splits a key encoding/json would unescape or mend", s)
		}
	}
}

func checkObject(t *testing.T, s string) {
	t.Helper()
	if !Valid([]byte(s)) {
		return
	}
	got := map[string]string{}
	n := 0
	ok := Object([]byte(s), func(k, v []byte) bool {
		got[string(k)] = string(v)
		n++
		return true
	})
	var want map[string]json.RawMessage
	err := json.Unmarshal([]byte(s), &want)
	if !ok {
		if err == nil && want != nil && !strings.Contains(s, `\`) && !hasNonASCII(s) {
			t.Errorf("Object(%q) refused an object with plain keys", s)
		}
		return
	}
	if err != nil {
		t.Fatalf("Object(%q) split what json.Unmarshal refuses: %v", s, err)
	}
	if len(got) != len(want) {
		t.Fatalf("Object(%q): %d members, want %d", s, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != string(v) {
			t.Errorf("Object(%q)[%q] = %s, want %s", s, k, got[k], v)
		}
	}
}

func hasNonASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

func TestArrayIsUnmarshal(t *testing.T) {
	for _, s := range texts {
		if !Valid([]byte(s)) {
			continue
		}
		var got []string
		ok := Array([]byte(s), func(e []byte) bool { got = append(got, string(e)); return true })
		var want []json.RawMessage
		err := json.Unmarshal([]byte(s), &want)
		if !ok {
			if err == nil && want != nil {
				t.Errorf("Array(%q) refused an array", s)
			}
			continue
		}
		if err != nil || len(got) != len(want) {
			t.Fatalf("Array(%q) = %q, json.Unmarshal = %q, %v", s, got, want, err)
		}
		for i := range want {
			if got[i] != string(want[i]) {
				t.Errorf("Array(%q)[%d] = %s, want %s", s, i, got[i], want[i])
			}
		}
	}
}

func TestStringIsUnmarshal(t *testing.T) {
	for _, s := range append(texts, `"plain ascii"`, `"tab\tescaped"`, "\"\xe2\x80\xa8\"") {
		if !Valid([]byte(s)) {
			continue
		}
		got, ok := String([]byte(s))
		var want string
		err := json.Unmarshal([]byte(s), &want)
		if ok != (err == nil) || got != want {
			t.Errorf("String(%q) = %q, %v; json.Unmarshal = %q, %v", s, got, ok, want, err)
		}
	}
}

// FuzzValid holds Valid, Object, Array and String to encoding/json on
// arbitrary input.
func FuzzValid(f *testing.F) {
	for _, s := range texts {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
		checkObject(t, s)
		if Valid([]byte(s)) {
			got, ok := String([]byte(s))
			var want string
			err := json.Unmarshal([]byte(s), &want)
			if ok != (err == nil) || got != want {
				t.Fatalf("String(%q) = %q, %v; json.Unmarshal = %q, %v", s, got, ok, want, err)
			}
		}
	})
}

// An Interner decodes as String does, and gives its own copy of a string
// it holds without an allocation; an escaped spelling of one decodes too.
func TestInternerIsStringWithoutAllocating(t *testing.T) {
	in := NewInterner("2.0", "text", "sampling/createMessage")
	for _, raw := range []string{`"2.0"`, `"text"`, `"te\u0078t"`, `"texts"`, `""`, `"sampling/createMessage"`, `"sampling\/createMessage"`, `1`, `null`, `"é"`} {
		want, wantOK := String([]byte(raw))
		got, ok := in.String([]byte(raw))
		if got != want || ok != wantOK {
			t.Errorf("%s: got %q %v, want %q %v", raw, got, ok, want, wantOK)
		}
	}
	raw := []byte(`"sampling/createMessage"`)
	if n := testing.AllocsPerRun(100, func() { in.String(raw) }); n != 0 {
		t.Errorf("an interned string took %v allocations", n)
	}
	if n := testing.AllocsPerRun(100, func() { String(raw) }); n != 1 {
		t.Errorf("String took %v allocations, want 1 (the test would prove nothing)", n)
	}
	defer func() {
		if recover() == nil {
			t.Error("an escaped string was interned")
		}
	}()
	NewInterner(`a"b`)
}

// Strings with every kind of escape and of byte decode as json.Unmarshal
// decodes them, and what is not a string is refused.
func TestStringUnquotesAsUnmarshal(t *testing.T) {
	for _, s := range []string{
		`"a\"b\\c\/d\be\ff\ng\rh\ti"`, `"\u00e9\u4e2d\uD83D\uDE00"`, `"\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`,
		`"\uDE00\uD83D"`, `"\ud83d\ud83d\ude00"`, "\"caf\xc3\xa9 \xff\xfe end\"", "\"\xe2\x80\"", `"x\u0000y"`, `"\u00"`,
		`"bad \x escape"`, "\"raw\ncontrol\"", `"\"`, `"a"b"`, `'single'`, `12`, `"`, `""`,
	} {
		got, ok := String([]byte(s))
		var want string
		err := json.Unmarshal([]byte(s), &want)
		if ok != (err == nil) || got != want {
			t.Errorf("String(%q) = %q, %v; json.Unmarshal = %q, %v", s, got, ok, want, err)
		}
	}
}

// An escaped string is decoded with one allocation of its size.
func TestStringUnquotesInOneAllocation(t *testing.T) {
	raw := []byte(`"` + strings.Repeat(`line\n`, 1000) + `"`)
	allocs := testing.AllocsPerRun(10, func() {
		if s, ok := String(raw); !ok || len(s) != 5000 {
			t.Fatalf("String = %d bytes, %v", len(s), ok)
		}
	})
	if allocs != 1 {
		t.Errorf("%v allocations, want 1", allocs)
	}
}

// A plain string of a MiB or more shares the message's bytes: a big tool
// result is held once. A smaller one, and one with escapes, is a copy.
func TestStringSharesABigPlainString(t *testing.T) {
	big := []byte(`"` + strings.Repeat("x", aliasMin) + `"`)
	s, ok := String(big)
	if !ok || len(s) != aliasMin || unsafe.StringData(s) != &big[1] {
		t.Fatalf("a %d-byte plain string was copied (or misread: %v)", aliasMin, ok)
	}
	small := []byte(`"` + strings.Repeat("x", aliasMin-1) + `"`)
	if s, _ := String(small); unsafe.StringData(s) == &small[1] {
		t.Fatal("a string under aliasMin shares the message")
	}
	escaped := []byte(`"` + strings.Repeat("x", aliasMin) + `\n"`)
	if s, _ := String(escaped); unsafe.StringData(s) == &escaped[1] || !strings.HasSuffix(s, "x\n") {
		t.Fatal("an escaped string shares the message, or is misread")
	}
}
