package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end: the built CLI against a stdio server that sends 2000 log
// entries at once. The log rate limit (50/s, bursts of 100) lets through
// the burst and what refilled while the flood was read; in real time that
// is not an exact number, so the test counts the entries shown (the first
// 100, then any that a refilled token let through, in order): every entry
// is either shown or counted in the summary, which names exactly the rest.
// (TestDropSummaryAfterLogFlood gets exactly 1900 in fake time.)

const floodEntries = 2000

// entryShown checks that entry "entry N" may come after the shown ones: the
// burst first, 0 to 99, then in increasing order.
func entryShown(t *testing.T, data string, shown []int) []int {
	t.Helper()
	var n int
	_, err := fmt.Sscanf(data, "entry %d", &n)
	require.NoError(t, err, "%q", data)
	switch {
	case len(shown) < 100:
		require.Equal(t, len(shown), n, "the burst passes in order")
	default:
		require.Greater(t, n, shown[len(shown)-1], "entries in order")
	}
	return append(shown, n)
}

var droppedLine = regexp.MustCompile(`^conduit: dropped (\d+) server log entries over the rate limit$`)

func TestE2EDropSummaryAfterLogFlood(t *testing.T) {
	env, server := scripted(t, fmt.Sprint("flood:", floodEntries))
	var out strings.Builder
	code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "flood"}, server...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "done\n", out.String())

	var shown []int
	dropped := -1
	for line := range strings.Lines(stderr) {
		line = strings.TrimSuffix(line, "\n")
		if m := droppedLine.FindStringSubmatch(line); m != nil {
			require.Equal(t, -1, dropped, "one summary line: %s", stderr)
			dropped, _ = strconv.Atoi(m[1])
			continue
		}
		require.Equal(t, -1, dropped, "an entry after the summary")
		data, ok := strings.CutPrefix(line, "[info] ")
		require.True(t, ok, "a log entry or the summary: %q", line)
		shown = entryShown(t, data, shown)
	}
	assert.GreaterOrEqual(t, len(shown), 100, "the burst passes")
	assert.Equal(t, floodEntries-len(shown), dropped, "the summary names every entry not shown")
	t.Logf("%d shown, %d dropped", len(shown), dropped)
}

func TestE2EDropSummaryAfterLogFloodJSON(t *testing.T) {
	env, server := scripted(t, fmt.Sprint("flood:", floodEntries))
	var out strings.Builder
	code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "--json", "flood"}, server...)...)
	require.Equal(t, exitOK, code, stderr)

	var shown []int
	var summaries []map[string]any
	for line := range strings.Lines(stderr) {
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &v), "one JSON object per line: %q", line)
		if _, ok := v["dropped"]; ok {
			summaries = append(summaries, v)
			continue
		}
		require.Equal(t, "info", v["level"], line)
		require.Len(t, v, 3, line)
		data, _ := v["data"].(string)
		shown = entryShown(t, data, shown)
	}
	require.Len(t, summaries, 1, stderr)
	assert.Equal(t, map[string]any{
		"dropped": map[string]any{"logs_rate_limited": float64(floodEntries - len(shown))},
		"final":   true,
	}, summaries[0])
	assert.GreaterOrEqual(t, len(shown), 100, "the burst passes")
	t.Logf("%d shown, %d dropped", len(shown), floodEntries-len(shown))
}
