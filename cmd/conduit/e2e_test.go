package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// End-to-end: the built CLI against the go-sdk v1.8.0 everything-server
// over stdio. Tool names, arguments and outputs are the server's
// (conformance/everything-server/main.go).

const e2eAnswers = `{"sampling":    {"result": {"role": "assistant", "content": {"type": "text", "text": "scripted hello"}, "model": "scripted"}, "delay": "0s"},
 "elicitation": {"modes": ["form", "url"], "action": "accept", "content": {"username": "Ada"}, "delay": "0s"},
 "roots":       ["file:///home/me/notes"]}`

func server(t *testing.T) string {
	_, s := binaries(t)
	return s
}

func TestE2ECallSampling(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", e2eAnswers)
	r := runCLI(t, "call", "--answers", answers, "--json", "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	var res conduit.CallToolResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	require.Len(t, res.Content, 1)
	assert.Equal(t, "LLM response: scripted hello", res.Content[0].Text)
	assert.False(t, res.IsError)
}

func TestE2ECallSamplingText(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", e2eAnswers)
	r := runCLI(t, "call", "--answers", answers, "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "LLM response: scripted hello\n", r.stdout)
	assert.Empty(t, r.stderr)
}

func TestE2ECallElicitationAccept(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", e2eAnswers)
	r := runCLI(t, "call", "--answers", answers, "test_elicitation", `{"message":"Your name?"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "action=accept")
	assert.Contains(t, r.stdout, "username:Ada")
}

func TestE2ECallElicitationDecline(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", `{"elicitation": {"action": "decline"}}`)
	r := runCLI(t, "call", "--answers", answers, "test_elicitation", `{"message":"Your name?"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "action=decline")
}

// A kind absent from the answers file is not offered: the server's
// sampling request is refused and the tool reports the failure (exit 1).
func TestE2EKindNotOfferedIsRefused(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", `{"elicitation": {"action": "cancel"}}`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCLI(t, "call", "--answers", answers, "--audit", audit, "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Contains(t, r.stdout, "sampling failed")
	assert.Contains(t, r.stderr, "isError")
	assert.Contains(t, r.stderr, `add "sampling" to an --answers file`, "the refusal is pointed out")
	recs := readAudit(t, audit)
	require.Len(t, recs, 1)
	assert.Equal(t, "refused", recs[0]["outcome"])
	assert.EqualValues(t, -32601, recs[0]["code"])
}

// "error" in place of "result" refuses with that code.
func TestE2ESamplingRefusal(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", `{"sampling": {"error": {"code": -1, "message": "user rejected sampling"}}}`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCLI(t, "call", "--answers", answers, "--audit", audit, "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Contains(t, r.stdout, "user rejected sampling")
	recs := readAudit(t, audit)
	require.Len(t, recs, 1)
	assert.Equal(t, "refused", recs[0]["outcome"])
	assert.EqualValues(t, -1, recs[0]["code"])
	assert.Equal(t, "user rejected sampling", recs[0]["message"])
}

func TestE2EAudit(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", e2eAnswers)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, call := range [][]string{
		{"test_sampling", `{"prompt":"hi"}`},
		{"test_elicitation", `{"message":"Your name?"}`},
	} {
		args := append([]string{"call", "--answers", answers, "--audit", audit, "--server-id", "everything"}, call...)
		r := runCLI(t, append(args, "--", server(t))...)
		require.Equal(t, exitOK, r.code, r.String())
	}
	recs := readAudit(t, audit)
	require.Len(t, recs, 2, "one line per input request, appended")
	assert.Equal(t, "sampling/createMessage", recs[0]["method"])
	assert.Equal(t, "elicitation/create", recs[1]["method"])
	for _, rec := range recs {
		assert.Equal(t, "answered", rec["outcome"])
		assert.Equal(t, "everything", rec["server_id"])
		assert.Equal(t, "legacy", rec["era"])
		assert.NotNil(t, rec["request"])
		assert.NotNil(t, rec["result"])
	}
	fi, err := os.Stat(audit)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func readAudit(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var recs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		recs = append(recs, m)
	}
	return recs
}

func TestE2ELogLevelJSON(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "call", "--log-level", "info", "--json", "test_tool_with_logging", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	var res conduit.CallToolResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.String())
	var logs []map[string]any
	for line := range strings.Lines(r.stderr) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every stderr line is JSON with --json: %q", line)
		logs = append(logs, m)
	}
	require.Len(t, logs, 3, r.String())
	for i, want := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		assert.Equal(t, map[string]any{"level": "info", "logger": "", "data": want}, logs[i])
	}
}

func TestE2ELogLevelText(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "call", "--log-level", "info", "test_tool_with_logging", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Tool with logging executed successfully\n", r.stdout)
	assert.Equal(t, "[info] Tool execution started\n[info] Tool processing data\n[info] Tool execution completed\n", r.stderr)
}

// Without --log-level the server sends nothing (it has not been asked).
func TestE2ENoLogLevelNoLogs(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "call", "test_tool_with_logging", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Empty(t, r.stderr)
}

func TestE2ETools(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "tools", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	var found bool
	for line := range strings.Lines(r.stdout) {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "test_sampling" {
			found = true
			assert.Contains(t, line, "Tests server-initiated sampling")
		}
	}
	assert.True(t, found, r.String())

	r = runCLI(t, "tools", "--json", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	var tools []conduit.Tool
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tools))
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "test_sampling")
	assert.Contains(t, names, "test_elicitation")
}

func TestE2EResourcesPromptsReadPrompt(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "resources", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "test://static-text")

	r = runCLI(t, "read", "test://static-text", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "This is the content of the static text resource.\n", r.stdout)

	r = runCLI(t, "prompts", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "test_prompt_with_arguments")
	assert.Contains(t, r.stdout, "arg1* arg2*")

	r = runCLI(t, "prompt", "test_prompt_with_arguments", `{"arg1":"a","arg2":"b"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "[user] ")
	assert.Contains(t, r.stdout, "arg1='a'")

	r = runCLI(t, "read", "--json", "test://no-such-resource", "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
}

func TestE2ERoots(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The server asks for roots/list when the client cannot take the
	// modern (input_required) path.
	r := runCLI(t, "call", "--roots", dir, "test_input_required_result_list_roots", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "file://"+filepath.ToSlash(dir))
}

func TestE2EExitStatuses(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "call", "no_such_tool", "--", server(t))
	assert.Equal(t, exitFailed, r.code, "unknown tool: %s", r)
	assert.Contains(t, r.stderr, "no_such_tool")

	r = runCLI(t, "call", "--json", "no_such_tool", "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Empty(t, r.stdout)
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, conduit.KindRPC, rep.Kind)

	r = runCLI(t, "call", "test_error_handling", "--", server(t))
	assert.Equal(t, exitFailed, r.code, "isError: %s", r)
	assert.Contains(t, r.stdout, "intentionally returns an error")

	r = runCLI(t, "call", "--", server(t))
	assert.Equal(t, exitUsage, r.code, "missing TOOL: %s", r)

	r = runCLI(t, "call", "test_simple_text", "--", filepath.Join(t.TempDir(), "no-such-server"))
	assert.Equal(t, exitConnect, r.code, "no such command: %s", r)

	r = runCLI(t, "call", "test_simple_text", "--", server(t))
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "This is a simple text response for testing.\n", r.stdout)
}

// A call that outlives --timeout fails with exit 1; the answer's delay
// pauses the deadline, --handler-timeout bounds the handler.
func TestE2EHandlerTimeout(t *testing.T) {
	t.Parallel()
	answers := writeFile(t, "answers.json", `{"sampling": {"result": {"content": {"type": "text", "text": "late"}}, "delay": "10s"}}`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	start := time.Now()
	r := runCLI(t, "call", "--answers", answers, "--audit", audit, "--handler-timeout", "300ms", "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Less(t, time.Since(start), 8*time.Second)
	recs := readAudit(t, audit)
	require.Len(t, recs, 1)
	assert.Equal(t, "timeout", recs[0]["outcome"])
}

// Ctrl-C cancels the call and exits 1.
func TestE2EInterrupt(t *testing.T) {
	t.Parallel()
	cli, srv := binaries(t)
	answers := writeFile(t, "answers.json", `{"sampling": {"result": {"content": {"type": "text", "text": "late"}}, "delay": "1m"}}`)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "call", "--era", "legacy", "-v", "--answers", answers, "--audit", audit, "test_sampling", `{"prompt":"hi"}`, "--", srv)
	pipe, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var stderr strings.Builder
	timeout := time.After(15 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the CLI ended before connecting: %s", stderr.String())
			}
			stderr.WriteString(line + "\n")
			if strings.HasPrefix(line, "conduit: info: connected ") {
				break wait
			}
		case <-timeout:
			t.Fatalf("not connected after 15s: %s", stderr.String())
		}
	}
	// The call and its sampling request follow the handshake at once; the
	// scripted answer waits a minute.
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	start := time.Now()
	for line := range lines {
		stderr.WriteString(line + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "exit: %v; stderr: %s", err, stderr.String())
	assert.Equal(t, exitFailed, ee.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "interrupted")
	assert.Less(t, time.Since(start), 10*time.Second)
	recs := readAudit(t, audit)
	require.Len(t, recs, 1, stderr.String())
	assert.Equal(t, "sampling/createMessage", recs[0]["method"])
}

// The in-process path (run) against the real server, checked for leaks by
// TestMain.
func TestInProcessCallSampling(t *testing.T) {
	answers := writeFile(t, "answers.json", e2eAnswers)
	r := runInProcess(t, "call", "--answers", answers, "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "LLM response: scripted hello\n", r.stdout)

	r = runInProcess(t, "call", "--log-level", "info", "--json", "test_tool_with_logging", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, 3, strings.Count(r.stderr, `"data":`), r.String())
}
