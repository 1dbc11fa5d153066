package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/load"
)

// The live line: elapsed of total, the last window's rate and p99, errors,
// the stage; a bar when the calls are counted.
func TestLoadLine(t *testing.T) {
	p := load.Progress{Elapsed: 65 * time.Second, Total: 3 * time.Minute, Calls: 19500, Errors: 3,
		RateNow: 301, P99Now: load.Millis(4100 * time.Microsecond), Stage: 2}
	assert.Equal(t, "load 1m5s/3m0s 19500 calls, 301.0 calls/s now, p99 4.1ms now, 3 errors, stage 2/3", loadLine(p, 0, 3))
	p.Stage, p.Total = 0, 0
	assert.Equal(t, "load 1m5s [##########----------] 19500 calls, 301.0 calls/s now, p99 4.1ms now, 3 errors", loadLine(p, 39000, 0))
	assert.Equal(t, "load warming up", loadLine(load.Progress{Warmup: true}, 0, 0))
}

// --stages runs a ramp: the report names the stages and their entries.
func TestLoadStages(t *testing.T) {
	dir := t.TempDir()
	report, html := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
	r := runInProcess(t, "load", "--stages", "1s:20,2s:40,1s:0", "--concurrency", "4", "--report", report, "--html", html,
		"test_simple_text", "--", server(t))
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "open loop")
	assert.Contains(t, r.stdout, "stages:     1 1s 0→20 calls/s, 2 2s 20→40 calls/s, 3 1s 40→0 calls/s\n")
	rep := readReport(t, report)
	require.Len(t, rep.Stages, 3)
	assert.Equal(t, load.StageReport{Stage: 2, From: 1, To: 3, StartTarget: 20, Target: 40, Unit: "calls/s"}, rep.Stages[1])
	// 10 + 60 + 20 calls: the ramp's integral.
	assert.Equal(t, int64(90), rep.Calls)
	page, err := os.ReadFile(html)
	require.NoError(t, err)
	assert.Contains(t, string(page), "stage 3")
	for _, bad := range [][]string{
		{"--stages", "1s:20", "--rate", "5"},
		{"--stages", "1s:20", "--duration", "5s"},
		{"--stages", "1s"},
		{"--stages", "1s:20", "--warmup", "2s"},
		{"--ramp-callers", "--calls", "3"},
	} {
		r := runInProcess(t, append(append([]string{"load"}, bad...), "test_simple_text", "--", server(t))...)
		assert.Equal(t, 2, r.code, "%q: %v", bad, r)
	}
}

// compare prints both runs side by side and exits 1 on a regression
// beyond --max-regression.
func TestLoadCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rep load.Report) string {
		t.Helper()
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, mustJSON(t, rep), 0o600))
		return p
	}
	fast := write("a.json", fakeReport(1000, 0, time.Millisecond))
	slow := write("b.json", fakeReport(1000, 10, 2*time.Millisecond))
	r := runInProcess(t, "load", "compare", fast, slow)
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "all calls                   A              B    change\n")
	assert.Contains(t, r.stdout, "p50                       1ms            2ms   +100.0%\n")
	assert.Contains(t, r.stdout, "error rate              0.00%          1.00%       new\n")
	assert.Contains(t, r.stdout, "latency: the distributions differ (Kolmogorov-Smirnov D 1.000, p 0)\n")

	r = runInProcess(t, "load", "compare", "--max-regression", "10%", fast, slow)
	assert.Equal(t, 1, r.code, r)
	assert.Equal(t, "conduit: run B is worse than run A beyond --max-regression 10%: overall p50 +100.0%, overall p90 +100.0%, overall p99 +100.0%, overall p99.9 +100.0%, overall error rate new\n", r.stderr)
	r = runInProcess(t, "load", "compare", "--max-regression", "10%", slow, fast)
	assert.Equal(t, 0, r.code, r)

	htmlPath := filepath.Join(dir, "c.html")
	r = runInProcess(t, "load", "compare", "--html", htmlPath, fast, slow)
	require.Equal(t, 0, r.code, r)
	page, err := os.ReadFile(htmlPath)
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(page), "<svg"))

	for _, bad := range [][]string{{fast}, {fast, filepath.Join(dir, "none.json")}, {"--max-regression", "x", fast, slow}, {fast, write("c.json", load.Report{})}} {
		r := runInProcess(t, append([]string{"load", "compare"}, bad...)...)
		assert.Equal(t, 2, r.code, "%q: %v", bad, r)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// fakeReport is an open-loop report of calls that all took latency, failed
// of them failed.
func fakeReport(calls, failed int64, latency time.Duration) load.Report {
	l := load.Millis(latency)
	return load.Report{
		Shape: load.Shape{Mode: "open loop", Rate: 100}, LatencyFrom: "intended send time",
		Calls: calls, OK: calls - failed, Failed: failed, Throughput: 100, Elapsed: load.Millis(time.Duration(calls) * 10 * time.Millisecond),
		Latency:   load.Percentiles{Min: l, P50: l, P90: l, P99: l, P999: l, Max: l, Mean: l},
		Outcomes:  map[string]int64{"ok": calls - failed, "timeout": failed},
		Histogram: []load.Bucket{{From: l * 95 / 100, UpTo: l * 105 / 100, Count: calls}},
	}
}
