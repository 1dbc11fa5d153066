package sanitize

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

func TestLines(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "one\ntwo\n\tthree", "one\ntwo\n\tthree"},
		{"blank lines kept", "a\n\n\nb\n", "a\n\n\nb\n"},
		{"CRLF", "a\r\nb\r\n", "a\nb\n"},
		{"CR overwrite", "harmless\rmalicious", "harmless\nmalicious"},
		{"VT FF NEL LS PS", "a\vb\fc\u0085d\u2028e\u2029f", "a\nb\nc\nd\ne\nf"},
		{"OSC 52 clipboard", "x\x1b]52;c;cm0gLXJmIH4=\x07y", "xy"},
		{"OSC 0 title", "x\x1b]0;pwned\x1b\\y", "xy"},
		{"clear screen", "\x1b[2J\x1b[Hx", "x"},
		{"C1 CSI", "a\u009b2Jb", "ab"},
		{"RLO", "file\u202etxt.exe", "filetxt.exe"},
		{"isolates", "a\u2066b\u2069", "ab"},
		{"NUL DEL", "a\x00b\x7f", "ab"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
		{"unicode kept", "日本語 👍🏽 café\n", "日本語 👍🏽 café\n"},
		{"no limit", string(bytes.Repeat([]byte("a"), 5000)), string(bytes.Repeat([]byte("a"), 5000))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Lines(tc.in)
			if got != tc.want {
				t.Errorf("Lines(%q) = %q, want %q", tc.in, got, tc.want)
			}
			checkLines(t, tc.in, got)
		})
	}
}

// checkLines asserts the invariants every Lines result must satisfy: what
// Text's allows, plus LF and tab; idempotence.
func checkLines(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Lines(%q) = %q: invalid UTF-8", in, out)
	}
	for _, r := range out {
		if badRune(r) && r != '\n' && r != '\t' {
			t.Fatalf("Lines(%q) = %q: contains forbidden rune %U", in, out, r)
		}
	}
	if again := Lines(out); again != out {
		t.Fatalf("Lines not idempotent on %q: %q then %q", in, out, again)
	}
	// Each line is what Text makes of it.
	for _, line := range bytes.Split([]byte(out), []byte("\n")) {
		if s := string(bytes.ReplaceAll(line, []byte("\t"), []byte(" "))); Text(s, 0) != s {
			t.Fatalf("Lines(%q): line %q is not clean", in, line)
		}
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"nothing to do", `{"a": "plain", "n": [1, 2]}` + "\n", `{"a": "plain", "n": [1, 2]}` + "\n"},
		{"unicode kept", `{"t":"日本語 👍🏽 café"}`, `{"t":"日本語 👍🏽 café"}`},
		{"C1", "{\"t\":\"a\u009b2Jb\u009d0;x\u009c\"}", `{"t":"a\u009b2Jb\u009d0;x\u009c"}`},
		{"DEL", "[\"a\x7f\"]", `["a\u007f"]`},
		{"bidi", "[\"\u202ex\u2066y\u2069\u200e\u061c\"]", `["\u202ex\u2066y\u2069\u200e\u061c"]`},
		{"invisible", "[\"a\u200bb\ufeffc\U000E0041\"]", `["a\u200bb\ufeffc\udb40\udc41"]`},
		{"LS PS", "[\"a\u2028b\u2029\"]", `["a\u2028b\u2029"]`},
		{"raw controls in a string", "[\"\x1b]0;t\x07\"]", `["\u001b]0;t\u0007"]`},
		{"escapes kept", `["a\"\u009b\\", "\u202e"]`, `["a\"\u009b\\", "\u202e"]`},
		{"quote after backslashes", "[\"\\\\\", \"\u202e\"]", `["\\", "\u202e"]`},
		{"invalid UTF-8", "[\"a\xffb\"]", `["a\ufffdb"]`},
		{"key", "{\"\u202ek\": 1}", `{"\u202ek": 1}`},
		{"whitespace outside strings", "{\n\t\"a\": \"\u0085\"\r\n}", "{\n\t\"a\": \"\\u0085\"\r\n}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(JSON([]byte(tc.in)))
			if got != tc.want {
				t.Errorf("JSON(%q) = %q, want %q", tc.in, got, tc.want)
			}
			checkJSON(t, []byte(tc.in), []byte(got))
		})
	}
}

// checkJSON asserts that out, JSON(in), has no character Text removes
// (but JSON whitespace) and, when in is valid JSON, means what in means.
func checkJSON(t *testing.T, in, out []byte) {
	t.Helper()
	for _, r := range string(out) {
		if badRune(r) && r != '\n' && r != '\t' && r != '\r' {
			t.Fatalf("JSON(%q) = %q: contains %U", in, out, r)
		}
	}
	var a, b any
	if json.Unmarshal(in, &a) != nil {
		return
	}
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("JSON(%q) = %q: not JSON: %v", in, out, err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("JSON(%q) = %q: means %#v, not %#v", in, out, b, a)
	}
}

// What encoding/json writes goes through unchanged in meaning, with every
// forbidden character escaped.
func TestJSONOfMarshal(t *testing.T) {
	v := map[string]any{"text": "\x1b]52;c;eA==\x07\u009b2J\u202eabc\u2028\u0085", "ok": "日本"}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(JSON(raw))
	want := "{\n  \"ok\": \"日本\",\n  \"text\": \"\\u001b]52;c;eA==\\u0007\\u009b2J\\u202eabc\\u2028\\u0085\"\n}"
	if got != want {
		t.Errorf("JSON(Marshal) = %q, want %q", got, want)
	}
	checkJSON(t, raw, []byte(got))
}

func FuzzLines(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "\x1b]52;c;x\x07", "\u202e\u2028\n\t", "\xff\x1b[", "a\rb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkLines(t, s, Lines(s)) })
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":"\u009b"}`, "[\"\u202e\"]", `"\\"`, "\"\xff\"", `{"k":[1,"\u2066",null]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out := JSON(b)
		checkJSON(t, b, out)
		if again := JSON(out); !bytes.Equal(again, out) {
			t.Fatalf("JSON not idempotent on %q: %q then %q", b, out, again)
		}
	})
}
