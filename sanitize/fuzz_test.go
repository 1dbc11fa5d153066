package sanitize

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzText checks Text's invariants on arbitrary input: valid UTF-8, no
// forbidden runes, at most max runes, idempotence, and that clamping only
// ever cuts the unclamped result.
func FuzzText(f *testing.F) {
	for _, s := range []string{
		"", "plain", "\x1b[31mred\x1b[0m", "\x1b]0;pwned\x07", "\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\",
		"\u009b31m", "\u202e\u2066\u2069", "a\u2028b\u2029", "\x00\xff\xed\xa0\x80", "a\r\n\tb", "日本語👍🏽",
	} {
		f.Add(s, 0)
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		out := Text(s, max)
		checkText(t, s, max, out)

		full := Text(s, 0)
		checkText(t, s, 0, full)
		if n := utf8.RuneCountInString(full); max <= 0 || n <= max {
			if out != full {
				t.Fatalf("Text(%q, %d) = %q, but unclamped result %q fits", s, max, out, full)
			}
		} else if want := string([]rune(full)[:max-1]) + "…"; out != want {
			t.Fatalf("Text(%q, %d) = %q, want %q", s, max, out, want)
		}
	})
}

// FuzzLog checks that Log never panics on arbitrary bytes and that an entry
// it accepts is fully sanitised and re-encodable.
func FuzzLog(f *testing.F) {
	for _, s := range []string{
		`{"level":"error","logger":"db","data":{"msg":"\u001b[31mx"}}`,
		`{"level":7,"logger":[],"data":[1,2,{"a":null}],"extra":true}`,
		`{"data":123456789012345678901234567890e-5}`,
		`[]`, `null`, `"x"`, `{`, ``,
		strings.Repeat(`[`, 40) + strings.Repeat(`]`, 40),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := Log(raw)
		if err != nil {
			return
		}
		if Level(e.Level) != e.Level {
			t.Fatalf("invalid level %q", e.Level)
		}
		if Text(e.Logger, MaxLogger) != e.Logger {
			t.Fatalf("unsanitised logger %q", e.Logger)
		}
		checkValue(t, e.Data, 1)
		if _, err := json.Marshal(e); err != nil {
			t.Fatalf("entry does not encode: %v", err)
		}
	})
}

// checkValue asserts that v is a fixed point of Value's rules at depth.
func checkValue(t *testing.T, v any, depth int) {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, float64:
	case json.Number:
		if !validNumber(string(x)) {
			t.Fatalf("invalid number %q", x)
		}
	case string:
		if Text(x, MaxString) != x {
			t.Fatalf("unsanitised string %q", x)
		}
	case []any:
		if depth > MaxDepth {
			t.Fatalf("slice at depth %d", depth)
		}
		for _, e := range x {
			checkValue(t, e, depth+1)
		}
	case map[string]any:
		if depth > MaxDepth {
			t.Fatalf("map at depth %d", depth)
		}
		for k, e := range x {
			if Text(k, MaxString) != k {
				t.Fatalf("unsanitised key %q", k)
			}
			checkValue(t, e, depth+1)
		}
	default:
		t.Fatalf("unexpected type %T", v)
	}
}
