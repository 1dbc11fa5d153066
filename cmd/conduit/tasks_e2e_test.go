package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end: the built CLI against the reference TypeScript server
// (npm @modelcontextprotocol/server-everything), whose
// simulate-research-query tool runs only as a 2025-11-25 task.

// everythingTS is the command that starts the reference server over
// stdio, from CONDUIT_NODE and CONDUIT_EVERYTHING_TS
// (`eval "$(.ci/everything-ts)"` installs it; .ci/run does). Without them
// the test is skipped, or fails under CI=true.
func everythingTS(t *testing.T) []string {
	t.Helper()
	node, entry := os.Getenv("CONDUIT_NODE"), os.Getenv("CONDUIT_EVERYTHING_TS")
	if node == "" || entry == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CONDUIT_NODE and CONDUIT_EVERYTHING_TS are not set: run eval \"$(.ci/everything-ts)\"")
		}
		t.Skip("the reference TypeScript server is not installed: eval \"$(.ci/everything-ts)\" installs it")
	}
	return []string{node, entry, "stdio"}
}

const researchAnswers = `{"elicitation": {"action": "accept", "content": {"interpretation": "current"}}}`

// With no flag, the task-only tool runs as a task; its clarification is
// answered from the file and audited with the call; its status is shown.
func TestE2ETaskToolRunsWithNoFlag(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", researchAnswers)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	args := append([]string{"call", "--answers", answers, "--audit", audit, "simulate-research-query", `{"topic":"go","ambiguous":true}`, "--"}, everythingTS(t)...)
	r := runCLI(t, args...)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "# Research Report: go (current)")
	var shown []string
	for line := range strings.Lines(r.stderr) {
		if strings.HasPrefix(line, "task ") {
			_, rest, _ := strings.Cut(strings.TrimPrefix(line, "task "), " ") // the task id
			shown = append(shown, strings.TrimSpace(rest))
		}
	}
	assert.Contains(t, shown, `input_required: Found multiple interpretations for "go". Requesting clarification...`, r.stderr)
	assert.True(t, strings.HasPrefix(shown[len(shown)-1], "completed"), "the status it ended with, last: %s", r.stderr)
	recs := readAudit(t, audit)
	require.Len(t, recs, 1)
	assert.Equal(t, "elicitation/create", recs[0]["method"])
	assert.Equal(t, "answered", recs[0]["outcome"])
	assert.NotNil(t, recs[0]["related_request_id"], "audited with the call that created the task")
}

// --json: each status change is one JSON object on stderr.
func TestE2ETaskStatusAsJSON(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", researchAnswers)
	args := append([]string{"call", "--json", "--answers", answers, "simulate-research-query", `{"topic":"go"}`, "--"}, everythingTS(t)...)
	r := runCLI(t, args...)
	require.Equal(t, exitOK, r.code, r.String())
	var statuses []string
	for line := range strings.Lines(r.stderr) {
		var st struct{ Task, Status, Message string }
		require.NoError(t, json.Unmarshal([]byte(line), &st), line)
		require.NotEmpty(t, st.Task, line)
		statuses = append(statuses, st.Status+" "+st.Message)
	}
	assert.Contains(t, statuses, "working Synthesizing findings...")
	assert.Equal(t, "completed Generating report...", statuses[len(statuses)-1])
	var res struct{ Content []struct{ Text string } }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	assert.Contains(t, res.Content[0].Text, "# Research Report: go")
}

// --no-tasks refuses: the server's own error is shown.
func TestE2ENoTasksShowsTheServersError(t *testing.T) {
	t.Parallel()
	args := append([]string{"call", "--no-tasks", "simulate-research-query", `{"topic":"go"}`, "--"}, everythingTS(t)...)
	r := runCLI(t, args...)
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Contains(t, r.stdout, "requires task augmentation (taskSupport: 'required')")
	assert.NotContains(t, r.stderr, "task ")
}
