package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// hostConfig writes a configuration with the everything-server ("every"),
// a server that always exits ("loop", intensity 3: spawned 3 times, parked
// after 2 restarts) and a disabled one.
func hostConfig(t *testing.T) string {
	_, server := binaries(t)
	return writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {
		"every": {"command": %q, "conduit": {"era": "legacy"}},
		"loop": {"command": "sh", "args": ["-c", "echo boom >&2; exit 1"],
		         "conduit": {"restart": {"backoff": {"initial": "10ms", "max": "10ms"}, "intensity": 3}}},
		"off": {"command": "nothing", "conduit": {"disabled": true}, "colour": "red"}}}`, server))
}

// --once starts everything, waits until each server is ready or parked,
// prints the table and exits 1 when one is parked.
func TestHostOnce(t *testing.T) {
	config := hostConfig(t)
	r := runInProcess(t, "host", "--config", config, "--once")
	require.Equal(t, exitFailed, r.code, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, r)
	assert.Regexp(t, `^SERVER +STATE +PID +RESTARTS +TOOLS +CALLS +INPUT +DROPS +ERROR$`, lines[0])
	assert.Regexp(t, `^every +ready +[1-9][0-9]* +0 +[1-9][0-9]* +0 +0 +0$`, lines[1])
	assert.Regexp(t, `^loop +parked +- +2 +0 +0 +0 +0 +server/discover: transport: .*the server exited \(exit status 1\); its last stderr: boom`, lines[2])
	assert.Regexp(t, `^off +stopped +- +0 +0 +0 +0 +0$`, lines[3])
	assert.Equal(t, "conduit: warning: "+config+`: server "off": key "colour": unknown key, ignored`+"\nconduit: parked: loop\n", r.stderr)

	started := time.Now()
	r = runInProcess(t, "host", "--config", config, "--once", "--json")
	require.Equal(t, exitFailed, r.code, r)
	var states []string
	for line := range strings.Lines(r.stdout) {
		var ev struct {
			Server, State               string
			Restarts, Tools             int
			Calls, InputRequests, Drops int64
			Time                        time.Time
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		states = append(states, fmt.Sprint(ev.Server, " ", ev.State, " ", ev.Restarts, " ", ev.Tools, " ", ev.Calls, " ", ev.InputRequests, " ", ev.Drops))
		assert.True(t, ev.Time.After(started) && ev.Time.Before(time.Now()), "the time the state began: %s", line)
		var keys map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &keys))
		for _, key := range []string{"tools", "calls", "input_requests", "drops"} {
			assert.Contains(t, keys, key, "every counter of the table, zero too")
		}
	}
	assert.Equal(t, []string{"every ready 0 28 0 0 0", "loop parked 2 0 0 0 0", "off stopped 0 0 0 0 0"}, states)
}

// The pid of a ready stdio server is its process's own: --once --json and
// the table show what the server's shell saw as $$ before exec'ing it.
func TestHostOnceShowsThePid(t *testing.T) {
	_, server := binaries(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"every": {"command": "sh", "args": ["-c", %q], "conduit": {"era": "legacy"}}}}`,
		"echo $$ > "+pidFile+"; exec "+server))
	readPid := func() string {
		b, err := os.ReadFile(pidFile)
		require.NoError(t, err)
		return strings.TrimSpace(string(b))
	}

	r := runInProcess(t, "host", "--config", config, "--once", "--json")
	require.Equal(t, exitOK, r.code, r)
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ev), r.stdout)
	assert.Equal(t, "ready", ev["state"])
	assert.Equal(t, readPid(), fmt.Sprint(ev["pid"]))

	r = runInProcess(t, "host", "--config", config, "--once")
	require.Equal(t, exitOK, r.code, r)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r)
	assert.Regexp(t, `^every +ready +`+readPid()+` +0 `, lines[1])
}

// Without --once the host runs until interrupted, printing every state
// change, then stops every server.
func TestHostRunsUntilInterrupted(t *testing.T) {
	config := hostConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Both: the loop parked, and the everything-server ready (under load it
	// can come after the loop's three tries).
	out := &watchedBuffer{match: []*regexp.Regexp{regexp.MustCompile(`(?m)loop parked.*\n  \| boom\n`), regexp.MustCompile(`(?m)^.*every ready pid`)}, matched: make(chan struct{})}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"host", "--config", config}, streams{in: bytes.NewReader(nil), out: out, err: &stderr})
	}()
	select {
	case <-out.matched:
	case <-ctx.Done():
		t.Fatalf("loop never parked, or every never ready:\n%s", out)
	}
	cancel()
	require.Equal(t, exitOK, <-done, stderr.String())
	text := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d{3} `).ReplaceAllString(out.String(), "")
	text = regexp.MustCompile(`in \d+ms`).ReplaceAllString(text, "in Nms")
	text = regexp.MustCompile(`pid [1-9]\d*`).ReplaceAllString(text, "pid N")
	var every, loop []string
	for line := range strings.Lines(text) {
		switch {
		case strings.HasPrefix(line, "every "):
			every = append(every, strings.TrimSpace(line))
		case strings.HasPrefix(line, "loop "), strings.HasPrefix(line, "  |"):
			loop = append(loop, regexp.MustCompile(`: server/discover: .*`).ReplaceAllString(strings.TrimSpace(line), ": …"))
		}
	}
	assert.Equal(t, []string{"every starting", "every ready pid N, 28 tools", "every stopped"}, every)
	assert.Equal(t, []string{
		"loop starting", "loop restarting in Nms (attempt 1): …",
		"loop starting", "loop restarting in Nms (attempt 2): …",
		"loop starting", "loop parked after 2 restarts, next try in 5m0s: …", "| boom", "| boom", "| boom",
		"loop stopped",
	}, loop)
	assert.Contains(t, out.String(), "off stopped\n")
}

// A configuration that cannot be used is a usage error (exit 2) naming
// the file, the server and the key.
func TestHostConfigErrors(t *testing.T) {
	bad := writeFile(t, "bad.json", `{"servers": {"x": {"type": "tcp", "url": "http://h"}}}`)
	r := runInProcess(t, "host", "--config", bad)
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "conduit: "+bad+`: server "x": key "type": unknown type "tcp": want "stdio", "http" or "sse"`+"\nRun 'conduit host --help' for usage.\n", r.stderr)

	notJSON := writeFile(t, "bad.json", `{"mcpServers": `)
	r = runInProcess(t, "host", "--config", notJSON)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, notJSON+": not JSON: line 1, column 15: unexpected end of JSON input\n")

	r = runInProcess(t, "host")
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "conduit: missing --config FILE\nRun 'conduit host --help' for usage.\n", r.stderr)
}

// watchedBuffer is a concurrent buffer that closes matched once its
// content matches every one of match.
type watchedBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	match   []*regexp.Regexp
	matched chan struct{}
	once    sync.Once
}

func (w *watchedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	for _, m := range w.match {
		if !m.Match(w.b.Bytes()) {
			return n, err
		}
	}
	w.once.Do(func() { close(w.matched) })
	return n, err
}

func (w *watchedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// --config on tools, prompts, resources and call: the servers of the file
// in place of --url or -- COMMAND, tools and prompts namespaced, a call
// given as SERVER/TOOL or by its namespaced name.
func TestConfigOnServerCommands(t *testing.T) {
	config := hostConfig(t)
	parkedWarning := `conduit: warning: server "loop" is parked: server/discover: transport: `

	r := runInProcess(t, "tools", "--config", config)
	require.Equal(t, exitOK, r.code, r)
	assert.Regexp(t, `(?m)^every__test_simple_text +Tests simple text content response$`, r.stdout)
	assert.Contains(t, r.stderr, parkedWarning)

	r = runInProcess(t, "tools", "--config", config, "--json")
	require.Equal(t, exitOK, r.code, r)
	var tools []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tools))
	assert.Contains(t, tools, map[string]any{"name": "every__test_simple_text", "server": "every", "serverTool": "test_simple_text",
		"description": "Tests simple text content response", "inputSchema": map[string]any{"type": "object"}})

	r = runInProcess(t, "prompts", "--config", config)
	require.Equal(t, exitOK, r.code, r)
	assert.Regexp(t, `(?m)^every__test_prompt_with_arguments +arg1\* arg2\* +A prompt with required arguments$`, r.stdout)

	r = runInProcess(t, "resources", "--config", config)
	require.Equal(t, exitOK, r.code, r)
	assert.Regexp(t, `(?m)^every +test://static-text +static-text +A static text resource for testing$`, r.stdout)

	for _, name := range []string{"every/test_simple_text", "every__test_simple_text"} {
		r = runInProcess(t, "call", "--config", config, name)
		require.Equal(t, exitOK, r.code, r)
		assert.Equal(t, "This is a simple text response for testing.\n", r.stdout)
	}

	// Only the server named is started: a failed start is reported at
	// once, as for -- COMMAND.
	r = runInProcess(t, "call", "--config", config, "loop/anything")
	assert.Equal(t, exitConnect, r.code)
	assert.Regexp(t, `(?m)^conduit: could not connect: server/discover: transport: .*exit status 1\); its last stderr: boom$`, r.stderr)

	for _, name := range []string{"nope/tool", "off/tool"} {
		r = runInProcess(t, "call", "--config", config, name)
		assert.Equal(t, exitUsage, r.code, name)
	}
	assert.Contains(t, runInProcess(t, "call", "--config", config, "nope/tool").stderr,
		`conduit: "nope/tool": want SERVER/TOOL or SERVER__TOOL, with SERVER one of `+config+"'s servers: every, loop, off\n")

	// A tool named without its server is looked for on every server.
	r = runInProcess(t, "call", "--config", config, "test_simple_text")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "This is a simple text response for testing.\n", r.stdout)
	r = runInProcess(t, "call", "--config", config, "nope")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, `conduit: no tool "nope" among the ready servers' tools: give SERVER/TOOL, or a name that conduit tools --config lists`+"\n")
	assert.Contains(t, runInProcess(t, "call", "--config", config, "off/tool").stderr, `conduit: server "off" is disabled in `+config+"\n")

	r = runInProcess(t, "read", "--config", config, "every/test://static-text")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "This is the content of the static text resource.\n", r.stdout)
	// By its URI alone, when one server lists it.
	r = runInProcess(t, "read", "--config", config, "test://static-text")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "This is the content of the static text resource.\n", r.stdout)
	r = runInProcess(t, "read", "--config", config, "test://nothing-here")
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, `conduit: no resource "test://nothing-here" among the ready servers' resources: give SERVER/URI, or a URI that conduit resources --config lists`+"\n")
	for _, name := range []string{"every/test_simple_prompt", "every__test_simple_prompt"} {
		r = runInProcess(t, "prompt", "--config", config, name)
		require.Equal(t, exitOK, r.code, r)
		assert.Equal(t, "[user] This is a simple prompt for testing.\n", r.stdout)
	}

	// A listing of one server starts only that one.
	r = runInProcess(t, "tools", "--config", config, "every")
	require.Equal(t, exitOK, r.code, r)
	assert.Regexp(t, `(?m)^every__test_simple_text +Tests simple text content response$`, r.stdout)
	assert.NotContains(t, r.stderr, "loop")
	r = runInProcess(t, "tools", "--config", config, "files")
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "conduit: warning: "+config+`: server "off": key "colour": unknown key, ignored`+"\n"+
		`conduit: no server "files" in the configuration: its servers are every, loop, off`+"\nRun 'conduit tools --help' for usage.\n", r.stderr)

	r = runInProcess(t, "tools", "--config", config, "--url", "http://127.0.0.1:1/mcp")
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "conduit: give --config FILE, --url URL or -- COMMAND [ARGS...], not several\nRun 'conduit tools --help' for usage.\n", r.stderr)
}

// The live table (a terminal): state, uptime, restarts, calls, input
// requests, drops, and the next try or the error.
func TestLiveRows(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	liveRows([]host.Status{
		{Server: "files", State: host.StateReady, PID: 4242, Tools: 14, Since: now.Add(-90500 * time.Millisecond), Restarts: 1, Calls: 12, Stats: conduit.Stats{ServerRequests: 3, NotificationsDropped: 1, LogsDropped: 2}},
		{Server: "search", State: host.StateRestarting, Attempt: 2, NextRetry: now.Add(1234 * time.Millisecond), Restarts: 1},
		{Server: "db", State: host.StateParked, Restarts: 5, NextRetry: now.Add(270 * time.Second), Err: errors.New("conduit: transport: could not connect\nmore")},
		{Server: "kv", State: host.StateReady, Since: now.Add(-2 * time.Second), ToolsErr: errors.New("conduit: rpc: tools/list: -32603 listing broke")},
	}, now)(tw)
	require.NoError(t, tw.Flush())
	assert.Equal(t, `SERVER  STATE       PID   UPTIME  RESTARTS  TOOLS  CALLS  INPUT  DROPS  NOTE
files   ready       4242  1m30s   1         14     12     3      3
search  restarting  -     -       1         0      0      0      0      next try in 1.2s (attempt 2)
db      parked      -     -       5         0      0      0      0      next try in 4m30s: transport: could not connect
kv      ready       -     2s      0         0      0      0      0      tools out of date: rpc: tools/list: -32603 listing broke
`, regexp.MustCompile(`(?m) +$`).ReplaceAllString(b.String(), ""))
}

// --max-message-bytes bounds the messages of the host's servers too, and
// the error names the flag.
func TestHostMaxMessageBytes(t *testing.T) {
	script := `read line; printf '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"%s"}}\n' "$(head -c 3000 /dev/zero | tr '\0' x)"; cat >/dev/null`
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"big": {"command": "sh", "args": ["-c", %q],
		"conduit": {"restart": {"backoff": {"initial": "10ms", "max": "10ms"}, "intensity": 1}}}}}`, script))
	r := runInProcess(t, "host", "--config", config, "--once", "--max-message-bytes", "1KB")
	require.Equal(t, exitFailed, r.code, r)
	assert.Regexp(t, `(?m)^big +parked .*stdio message exceeds the limit of 1000 bytes; raise it with --max-message-bytes$`, r.stdout)
}

// The connection flags a --config run cannot use are not dropped in
// silence: the file gives each server its headers, its name is its id, and
// no log level is asked of the host's servers.
func TestConfigWarnsAboutTheFlagsItIgnores(t *testing.T) {
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"every": {"command": %q, "conduit": {"era": "legacy"}}}}`, server(t)))
	r := runInProcess(t, "tools", "--config", config, "--header", "X-Test=1", "--server-id", "mine", "--log-level", "debug")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "conduit: warning: --header is not used with --config (a server's headers are in the file); ignored\n"+
		"conduit: warning: --server-id is not used with --config (each server's name is its id); ignored\n"+
		"conduit: warning: --log-level is not used with --config; ignored\n"+
		"conduit: note: this client declared no sampling, elicitation or roots: a server may list only the tools it can run with what a client declares (answer at a terminal, or give --answers FILE or --roots)\n", r.stderr)
}

// A tool named SERVER/TOOL or SERVER__TOOL: a namespaced name as conduit
// tools --config lists it is found even when the tool's own name holds a
// "/" (SEP-986 allows one: "user-profile/update").
func TestServerTool(t *testing.T) {
	cfg := host.Config{Servers: map[string]host.Server{"api": {}, "every": {}}}
	split := func(name string) (string, string, bool) { return cfg.Split(name, host.DefaultSeparator) }
	for name, want := range map[string][]any{
		"api__user-profile/update": {"api", "user-profile/update", true},
		"api/user-profile/update":  {"api", "user-profile/update", true},
		"every/test_simple_text":   {"every", "test_simple_text", true},
		"every__test_simple_text":  {"every", "test_simple_text", true},
		"test_simple_text":         {"", "", false},
	} {
		server, tool, ok := serverTool(name, split)
		assert.Equal(t, want, []any{server, tool, ok}, name)
	}
}

// The --config commands say what their clients dropped when they end, as
// the other commands do.
func TestConfigDropSummary(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"flood": {"command": %q, "conduit": {"era": "legacy"},
		"env": {%q: "flood:2000", "GORACE": "atexit_sleep_ms=0"}}}}`, self, scriptServerEnv))
	r := runInProcess(t, "call", "--config", config, "flood/flood")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "done\n", r.stdout)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	assert.Regexp(t, droppedLine, lines[len(lines)-1], r.stderr)
}

// The live table is redrawn in place: a line longer than the terminal is
// cut to its width (runes), not wrapped onto the next row.
func TestCutLines(t *testing.T) {
	in := []byte("short\nwhich is far too long\nnoté tail\n")
	assert.Equal(t, "short\nwhich is \nnoté tail\n", string(cutLines(in, 9)))
	assert.Equal(t, string(in), string(cutLines(in, 0)), "not a terminal: nothing cut")
}

// call --config starts only the server it names, and a listing reports a
// server that fails its first start at once, not after its whole backoff:
// a crash-looping neighbour costs nothing.
func TestConfigStartsOnlyWhatItNeeds(t *testing.T) {
	_, server := binaries(t)
	marker := filepath.Join(t.TempDir(), "started")
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {
		"every": {"command": %q, "conduit": {"era": "legacy"}},
		"crashy": {"command": "sh", "args": ["-c", %q]}}}`, server, "echo x >> "+marker+"; exit 1"))
	starts := func() int {
		b, err := os.ReadFile(marker)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), "x")
	}
	r := runInProcess(t, "call", "--config", config, "every/test_simple_text")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, 0, starts(), "call started a server it does not name")

	r = runInProcess(t, "tools", "--config", config)
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, 1, starts(), "a listing tries a failing server once, not through its backoff")
	assert.Contains(t, r.stderr, `conduit: warning: server "crashy" is parked: `)
}

// A tool two servers offer, named without its server, is a usage error that
// names both.
func TestCallOfAToolTwoServersOffer(t *testing.T) {
	_, server := binaries(t)
	config := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"a": {"command": %q, "conduit": {"era": "legacy"}}, "b": {"command": %q, "conduit": {"era": "legacy"}}}}`, server, server))
	r := runInProcess(t, "call", "--config", config, "test_simple_text")
	assert.Equal(t, exitUsage, r.code, r)
	assert.Equal(t, "conduit: tool \"test_simple_text\" is offered by a and b: give SERVER/test_simple_text\nRun 'conduit call --help' for usage.\n", r.stderr)
	r = runInProcess(t, "call", "--config", config, "b/test_simple_text")
	require.Equal(t, exitOK, r.code, r)
	r = runInProcess(t, "read", "--config", config, "test://static-text")
	assert.Equal(t, exitUsage, r.code, r)
	assert.Equal(t, "conduit: resource \"test://static-text\" is offered by a and b: give SERVER/test://static-text\nRun 'conduit read --help' for usage.\n", r.stderr)
}

// A stdio server whose arguments name a directory is warned of when the
// roots it would be offered do not hold it (the current directory would
// replace server-filesystem's); not when they do, or when its own
// conduit.roots answer for it.
func TestWarnRootsOverride(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	logger := newLogger(&out, 0, false)
	cfg := host.Config{Servers: map[string]host.Server{
		"files": {Command: "server-filesystem", Args: []string{dir}},
		"own":   {Command: "server-filesystem", Args: []string{dir}, Conduit: host.Settings{Roots: []string{dir}}},
		"plain": {Command: "srv", Args: []string{"--port", "1"}},
	}}
	cwd := conduit.Handlers{Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///somewhere/else"}}}, nil
	}}
	warnRootsOverride(logger, cfg, cwd)
	assert.Equal(t, `conduit: warning: server "files": its arguments name `+dir+`, but it is offered other roots, which a server that takes roots uses in their place; give it its own with "conduit": {"roots": [...]} in the file, or a "servers" entry in the answers file`+"\n", out.String())

	out.Reset()
	roots, err := parseRoots([]string{dir})
	require.NoError(t, err)
	same := conduit.Handlers{Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		return &conduit.ListRootsResult{Roots: roots}, nil
	}}
	warnRootsOverride(logger, cfg, same)
	warnRootsOverride(logger, cfg, conduit.Handlers{})
	assert.Empty(t, out.String(), "offered its directory, or no roots at all")
}
