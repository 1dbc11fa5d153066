package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

func TestArgsTemplate(t *testing.T) {
	m, err := newMix([]Call{{Tool: "t", Args: json.RawMessage(`{"id": "{{n}}", "name": "doc-{{n}}.md",
		"q": {"$pick": ["go", "mcp"]}, "deep": [{"$pick": [1]}, "x"]}`)}})
	require.NoError(t, err)
	got := m.args(0, 42).(map[string]any)
	assert.Equal(t, int64(42), got["id"])
	assert.Equal(t, "doc-42.md", got["name"])
	assert.Contains(t, []any{"go", "mcp"}, got["q"])
	assert.Equal(t, []any{float64(1), "x"}, got["deep"])
	// The template itself is not changed.
	assert.Equal(t, "{{n}}", m.templates[0].(map[string]any)["id"])

	m, err = newMix([]Call{{Tool: "t"}})
	require.NoError(t, err)
	assert.Nil(t, m.args(0, 1))
}

func TestMixPicksByWeight(t *testing.T) {
	m, err := newMix([]Call{{Tool: "a", Weight: 3}, {Tool: "b"}})
	require.NoError(t, err)
	var n [2]int
	for range 4000 {
		n[m.pick()]++
	}
	// 3:1 — 3000 and 1000, within a generous margin.
	assert.InDelta(t, 3000, n[0], 300)
	assert.InDelta(t, 1000, n[1], 300)
}

func TestParseMix(t *testing.T) {
	mix, err := ParseMix([]byte(`[{"tool": "a", "weight": 2, "args": {"x": 1}}, {"tool": "b"}]`))
	require.NoError(t, err)
	assert.Equal(t, []Call{{Tool: "a", Weight: 2, Args: json.RawMessage(`{"x": 1}`)}, {Tool: "b"}}, mix)
	for in, msg := range map[string]string{
		`[]`:                 "no calls",
		`{"tool": "a"}`:      "JSON array",
		`[{"tool": "a"}] []`: "more than one",
		`[{"tol": "a"}]`:     `unknown field "tol"`,
	} {
		_, err := ParseMix([]byte(in))
		assert.ErrorContains(t, err, msg, in)
	}
}

// A report keeps each outcome's most frequent messages, and bounds the
// distinct ones it counts: past maxKeptMessages, a new one counts as
// "(other messages)".
func TestRecorderKeepsTheMostFrequentMessages(t *testing.T) {
	r := newRecorder(time.Now(), 0)
	for range 10 {
		r.record(result{tool: "nosuch", outcome: OutcomeIsError, message: "Tool nosuch not found"})
	}
	for i := range 150 {
		r.record(result{tool: "x", outcome: OutcomeIsError, message: fmt.Sprintf("failure %03d", i)})
	}
	r.record(result{tool: "x", outcome: OutcomeOK})
	var rep Report
	r.fill(&rep)
	if got, want := fmt.Sprint(rep.Messages), "map[is_error:[{(other messages) 51} {Tool nosuch not found 10} {failure 000 1}]]"; got != want {
		t.Fatalf("messages = %s, want %s", got, want)
	}
}

// A failed call's message is its error, or an is_error result's first
// text, on one line, sanitised and cut to 200 runes.
func TestMessageOf(t *testing.T) {
	res := &conduit.CallToolResult{IsError: true, Content: []conduit.ContentBlock{{Type: "image"}, {Type: "text", Text: "Tool \x1b]52;c;eA==\x07nosuch\nnot found"}}}
	if got := messageOf(res, nil); got != "Tool nosuch not found" {
		t.Errorf("messageOf(is_error) = %q", got)
	}
	if got := messageOf(nil, &conduit.Error{Kind: conduit.KindTimeout, Method: "tools/call", Message: "deadline"}); got != "tools/call: timeout: deadline" {
		t.Errorf("messageOf(err) = %q", got)
	}
	long := messageOf(nil, errors.New(strings.Repeat("é", 300)))
	if n := utf8.RuneCountInString(long); n != 200 || !strings.HasSuffix(long, "…") {
		t.Errorf("a long message is %d runes: %q", n, long)
	}
}

// The last second of a run that ends 0.5 s into it plots its calls over
// that half second: 5 calls in it are 10 calls/s, as in the seconds
// before, not a dive to 5. Points sit at the middle of their window; a
// window without calls has a rate (0) but no p99.
func TestCallRateOfThePartialLastSecond(t *testing.T) {
	rep := &Report{Elapsed: Millis(3500 * time.Millisecond), TimelineStep: 1,
		Timeline: []Second{{At: 0, Calls: 10, P99: Millis(time.Millisecond)}, {At: 1, Calls: 10}, {At: 2, Calls: 0}, {At: 3, Calls: 5}}}
	ws := windows(rep, 3.5)
	var rates, p99s []string
	for _, w := range ws {
		rates = append(rates, fmt.Sprintf("%g@%g", w.per(w.calls), (w.from+w.to)/2))
		p99s = append(p99s, fmt.Sprint(p99Value(w)))
	}
	if got := fmt.Sprint(rates); got != "[10@0.5 10@1.5 0@2.5 10@3.25]" {
		t.Fatalf("rates = %s", got)
	}
	if got := fmt.Sprint(p99s); got != "[1 0 NaN 0]" {
		t.Fatalf("p99 = %s", got)
	}
}
