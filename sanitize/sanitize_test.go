package sanitize

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// badRune is the test's own statement of what Text must never output,
// written independently of forbidden.
func badRune(r rune) bool {
	switch {
	case r <= 0x1F, r >= 0x7F && r <= 0x9F:
		return true
	case r == 0x061C, r == 0x200E, r == 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029, r == 0x200B, r == 0x2060, r == 0xFEFF, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// checkText asserts the invariants every Text result must satisfy.
func checkText(t *testing.T, in string, max int, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Text(%q, %d) = %q: invalid UTF-8", in, max, out)
	}
	for _, r := range out {
		if badRune(r) {
			t.Fatalf("Text(%q, %d) = %q: contains forbidden rune %U", in, max, out, r)
		}
	}
	if n := utf8.RuneCountInString(out); max > 0 && n > max {
		t.Fatalf("Text(%q, %d) = %q: %d runes", in, max, out, n)
	}
	if again := Text(out, max); again != out {
		t.Fatalf("Text not idempotent on %q (max %d): %q then %q", in, max, out, again)
	}
}

func TestText(t *testing.T) {
	long := strings.Repeat("a", 10000)
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello, world", 0, "hello, world"},
		{"empty", "", 10, ""},
		{"unicode kept", "naïve café 日本語 👍🏽 \u200d", 0, "naïve café 日本語 👍🏽 \u200d"},
		{"ZWJ emoji kept", "👨\u200d👩\u200d👧", 0, "👨\u200d👩\u200d👧"},
		{"ZWNJ kept", "می\u200cخواهم", 0, "می\u200cخواهم"},

		// Trojan Source (CVE-2021-42574).
		{"RLO", "access\u202e\u2066// admin\u2069\u2066", 0, "access// admin"},
		{"isolates", "a\u2066b\u2067c\u2068d\u2069e", 0, "abcde"},
		{"embeddings", "\u202aa\u202bb\u202cc\u202dd\u202e", 0, "abcd"},
		{"marks", "a\u200eb\u200fc\u061cd", 0, "abcd"},

		// Terminal escapes.
		{"SGR colour", "\x1b[31mred\x1b[0m", 0, "red"},
		{"SGR params", "\x1b[1;38;5;196mbold\x1b[m!", 0, "bold!"},
		{"private CSI", "\x1b[?1049hscreen\x1b[2J\x1b[H", 0, "screen"},
		{"OSC title BEL", "\x1b]0;pwned\x07after", 0, "after"},
		{"OSC title ST", "\x1b]2;pwned\x1b\\after", 0, "after"},
		{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\", 0, "click me"},
		{"OSC 8 BEL", "\x1b]8;id=1;http://x\x07link\x1b]8;;\x07", 0, "link"},
		{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIH4=\x07ok", 0, "ok"},
		{"C1 CSI", "\u009b31mred\u009b0m", 0, "red"},
		{"C1 OSC ST", "\u009d0;title\u009cafter", 0, "after"},
		{"DCS", "\x1bPq#0;2;0;0;0\x1b\\x", 0, "x"},
		{"APC", "\x1b_Gpayload\x1b\\x", 0, "x"},
		{"two-byte ESC", "a\x1bcb\x1b7c\x1b8", 0, "abc"},
		{"charset ESC", "\x1b(Bx\x1b)0y", 0, "xy"},
		{"unterminated CSI", "x\x1b[31", 0, "x"},
		{"unterminated OSC eats rest", "x\x1b]0;title never ends", 0, "x"},
		{"lone ESC", "x\x1b", 0, "x"},
		{"ESC then non-ASCII", "\x1bé", 0, "é"},
		{"CSI broken by non-ASCII", "\x1b[31é", 0, "é"},
		{"CAN cancels", "\x1b[31\x18m", 0, "m"},
		{"control inside CSI", "\x1b[3\x001m red", 0, " red"},
		{"ESC restarts", "\x1b\x1b[31mx", 0, "x"},
		{"ESC in OSC restarts", "\x1b]0;t\x1b[31mx", 0, "x"},

		// Controls and separators.
		{"NUL", "a\x00b", 0, "ab"},
		{"C0", "a\x01\x02\x07\x08\x1fb\x7f", 0, "ab"},
		{"C1", "a\u0080\u0085b\u0091c", 0, "a bc"},
		{"newline", "line1\nline2", 0, "line1 line2"},
		{"CRLF one space", "a\r\nb", 0, "a b"},
		{"CR overwrite", "harmless\rmalicious", 0, "harmless malicious"},
		{"tab", "a\tb", 0, "a b"},
		{"run of breaks", "a\n\n\t\r\nb", 0, "a b"},
		{"break run across control", "a\n\x00\nb", 0, "a b"},
		{"spaces kept", "a \n b", 0, "a   b"},
		{"LS PS", "a\u2028b\u2029c", 0, "a b c"},
		{"invisible", "ad\u200bmin\u2060\ufeff\u2062", 0, "admin"},
		{"tags", "hi\U000E0001\U000E0069\U000E0067\U000E007F!", 0, "hi!"},

		// Invalid UTF-8.
		{"invalid byte", "a\xffb", 0, "a\ufffdb"},
		{"raw C1 byte", "a\x9b31mb", 0, "a\ufffd31mb"},
		{"truncated rune", "a\xe6\x97", 0, "a\ufffd\ufffd"},
		{"surrogate", "\xed\xa0\x80", 0, "\ufffd\ufffd\ufffd"},
		{"overlong NUL", "\xc0\x80", 0, "\ufffd\ufffd"},

		// Clamping: the ellipsis counts toward max.
		{"fits exactly", "abcde", 5, "abcde"},
		{"clamped", "abcdef", 5, "abcd…"},
		{"max 1", "abc", 1, "…"},
		{"max 1 fits", "a", 1, "a"},
		{"negative max", "abc", -1, "abc"},
		{"multibyte clamp", "日本語テキスト", 4, "日本語…"},
		{"emoji clamp", "👍👍👍", 2, "👍…"},
		{"clamp counts output not input", "\x1b[31mabc\x1b[0m", 3, "abc"},
		{"clamp after removal", "a\u202eb\u202ec\u202ed", 3, "ab…"},
		{"clamp invalid", "\xff\xff\xff", 2, "\ufffd…"},
		{"clamp line break", "a\nb", 2, "a…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("Text(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			checkText(t, tc.in, tc.max, got)
		})
	}

	t.Run("10000 clamped", func(t *testing.T) {
		got := Text(long, MaxString)
		if n := utf8.RuneCountInString(got); n != MaxString {
			t.Fatalf("got %d runes, want %d", n, MaxString)
		}
		if want := strings.Repeat("a", MaxString-1) + "…"; got != want {
			t.Fatalf("unexpected clamp result")
		}
	})
	t.Run("10000 multibyte clamped", func(t *testing.T) {
		in := strings.Repeat("é日👍", 10000/3+1)
		got := Text(in, 1000)
		if n := utf8.RuneCountInString(got); n != 1000 {
			t.Fatalf("got %d runes, want 1000", n)
		}
		if want := string([]rune(in)[:999]) + "…"; got != want {
			t.Fatalf("clamp not at rune boundary")
		}
		checkText(t, in, 1000, got)
	})
	t.Run("plain ASCII does not allocate", func(t *testing.T) {
		s := "ordinary log line"
		if n := testing.AllocsPerRun(100, func() { _ = Text(s, MaxString) }); n != 0 {
			t.Fatalf("%v allocations", n)
		}
	})
}

func TestLevel(t *testing.T) {
	for _, l := range []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if got := Level(l); got != l {
			t.Errorf("Level(%q) = %q", l, got)
		}
	}
	for _, l := range []string{"", "fatal", "trace", "warn", "ERROR", "Info", " info", "info\n", "\x1b[31merror", "emergency\u202e"} {
		if got := Level(l); got != "info" {
			t.Errorf("Level(%q) = %q, want info", l, got)
		}
	}
}

// nest returns depth levels of containers, alternating []any and
// map[string]any, around leaf.
func nest(depth int, leaf any) any {
	v := leaf
	for i := 0; i < depth; i++ {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"k": v}
		}
	}
	return v
}

// containerDepth returns how many containers are nested in v and the value
// found inside the innermost one.
func containerDepth(v any) (int, any) {
	d := 0
	for {
		switch x := v.(type) {
		case []any:
			d, v = d+1, x[0]
		case map[string]any:
			d, v = d+1, x["k"]
		default:
			return d, v
		}
	}
}

func TestValueDepth(t *testing.T) {
	tests := []struct {
		in        int
		wantDepth int
		wantLeaf  any
	}{
		{1, 1, "leaf"},
		{MaxDepth - 1, MaxDepth - 1, "leaf"},
		{MaxDepth, MaxDepth, "leaf"},
		{MaxDepth + 1, MaxDepth, TruncatedNesting},
		{100, MaxDepth, TruncatedNesting},
		{5000, MaxDepth, TruncatedNesting},
	}
	for _, tc := range tests {
		got := Value(nest(tc.in, "leaf"))
		d, leaf := containerDepth(got)
		if d != tc.wantDepth || leaf != tc.wantLeaf {
			t.Errorf("depth %d: got %d containers around %q, want %d around %q", tc.in, d, leaf, tc.wantDepth, tc.wantLeaf)
		}
	}
	// A top-level scalar is depth 1 and is never truncated.
	if got := Value("x"); got != "x" {
		t.Errorf("Value(x) = %v", got)
	}
}

func TestValueDeepJSON(t *testing.T) {
	// 100-deep JSON decoded the way Log does it.
	raw := strings.Repeat(`{"k":[`, 50) + `"\u001b[31mleaf"` + strings.Repeat(`]}`, 50)
	e, err := Log([]byte(`{"level":"info","data":` + raw + `}`))
	if err != nil {
		t.Fatal(err)
	}
	d := 0
	for v := e.Data; ; d++ {
		if m, ok := v.(map[string]any); ok {
			v = m["k"]
		} else if s, ok := v.([]any); ok {
			v = s[0]
		} else {
			if v != TruncatedNesting {
				t.Fatalf("innermost value %#v", v)
			}
			break
		}
	}
	if d != MaxDepth {
		t.Fatalf("kept %d levels, want %d", d, MaxDepth)
	}
}

func TestValue(t *testing.T) {
	big := json.Number("123456789012345678901234567890")
	tests := []struct {
		name string
		in   any
		want any
	}{
		{"nil", nil, nil},
		{"bool", true, true},
		{"float", 1.5, 1.5},
		{"NaN", math.NaN(), "NaN"},
		{"Inf", math.Inf(-1), "-Inf"},
		{"big number", big, big},
		{"bad number", json.Number("1\x1b[31m"), "1"},
		{"string", "\x1b[31mred\x1b[0m", "red"},
		{"long string", strings.Repeat("x", 10000), strings.Repeat("x", MaxString-1) + "…"},
		{"slice", []any{"a\u202eb", 1.0, nil, false}, []any{"ab", 1.0, nil, false}},
		{"map keys", map[string]any{"\x1b]0;t\x07key": "v\x00"}, map[string]any{"key": "v"}},
		{"key collision clean wins", map[string]any{"\x00a": 1.0, "a": 2.0, "a\u202e": 3.0}, map[string]any{"a": 2.0}},
		{"key collision smallest wins", map[string]any{"a\u202e": 3.0, "\x00a": 1.0}, map[string]any{"a": 1.0}},
		{"nil map", map[string]any(nil), map[string]any(nil)},
		{"nil slice", []any(nil), []any(nil)},
		{"map[any]any", map[any]any{1: "x\x1b[31m", 2: "y"}, "map[1:x 2:y]"},
		{"[]string", []string{"a\nb", "c"}, "[a b c]"},
		{"int", 42, "42"},
		{"struct", struct {
			A string
			B int
		}{"\u202ehi", 1}, "{hi 1}"},
		{"panicking Stringer", panicky{}, "%!v(PANIC=String method: boom)"},
		{"nil pointer Stringer", (*panicky)(nil), "<nil>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Value(tc.in)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Value(%#v) = %#v, want %#v", tc.in, got, tc.want)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		})
	}
}

type panicky struct{}

func (panicky) String() string { panic("boom") }

type doublePanic struct{}

func (doublePanic) String() string { panic(doublePanic{}) }

func TestValueHostileGoValues(t *testing.T) {
	cyclicMap := map[any]any{}
	cyclicMap["self"] = cyclicMap
	cyclicSlice := []any{nil}
	cyclicSlice[0] = cyclicSlice
	type node struct {
		Next *node
		M    map[string]any
	}
	n := &node{M: map[string]any{}}
	n.Next = n
	n.M["n"] = n
	selfJSON := map[string]any{}
	selfJSON["self"] = selfJSON
	var wide any = "leaf"
	for i := 0; i < 20; i++ { // 2^20 leaves for fmt
		wide = [2]any{wide, wide}
	}

	tests := []struct {
		name string
		in   any
		want any // nil: only check it does not blow up
	}{
		{"cyclic map[any]any", cyclicMap, "[unprintable: map[interface {}]interface {}]"},
		{"cyclic []any", cyclicSlice, nil},
		{"cyclic pointer struct", n, nil},
		{"cyclic map[string]any", selfJSON, nil},
		{"exponential DAG", wide, "[unprintable: [2]interface {}]"},
		{"reflect.Value of cycle", reflect.ValueOf(cyclicMap), "[unprintable: reflect.Value]"},
		{"nested panic", doublePanic{}, "[unprintable: sanitize.doublePanic]"},
		{"func", func() {}, nil},
		{"chan", make(chan int), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Value(tc.in)
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Value = %#v, want %#v", got, tc.want)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
		})
	}
	// The cyclic []any is a JSON type: it is cut at MaxDepth, not stringified.
	if d, leaf := containerDepth(Value(cyclicSlice)); d != MaxDepth || leaf != TruncatedNesting {
		t.Fatalf("cyclic slice: %d levels around %#v", d, leaf)
	}
}

func TestLog(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Entry
	}{
		{"full", `{"level":"error","logger":"db","data":{"msg":"x"}}`,
			Entry{Level: "error", Logger: "db", Data: map[string]any{"msg": "x"}}},
		{"unknown level", `{"level":"fatal","data":"x"}`, Entry{Level: "info", Data: "x"}},
		{"level case", `{"level":"ERROR","data":"x"}`, Entry{Level: "info", Data: "x"}},
		{"non-string level", `{"level":3,"data":"x"}`, Entry{Level: "info", Data: "x"}},
		{"missing level", `{"data":"x"}`, Entry{Level: "info", Data: "x"}},
		{"non-string logger", `{"level":"debug","logger":{"a":1},"data":"x"}`, Entry{Level: "debug", Data: "x"}},
		{"null logger", `{"level":"debug","logger":null,"data":"x"}`, Entry{Level: "debug", Data: "x"}},
		{"hostile logger", `{"level":"info","logger":"\u001b]0;pwned\u0007db\u202e\n","data":1}`,
			Entry{Level: "info", Logger: "db ", Data: json.Number("1")}},
		{"long logger", `{"logger":"` + strings.Repeat("l", 300) + `"}`,
			Entry{Level: "info", Logger: strings.Repeat("l", MaxLogger-1) + "…"}},
		{"extra fields dropped", `{"level":"info","data":"x","_meta":{"a":1},"Level":"error","extra":"\u001b[2J"}`,
			Entry{Level: "info", Data: "x"}},
		{"case-insensitive lookalike ignored", `{"LEVEL":"error","Data":"y"}`, Entry{Level: "info"}},
		{"big integer survives", `{"data":{"id":123456789012345678901234567890}}`,
			Entry{Level: "info", Data: map[string]any{"id": json.Number("123456789012345678901234567890")}}},
		{"missing data", `{"level":"info"}`, Entry{Level: "info"}},
		{"non-object array", `[1,2]`, Entry{Level: "info"}},
		{"non-object null", `null`, Entry{Level: "info"}},
		{"whitespace around", " \n{\"data\":\"x\"}\n ", Entry{Level: "info", Data: "x"}},
		{"invalid UTF-8 in JSON", "{\"data\":\"a\xffb\"}", Entry{Level: "info", Data: "a\ufffdb"}},
		{"escaped controls", `{"data":"a\u0000b\u009b31mc\u2028d"}`, Entry{Level: "info", Data: "abc d"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Log([]byte(tc.raw))
			if err != nil {
				t.Fatalf("Log: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Log(%q) = %#v, want %#v", tc.raw, got, tc.want)
			}
		})
	}
}

func TestLogMalformed(t *testing.T) {
	for _, raw := range []string{
		``,
		` `,
		`{`,
		`{"level":}`,
		`{"level":"info"} {}`,
		`{"level":"info"}x`,
		`nul`,
		`{"a":1,}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		if e, err := Log([]byte(raw)); err == nil {
			t.Errorf("Log(%.40q) = %#v, want error", raw, e)
		}
	}
}

func TestLogErrorIsWrapped(t *testing.T) {
	_, err := Log([]byte(`{"level":}`))
	var syn *json.SyntaxError
	if !errors.As(err, &syn) {
		t.Fatalf("error %v does not wrap *json.SyntaxError", err)
	}
}
