package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conduit host reloads its file on SIGHUP (and survives it) and when the
// file changes on disk: an added server starts, an unchanged one keeps its
// process, a removed one stops; a bad file is reported and the running
// configuration kept. Each reading is an event.
func TestHostReloads(t *testing.T) {
	cli, server := binaries(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mcp.json")
	write := func(servers ...string) {
		t.Helper()
		m := map[string]any{}
		for _, name := range servers {
			m[name] = map[string]any{"command": server, "conduit": map[string]any{"era": "legacy"}}
		}
		b, err := json.Marshal(map[string]any{"mcpServers": m})
		require.NoError(t, err)
		// As an editor saves: a new file renamed over the old one.
		tmp := filepath.Join(dir, ".mcp.json.tmp")
		require.NoError(t, os.WriteFile(tmp, b, 0o600))
		require.NoError(t, os.Rename(tmp, config))
	}
	write("keep")

	cmd := exec.Command(cli, "host", "--config", config, "--json")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan map[string]any, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				lines <- ev
			}
		}
	}()
	var keepStates []string // every state keep went through
	seen := func(ev map[string]any) {
		if ev["server"] == "keep" {
			keepStates = append(keepStates, fmt.Sprint(ev["state"]))
		}
	}
	// next waits for the next event that fits, and fails on time out.
	next := func(what string, fits func(ev map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case ev, ok := <-lines:
				require.True(t, ok, "conduit host ended while waiting for %s", what)
				seen(ev)
				if fits(ev) {
					return ev
				}
			case <-deadline:
				t.Fatalf("no %s within 30 s", what)
			}
		}
	}
	state := func(server, state string) func(map[string]any) bool {
		return func(ev map[string]any) bool { return ev["server"] == server && ev["state"] == state }
	}
	reloaded := func(why string) func(map[string]any) bool {
		return func(ev map[string]any) bool { return ev["reload"] == why }
	}
	next("keep ready", state("keep", "ready"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	ev := next("a reload on SIGHUP", reloaded("SIGHUP"))
	assert.Equal(t, float64(1), ev["servers"])

	write("keep", "added")
	ev = next("a reload of the changed file", reloaded("file changed"))
	assert.Equal(t, float64(2), ev["servers"])
	next("added ready", state("added", "ready"))

	require.NoError(t, os.WriteFile(config, []byte("{bad"), 0o600))
	ev = next("a failed reload", reloaded("file changed"))
	assert.Regexp(t, `^.*mcp\.json: not JSON: line 1, column 2: `, ev["error"])
	assert.NotContains(t, ev, "servers")

	write("keep")
	next("added stopped", state("added", "stopped"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for ev := range lines {
		seen(ev)
	}
	require.NoError(t, cmd.Wait())
	// Through three reloads, keep kept its one process.
	assert.Equal(t, []string{"starting", "ready", "stopped"}, keepStates)
}
