package main

import (
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpServer starts the everything-server on a free loopback port.
func httpServer(t *testing.T, stateless bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(server(t), "-http="+addr, fmt.Sprintf("-stateless=%v", stateless))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + "/"
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	return url
}

func TestE2EURLModernAndLegacy(t *testing.T) {
	answers := writeFile(t, "answers.json", modernAnswers)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCLI(t, "call", "--url", httpServer(t, true), "--header", "X-Trace=conduit-test", "--answers", answers, "--audit", audit, "test_input_required_result_multiple_inputs")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Bonjour Ada — 1 root(s) visible\n", r.stdout)
	assert.Len(t, readAudit(t, audit), 3)

	legacy := httpServer(t, false)
	r = runCLI(t, "call", "--url", legacy, "--answers", writeFile(t, "a.json", e2eAnswers), "test_sampling", `{"prompt":"hi"}`)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "LLM response: scripted hello\n", r.stdout)

	r = runCLI(t, "tools", "--url", legacy)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "test_sampling")

	r = runCLI(t, "call", "--url", "http://127.0.0.1:1/", "anything")
	assert.Equal(t, exitConnect, r.code, r.String())
}
