package load

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
