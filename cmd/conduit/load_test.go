package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/load"
)

const loadTestAnswers = `{"sampling": {"result": {"content": {"type": "text", "text": "hi"}}, "delay": {"uniform": ["1ms", "3ms"]}},
 "elicitation": {"action": "accept", "content": {"name": "Ada"}, "delay": {"samples": ["1ms", "2ms"]}}}`

// readReport reads a --report file.
func readReport(t *testing.T, path string) load.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep load.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return rep
}

// The report's counts are the calls made, and each input request is one
// audit record, in both eras.
func TestLoadCountsMatchCallsAndAudit(t *testing.T) {
	for name, c := range map[string]struct {
		era, tool, args, method string
	}{
		"legacy sampling":  {"legacy", "test_sampling", `{"prompt": "n{{n}}"}`, "sampling/createMessage"},
		"modern mrtr form": {"modern", "test_input_required_result_elicitation", "", "elicitation/create"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			report, audit, html := filepath.Join(dir, "r.json"), filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "r.html")
			args := []string{"load", "--era", c.era, "--sessions", "2", "--concurrency", "3", "--calls", "30", "--unlimited-input",
				"--answers", writeFile(t, "answers.json", loadTestAnswers), "--audit", audit, "--report", report, "--html", html, c.tool}
			if c.args != "" {
				args = append(args, c.args)
			}
			r := runInProcess(t, append(args, "--", server(t))...)
			require.Equal(t, 0, r.code, r)
			assert.Contains(t, r.stdout, "calls:      30 in ")
			assert.Contains(t, r.stdout, ": 30 ok, 0 failed\n")
			assert.Contains(t, r.stdout, "input:      "+c.method+": answered 30\n")
			assert.Contains(t, r.stdout, "server peak RSS: everything-serv") // the comm name, cut at 15 bytes
			rep := readReport(t, report)
			assert.Equal(t, int64(30), rep.Calls)
			assert.Equal(t, int64(30), rep.OK)
			assert.Equal(t, map[string]int64{"ok": 30}, rep.Outcomes)
			assert.Equal(t, map[string]map[string]int64{c.method: {"answered": 30}}, rep.Input)
			assert.Len(t, rep.Servers, 2)
			records := readAudit(t, audit)
			assert.Len(t, records, 30)
			for _, rec := range records {
				assert.Equal(t, "answered", rec["outcome"])
				assert.Equal(t, c.method, rec["method"])
			}
			// The delays are in the time paused for input: at least 1 ms each
			// (for legacy, the part not tied to one call is counted apart).
			paused := time.Duration(rep.Time.PausedForInput + rep.Time.UnattributedInput)
			assert.GreaterOrEqual(t, paused, 30*time.Millisecond)
			page, err := os.ReadFile(html)
			require.NoError(t, err)
			assert.Equal(t, 1, strings.Count(string(page), "<svg"), "a run under 3 s: the histogram only")
			assert.Contains(t, string(page), "too short for a plot over time")
			assert.NotContains(t, string(page), `src=`)
		})
	}
}

// Progress lines are JSON with --json, and the report is JSON on stdout.
func TestLoadJSON(t *testing.T) {
	r := runInProcess(t, "load", "--json", "--calls", "5", "--answers", writeFile(t, "answers.json", loadTestAnswers),
		"test_sampling", `{"prompt": "x"}`, "--", server(t))
	require.Equal(t, 0, r.code, r)
	var rep load.Report
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, int64(5), rep.Calls)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.NotEmpty(t, lines)
	var last load.Progress
	for _, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &last), l)
	}
	assert.True(t, last.Final)
	assert.Equal(t, int64(5), last.Calls)
	assert.Zero(t, last.Errors)
}

// With --rate, latency runs from the intended send time, and the report
// says so.
func TestLoadRateIsOpenLoop(t *testing.T) {
	report := filepath.Join(t.TempDir(), "r.json")
	r := runInProcess(t, "load", "--rate", "200", "--calls", "10", "--report", report,
		"--answers", writeFile(t, "answers.json", loadTestAnswers), "test_sampling", `{"prompt": "x"}`, "--", server(t))
	require.Equal(t, 0, r.code, r)
	assert.Contains(t, r.stdout, "open loop at 200 calls/s")
	assert.Contains(t, r.stdout, "measured from the intended send time (open loop: corrected for coordinated omission)")
	// stderr is not a terminal: no live line, nothing but the report.
	assert.Empty(t, r.stderr)
	rep := readReport(t, report)
	assert.Equal(t, "open loop", rep.Shape.Mode)
	assert.Equal(t, 200.0, rep.Shape.Rate)
	assert.Equal(t, int64(10), rep.Calls)
}

// Exit 1 names the counts; --max-error-rate and --max-p99 are gates.
func TestLoadExitStatusAndGates(t *testing.T) {
	srv := server(t)
	answers := writeFile(t, "answers.json", loadTestAnswers)
	for name, c := range map[string]struct {
		args []string
		code int
		msg  string
	}{
		"all ok":                 {[]string{"test_sampling", `{"prompt": "x"}`}, 0, ""},
		"failures":               {[]string{"no_such_tool"}, 1, "conduit: 4 of 4 calls failed\n"},
		"failures over the gate": {[]string{"--max-error-rate", "0.5", "no_such_tool"}, 1, "conduit: 4 of 4 calls failed: error rate 1 above --max-error-rate 0.5\n"},
		"failures within it":     {[]string{"--max-error-rate", "1", "no_such_tool"}, 0, ""},
		"p99 over the gate":      {[]string{"--max-p99", "1ns", "test_sampling", `{"prompt": "x"}`}, 1, "above --max-p99 1ns\n"},
		"p99 within it":          {[]string{"--max-p99", "1m", "test_sampling", `{"prompt": "x"}`}, 0, ""},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"load", "--calls", "4", "--answers", answers}, c.args...)
			r := runInProcess(t, append(args, "--", srv)...)
			assert.Equal(t, c.code, r.code, r)
			if c.msg != "" {
				assert.Contains(t, r.stderr, c.msg)
			}
			assert.Contains(t, r.stdout, "calls:      4 in ", "the report is printed whatever the verdict")
		})
	}
	r := runInProcess(t, "load", "--calls", "1", "x", "--", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, 3, r.code, r)
}

func TestLoadUsageErrors(t *testing.T) {
	mix := writeFile(t, "mix.json", `[{"tool": "a"}]`)
	for name, c := range map[string]struct {
		args []string
		msg  string
	}{
		"no tool":          {[]string{"--calls", "1"}, "missing TOOL (or --mix FILE)"},
		"no end":           {[]string{"t"}, "give --calls K or --duration D"},
		"zero sessions":    {[]string{"--sessions", "0", "--calls", "1", "t"}, "--sessions 0"},
		"zero callers":     {[]string{"--concurrency", "0", "--calls", "1", "t"}, "--concurrency 0"},
		"negative rate":    {[]string{"--rate", "-1", "--calls", "1", "t"}, "--rate -1"},
		"error rate > 1":   {[]string{"--max-error-rate", "2", "--calls", "1", "t"}, "--max-error-rate 2"},
		"tool and mix":     {[]string{"--mix", mix, "--calls", "1", "t"}, "not both"},
		"bad mix":          {[]string{"--mix", writeFile(t, "bad.json", `{}`), "--calls", "1"}, "JSON array"},
		"missing mix":      {[]string{"--mix", "/nonexistent/mix.json", "--calls", "1"}, "--mix"},
		"bad args":         {[]string{"--calls", "1", "t", "[1]"}, "ARGS_JSON must be a JSON object"},
		"empty pick":       {[]string{"--calls", "1", "t", `{"q": {"$pick": []}}`}, `load: config: t: args: {"$pick": [...]} takes a non-empty list`},
		"negative weight":  {[]string{"--mix", writeFile(t, "w.json", `[{"tool": "t", "weight": -1}]`), "--calls", "1"}, "load: config: t: weight -1 is negative"},
		"mix without tool": {[]string{"--mix", writeFile(t, "n.json", `[{"weight": 2}]`), "--calls", "1"}, "load: config: call 1 has no tool"},
		"bad delay":        {[]string{"--calls", "1", "--answers", writeFile(t, "a.json", `{"elicitation": {"action": "cancel", "delay": {"uniform": ["2s", "1s"]}}}`), "t"}, "elicitation.delay: uniform"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runInProcess(t, append(append([]string{"load"}, c.args...), "--", "true")...)
			assert.Equal(t, 2, r.code, r)
			assert.Contains(t, r.stderr, c.msg)
		})
	}
}

// The answers file's "delay" takes a distribution; a duration still works.
func TestAnswersDelayDistributions(t *testing.T) {
	a, err := parseAnswers([]byte(`{"sampling": {"result": {"content": {"type": "text", "text": "x"}}, "delay": {"uniform": ["1s", "4s"]}},
		"elicitation": {"action": "cancel", "delay": "2s"}}`))
	require.NoError(t, err)
	assert.Equal(t, load.Uniform(time.Second, 4*time.Second), a.Sampling.Delays)
	assert.Zero(t, a.Sampling.Delay)
	assert.Equal(t, load.Fixed(2*time.Second), a.Elicitation.Delays)
	assert.Equal(t, 2*time.Second, a.Elicitation.Delay)
}

// loadConfigFile writes a configuration with the everything-server
// ("every", legacy) and a server that must never start ("other": it would
// leave a file behind).
func loadConfigFile(t *testing.T) (config, otherRan string) {
	otherRan = filepath.Join(t.TempDir(), "other-ran")
	return writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {
		"every": {"command": %q, "conduit": {"era": "legacy"}},
		"other": {"command": "sh", "args": ["-c", "touch %s"]},
		"off": {"command": "nothing", "conduit": {"disabled": true}}}}`, server(t), otherRan)), otherRan
}

// --config FILE loads the server a SERVER/TOOL or SERVER__TOOL names, one
// process per session, with its settings and its name as the audit's
// server_id; the file's other servers are not started.
func TestLoadConfig(t *testing.T) {
	config, otherRan := loadConfigFile(t)
	answers := writeFile(t, "answers.json", loadTestAnswers)
	for _, tool := range []string{"every/test_sampling", "every__test_sampling"} {
		t.Run(tool, func(t *testing.T) {
			dir := t.TempDir()
			report, audit := filepath.Join(dir, "r.json"), filepath.Join(dir, "a.jsonl")
			r := runInProcess(t, "load", "--config", config, "--sessions", "3", "--concurrency", "2", "--calls", "24", "--unlimited-input",
				"--answers", answers, "--audit", audit, "--report", report, "--header", "X-Test=1", tool, `{"prompt": "n{{n}}"}`)
			require.Equal(t, 0, r.code, r)
			assert.Contains(t, r.stderr, "conduit: warning: --header is not used with --config (a server's headers are in the file); ignored\n")
			assert.Contains(t, r.stdout, "calls:      24 in ")
			assert.Contains(t, r.stdout, "input:      sampling/createMessage: answered 24\n")
			rep := readReport(t, report)
			assert.Equal(t, int64(24), rep.Calls)
			assert.Equal(t, int64(24), rep.OK)
			assert.Equal(t, map[string]int64{"ok": 24}, rep.Outcomes)
			assert.Equal(t, "test_sampling", rep.Shape.Mix[0].Tool)
			assert.Len(t, rep.Servers, 3, "one process per session")
			records := readAudit(t, audit)
			assert.Len(t, records, 24)
			for _, rec := range records {
				assert.Equal(t, "every", rec["server_id"])
				assert.Equal(t, "answered", rec["outcome"])
			}
		})
	}
	assert.NoFileExists(t, otherRan)
}

// Bad --config uses are usage errors, before any server starts.
func TestLoadConfigUsageErrors(t *testing.T) {
	config, otherRan := loadConfigFile(t)
	mix := writeFile(t, "mix.json", `[{"tool": "every/test_sampling"}, {"tool": "other__x"}]`)
	for name, c := range map[string]struct {
		args []string
		msg  string
	}{
		"and a command":  {[]string{"every/t", "--", "true"}, "give --config FILE, --url URL or -- COMMAND [ARGS...], not several"},
		"and a url":      {[]string{"--url", "http://127.0.0.1:1/mcp", "every/t"}, "give --config FILE, --url URL or -- COMMAND [ARGS...], not several"},
		"no server":      {[]string{"test_sampling"}, `"test_sampling": want SERVER/TOOL or SERVER__TOOL, with SERVER one of ` + config + `'s servers: every, off, other`},
		"unknown server": {[]string{"nobody/t"}, `"nobody/t": want SERVER/TOOL or SERVER__TOOL, with SERVER one of ` + config + `'s servers: every, off, other`},
		"disabled":       {[]string{"off/t"}, `server "off" is disabled in ` + config},
		"two servers":    {[]string{"--mix", mix}, `a load runs against one server: the tools name "every" and "other"`},
		"bad file":       {[]string{"--config", writeFile(t, "bad.json", `{"mcpServers": `), "every/t"}, "bad.json"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"load", "--calls", "1"}, c.args...)
			if !slices.Contains(args, "--config") {
				args = append([]string{"load", "--config", config}, args[1:]...)
			}
			r := runInProcess(t, args...)
			assert.Equal(t, 2, r.code, r)
			assert.Contains(t, r.stderr, c.msg)
		})
	}
	assert.NoFileExists(t, otherRan)
}

// conduit load asks no log level of its sessions: --log-level is not
// dropped in silence.
func TestLoadWarnsThatItIgnoresTheLogLevel(t *testing.T) {
	r := runInProcess(t, "load", "--calls", "1", "--log-level", "debug", "test_simple_text", "--", server(t))
	require.Equal(t, exitOK, r.code, r)
	assert.True(t, strings.HasPrefix(r.stderr, "conduit: warning: --log-level is not used by conduit load; ignored\n"), r.stderr)
}
