package load_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/load"
)

// spread is a report of a closed-loop run whose calls of each tool took
// from lo to lo·2^10, n per bucket doubling, failed of them failing.
func spread(lo time.Duration, n, failed int64, tools ...string) *load.Report {
	rep := &load.Report{Shape: load.Shape{Mode: "closed loop"}, LatencyFrom: "send time", PerTool: map[string]load.ToolReport{}}
	for _, tool := range tools {
		var hist []load.Bucket
		for i := range 10 {
			from := lo << i
			hist = append(hist, load.Bucket{From: load.Millis(from), UpTo: load.Millis(from * 2), Count: n})
		}
		l := load.Percentiles{P50: load.Millis(lo << 5), P90: load.Millis(lo << 9), P99: load.Millis(lo << 10), P999: load.Millis(lo << 10)}
		tr := load.ToolReport{Calls: 10 * n, OK: 10*n - failed, Failed: failed, Throughput: float64(10 * n), Latency: l, Histogram: hist}
		rep.PerTool[tool] = tr
		rep.Calls, rep.OK, rep.Failed, rep.Throughput, rep.Latency = rep.Calls+tr.Calls, rep.OK+tr.OK, rep.Failed+tr.Failed, rep.Throughput+tr.Throughput, l
		rep.Histogram = append(rep.Histogram, hist...)
	}
	return rep
}

// A run against itself: no difference, nothing significant, no regression
// even with a 0 % budget.
func TestCompareSameRun(t *testing.T) {
	a := spread(time.Millisecond, 100, 0, "fetch", "search")
	c := load.Compare(a, a)
	require.Len(t, c.Rows, 3, "every call, then each tool by name")
	assert.Equal(t, []string{"", "fetch", "search"}, []string{c.Rows[0].Tool, c.Rows[1].Tool, c.Rows[2].Tool})
	for _, r := range c.Rows {
		assert.Zero(t, r.KS)
		assert.Equal(t, 1.0, r.P)
		assert.False(t, r.Significant)
	}
	assert.Empty(t, c.Regressions(0))
}

// One tool twice as slow, with failures, and the throughput down in a
// closed loop: each is a regression of that tool; the other tool is not.
func TestCompareRegressionsPerTool(t *testing.T) {
	a := spread(time.Millisecond, 100, 0, "fetch", "search")
	b := spread(time.Millisecond, 100, 0, "fetch", "search")
	slow := spread(2*time.Millisecond, 50, 5, "search").PerTool["search"]
	b.PerTool["search"] = slow
	c := load.Compare(a, b)
	require.Len(t, c.Rows, 3)
	assert.False(t, c.Rows[1].Significant, "fetch is the same")
	assert.True(t, c.Rows[2].Significant, "search moved by one bucket of ten")
	assert.InDelta(t, 0.1, c.Rows[2].KS, 1e-9)
	var got []string
	for _, r := range c.Regressions(10) {
		got = append(got, r.String())
	}
	assert.Equal(t, []string{"search p50 +100.0%", "search p90 +100.0%", "search p99 +100.0%", "search p99.9 +100.0%", "search error rate new", "search throughput -50.0%"}, got)
	var text bytes.Buffer
	require.NoError(t, c.WriteText(&text))
	assert.Contains(t, text.String(), "\ntool search                 A              B    change\n")
	assert.Contains(t, text.String(), "latency: no significant difference (Kolmogorov-Smirnov D 0.000, p 1)\n")
	var page bytes.Buffer
	require.NoError(t, load.WriteCompareHTML(&page, c))
	assert.Contains(t, page.String(), "<title>conduit load compare: p99 ")
	assert.Empty(t, loadsFromNetwork.FindAllString(page.String(), -1))
}
