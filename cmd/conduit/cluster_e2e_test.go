package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const clusterServerEnv = "CONDUIT_CLUSTER_SERVER"

// clusterServer is a legacy stdio server with one tool, "work": it answers
// "pid N" (its process id), or, with {"hang": true}, writes "hang" to the
// FIFO $CONDUIT_CLUSTER_MARK and never answers, or, with {"sleepMs": N},
// writes "sleep" there and answers N ms later. It writes "cancelled" there
// for each notifications/cancelled, and, with $CONDUIT_CLUSTER_MARK_START
// set, "started N" when it is initialized.
func clusterServer(r io.Reader, w io.Writer) int {
	return serveMarked(r, func(mark io.Writer, line []byte, method string, id json.RawMessage) {
		var m struct {
			Params struct {
				Arguments struct {
					Hang    bool `json:"hang"`
					SleepMS int  `json:"sleepMs"`
				} `json:"arguments"`
			} `json:"params"`
		}
		_ = json.Unmarshal(line, &m)
		switch method {
		case "initialize":
			if os.Getenv("CONDUIT_CLUSTER_MARK_START") != "" {
				fmt.Fprintln(mark, "started", os.Getpid())
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"pid","version":"1"}}}`+"\n", id)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"work","inputSchema":{"type":"object","properties":{"hang":{"type":"boolean"}}}}]}}`+"\n", id)
		case "tools/call":
			if m.Params.Arguments.Hang {
				fmt.Fprintln(mark, "hang")
				return
			}
			if ms := m.Params.Arguments.SleepMS; ms > 0 {
				fmt.Fprintln(mark, "sleep")
				go func() {
					time.Sleep(time.Duration(ms) * time.Millisecond)
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"pid %d"}]}}`+"\n", id, os.Getpid())
				}()
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"pid %d"}]}}`+"\n", id, os.Getpid())
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", id)
		}
	})
}

// serveMarked is the read loop of the scripted legacy stdio servers: it
// writes "cancelled" to the FIFO $CONDUIT_CLUSTER_MARK for each
// notifications/cancelled and hands each line with an id (a request, or
// an answer to the server's own request) to handle, with the FIFO.
func serveMarked(r io.Reader, handle func(mark io.Writer, line []byte, method string, id json.RawMessage)) int {
	mark, err := os.OpenFile(os.Getenv("CONDUIT_CLUSTER_MARK"), os.O_WRONLY, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Method == "notifications/cancelled" {
			fmt.Fprintln(mark, "cancelled")
		}
		if len(m.ID) > 0 {
			handle(mark, sc.Bytes(), m.Method, m.ID)
		}
	}
	return 0
}

var (
	clusterBuild    sync.Once
	clusterBuildErr error
)

// clusterBinaries builds, beside the conduit of binaries, conduit-cluster
// (conduit with the cluster tag), which conduit gateway --cluster runs.
func clusterBinaries(t *testing.T) (cli, server string) {
	t.Helper()
	cli, server = binaries(t)
	clusterBuild.Do(func() {
		out, err := exec.Command("go", "build", "-tags", "cluster", "-o", filepath.Join(binDir, clusterCommand), ".").CombinedOutput()
		if err != nil {
			clusterBuildErr = fmt.Errorf("go build -tags cluster: %v\n%s", err, out)
		}
	})
	if clusterBuildErr != nil {
		t.Fatal(clusterBuildErr)
	}
	return cli, server
}

// clusterMember is one conduit gateway process of the cluster.
type clusterMember struct {
	cmd         *exec.Cmd
	url         string
	remote      string // its --cluster-listen address
	startedWith string // how many members its ready line said

	mu     sync.Mutex
	before []string // its stderr, before the ready line
	lines  []string // its stderr, after the ready line
}

// beforeReady is what the member wrote on stderr before its ready line.
func (m *clusterMember) beforeReady() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.before...)
}

// logAfterReadyOnFailure logs what each member wrote after its ready line
// when t fails: what a failure on a loaded CI machine needs to be read.
func logAfterReadyOnFailure(t *testing.T, members []*clusterMember) {
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range members {
				t.Logf("member %s after its ready line: %q", m.remote, m.after())
			}
		}
	})
}

// after is what the member wrote on stderr after its ready line.
func (m *clusterMember) after() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...)
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// startCluster starts n gateway members of one cluster on loopback, each
// serving cfg, and returns once each says it serves with n members. A port
// that another process took between freePorts and the member's listen
// (tests of other packages run beside these) starts the cluster again on
// fresh ports, twice at most.
func startCluster(t *testing.T, n int, cfg string, flags ...string) []*clusterMember {
	for attempt := 1; ; attempt++ {
		members, taken := tryCluster(t, n, cfg, flags...)
		if !taken || attempt == 3 {
			for _, m := range members {
				require.NotEmpty(t, m.url, "member %s never said it serves", m.remote)
				assert.Equal(t, strconv.Itoa(n), m.startedWith, "member %s started with as many members", m.remote)
			}
			return members
		}
		t.Logf("a port was taken meanwhile: the cluster starts again (attempt %d)", attempt+1)
		for _, m := range members {
			_ = m.cmd.Process.Kill()
		}
	}
}

// tryCluster is one attempt of startCluster: it reports whether a member
// failed because its port was taken.
func tryCluster(t *testing.T, n int, cfg string, flags ...string) (members []*clusterMember, taken bool) {
	cli, _ := clusterBinaries(t)
	ports := freePorts(t, 2*n)
	var seeds []string
	for i := range n {
		seeds = append(seeds, fmt.Sprintf("127.0.0.1:%d", ports[n+i]))
	}
	ready := regexp.MustCompile(`^conduit gateway: \d+ servers at (http://127\.0\.0\.1:\d+/mcp), member (\S+) of cluster c \((\d+) members?\)$`)
	members = make([]*clusterMember, n)
	var wg sync.WaitGroup
	for i := range n {
		remote := fmt.Sprintf("127.0.0.1:%d", ports[i])
		cmd := exec.Command(cli, "gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--cluster", "c",
			"--cluster-listen", remote, "--cluster-health", strconv.Itoa(ports[n+i]), "--cluster-seeds", strings.Join(seeds, ","),
			"--cluster-refresh", "300ms")
		cmd.Args = append(cmd.Args, flags...)
		cmd.Env = append(os.Environ(), "CONDUIT_CLUSTER_SECRET="+clusterSecret)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		m := &clusterMember{cmd: cmd, remote: remote}
		members[i] = m
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines := bufio.NewScanner(stderr)
			for lines.Scan() {
				if g := ready.FindStringSubmatch(lines.Text()); g != nil {
					m.url, m.startedWith = g[1], g[3]
					break
				}
				t.Logf("member %s: %s", remote, lines.Text())
				m.mu.Lock()
				m.before = append(m.before, lines.Text())
				m.mu.Unlock()
			}
			go func() {
				for lines.Scan() {
					m.mu.Lock()
					m.lines = append(m.lines, lines.Text())
					m.mu.Unlock()
				}
			}()
		}()
	}
	wg.Wait() // each scanner ends at its ready line or when its process exits
	for _, m := range members {
		if m.url == "" && slices.ContainsFunc(m.beforeReady(), func(l string) bool { return strings.Contains(l, "address already in use") }) {
			return members, true
		}
	}
	return members, false
}

// clusterSecret is the test clusters' shared secret.
const clusterSecret = "cluster-test-secret-0123456789"

// tally counts the calls of a test: started, completed, and failed by
// reason.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *tally) add(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[what]++
}

func (c *tally) get() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func connectMCP(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "cluster-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// clientsOf connects a client to each member with dial (connectMCP,
// modernClusterClient: each closes its client with the test).
func clientsOf(t *testing.T, ctx context.Context, members []*clusterMember, dial func(*testing.T, context.Context, string) *mcp.ClientSession) []*mcp.ClientSession {
	t.Helper()
	sessions := make([]*mcp.ClientSession, len(members))
	for i, m := range members {
		sessions[i] = dial(t, ctx, m.url)
	}
	return sessions
}

// work calls s__work through cs and returns its text.
func work(ctx context.Context, cs *mcp.ClientSession, hang bool, counts *tally) (string, error) {
	counts.add("started")
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"hang": hang}})
	switch {
	case err != nil && strings.Contains(err.Error(), "was lost with the request in flight"):
		counts.add("failed: member lost")
	case err != nil && ctx.Err() != nil:
		counts.add("failed: deadline")
	case err != nil:
		counts.add("failed: other")
	case len(res.Content) != 1:
		counts.add("failed: other")
		return "", fmt.Errorf("result %v", res)
	default:
		counts.add("completed")
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	return "", err
}

// markFIFO makes the FIFO the test servers write their marks to
// ($CONDUIT_CLUSTER_MARK) and opens its read end, RDWR so that opening
// never blocks, closed at the test's end: its path, and the end to read.
func markFIFO(t *testing.T) (string, *os.File) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "mark")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	marks, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = marks.Close() })
	return fifo, marks
}

// parentPID is the parent process of pid (Linux).
func parentPID(t *testing.T, pid string) int {
	stat, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	return ppid
}

// Three gateway members on loopback serve one stdio server, which runs on
// exactly one of them: a call through each member reaches the same
// process. SIGKILL the member holding it: the calls in flight through the
// others fail at once with an error naming the lost member, and the next
// call through a survivor starts the server afresh on a survivor.
func TestGatewayClusterServerMovesWhenItsMemberDies(t *testing.T) {
	fifo, marks := markFIFO(t)
	hangs := bufio.NewScanner(marks)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterServerEnv, fifo))
	members := startCluster(t, 3, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var counts tally
	sessions := clientsOf(t, ctx, members, connectMCP)
	// One server process answers through every member.
	var pid string
	for i, cs := range sessions {
		text, err := work(ctx, cs, false, &counts)
		require.NoError(t, err, "through member %s", members[i].remote)
		if pid == "" {
			pid = text
		}
		assert.Equal(t, pid, text, "through member %s", members[i].remote)
	}
	holderPID := parentPID(t, strings.TrimPrefix(pid, "pid "))
	holder := -1
	for i, m := range members {
		if m.cmd.Process.Pid == holderPID {
			holder = i
		}
	}
	require.NotEqual(t, -1, holder, "the server's parent %d is a member", holderPID)
	t.Logf("server %s runs on member %s", pid, members[holder].remote)

	// Two calls in flight through each survivor, and one through the holder.
	type outcome struct {
		via string
		err error
		in  time.Duration
	}
	var survivors []int
	for i := range members {
		if i != holder {
			survivors = append(survivors, i)
		}
	}
	var killed time.Time
	var killedMu sync.Mutex
	outcomes := make(chan outcome, 5)
	inflight := append(append([]int{}, survivors...), survivors...)
	inflight = append(inflight, holder)
	for _, i := range inflight {
		go func() {
			callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, err := work(callCtx, sessions[i], true, &counts)
			killedMu.Lock()
			in := time.Since(killed)
			killedMu.Unlock()
			outcomes <- outcome{members[i].remote, err, in}
		}()
	}
	for range inflight {
		require.True(t, hangs.Scan(), "the server got every call")
	}
	killedMu.Lock()
	killed = time.Now()
	require.NoError(t, members[holder].cmd.Process.Signal(syscall.SIGKILL))
	killedMu.Unlock()
	for range inflight {
		o := <-outcomes
		require.Error(t, o.err, "via %s", o.via)
		if o.via == members[holder].remote {
			continue // its client's connection dropped with it
		}
		assert.Regexp(t, `conduit: CallTool: transport: cluster member `+regexp.QuoteMeta(members[holder].remote)+` \(\w+\) holding server "s" was lost with the request in flight: its connection dropped$`, o.err.Error(), "via %s", o.via)
		assert.Less(t, o.in, 5*time.Second, "a call in flight fails fast, via %s", o.via)
		t.Logf("in flight via %s failed %v after the kill: %v", o.via, o.in.Round(time.Millisecond), o.err)
	}
	// The next call through each survivor starts the server afresh on a
	// survivor, the same one for both.
	var again string
	for _, i := range survivors {
		start := time.Now()
		text, err := work(ctx, sessions[i], false, &counts)
		require.NoError(t, err, "through member %s", members[i].remote)
		t.Logf("first call via %s after the kill: %v", members[i].remote, time.Since(start).Round(time.Millisecond))
		if again == "" {
			again = text
		}
		assert.Equal(t, again, text)
	}
	assert.NotEqual(t, pid, again, "the server started afresh")
	newHolder := parentPID(t, strings.TrimPrefix(again, "pid "))
	assert.True(t, newHolder == members[survivors[0]].cmd.Process.Pid || newHolder == members[survivors[1]].cmd.Process.Pid)
	got := counts.get()
	t.Logf("calls: %v", got)
	assert.Equal(t, map[string]int{"started": 3 + 5 + 2, "completed": 3 + 2, "failed: member lost": 4, "failed: other": 1}, got)
}

// A lost member's servers start afresh on a survivor as soon as the
// topology drops it: its leaving starts a keep-alive round at once, where
// the next round would come up to --cluster-refresh later. With rounds 6 s
// apart, the new server process is initialized within half a second of a
// survivor's "left" (13–70 ms in nine runs; without the kick, at the next
// round: 1.01–1.05 s after it in this test's timing, six runs).
func TestGatewayClusterRestartsALostMembersServerAtOnce(t *testing.T) {
	fifo, marks := markFIFO(t)
	type mark struct {
		text string
		at   time.Time
	}
	got := make(chan mark, 16)
	go func() {
		sc := bufio.NewScanner(marks)
		for sc.Scan() {
			got <- mark{sc.Text(), time.Now()}
		}
	}()
	next := func() mark {
		select {
		case m := <-got:
			return m
		case <-time.After(time.Minute):
			t.Fatal("no server started")
			return mark{}
		}
	}
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q,"CONDUIT_CLUSTER_MARK_START":"1"}}}}`, os.Args[0], clusterServerEnv, fifo))
	const refresh = 6 * time.Second
	members := startCluster(t, 3, cfg, "--cluster-refresh", refresh.String())
	logAfterReadyOnFailure(t, members)

	// The server's process now (the first rounds may have started one on
	// a member before the others joined): a call through one member.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var counts tally
	cs := connectMCP(t, ctx, members[0].url)
	var pid string
	var err error
	require.Eventually(t, func() bool { // the catalog comes with the members' first rounds
		pid, err = work(ctx, cs, false, &counts)
		return err == nil || !strings.Contains(err.Error(), `unknown tool "s__work"`)
	}, time.Minute, 100*time.Millisecond)
	require.NoError(t, err)
	holderPID := parentPID(t, strings.TrimPrefix(pid, "pid "))
	holder := slices.IndexFunc(members, func(m *clusterMember) bool { return m.cmd.Process.Pid == holderPID })
	require.NotEqual(t, -1, holder, "the server's parent %d is a member", holderPID)
	survivor := members[(holder+1)%len(members)]
	for drained := false; !drained; { // the marks of the processes started so far
		select {
		case <-got:
		default:
			drained = true
		}
	}

	require.NoError(t, members[holder].cmd.Process.Signal(syscall.SIGKILL))
	killed := time.Now()
	left := regexp.MustCompile(`^conduit gateway: \d\d:\d\d:\d\d\.\d{3} member ` + regexp.QuoteMeta(members[holder].remote) + ` left: \d+ members?$`)
	var leftAt time.Time
	require.Eventually(t, func() bool {
		if slices.ContainsFunc(survivor.after(), left.MatchString) {
			leftAt = time.Now()
			return true
		}
		return false
	}, time.Minute, 10*time.Millisecond, "the survivor never saw the member leave")
	// The next server process started by a survivor (one started by the
	// members' first rounds, gone since, is skipped).
	var again mark
	for again.text == "" {
		m := next()
		require.Regexp(t, `^started \d+$`, m.text)
		stat, err := os.ReadFile(filepath.Join("/proc", strings.TrimPrefix(m.text, "started "), "stat"))
		if err != nil {
			t.Logf("skipped %q: the process is gone", m.text)
			continue
		}
		ppid, _ := strconv.Atoi(strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))[1])
		require.NotEqual(t, holderPID, ppid, "a server started on the killed member")
		require.True(t, slices.ContainsFunc(members, func(m *clusterMember) bool { return m.cmd.Process.Pid == ppid }), "it started on a member")
		again = m
	}
	t.Logf("member left %v after the kill; its server started afresh %v after that", leftAt.Sub(killed).Round(time.Millisecond), again.at.Sub(leftAt).Round(time.Millisecond))
	assert.Less(t, again.at.Sub(leftAt), 500*time.Millisecond, "the server started afresh at the member's leaving, not at the next round")
}

// Through a member that does not hold it, a server's tools, prompts and
// resources are listed, called, got and read as through the one that does.
func TestGatewayClusterServesPromptsAndResourcesAcrossMembers(t *testing.T) {
	_, server := clusterBinaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"e":{"command":%q,"conduit":{"era":"legacy"}}}}`, server))
	members := startCluster(t, 2, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range members {
		cs := connectMCP(t, ctx, m.url)
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err, m.remote)
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		assert.Contains(t, names, "e__test_simple_text", m.remote)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "e__test_simple_text"})
		require.NoError(t, err, m.remote)
		assert.Equal(t, "This is a simple text response for testing.", res.Content[0].(*mcp.TextContent).Text, m.remote)
		prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "e__test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x", "arg2": "y"}})
		require.NoError(t, err, m.remote)
		assert.Equal(t, "Prompt with arguments: arg1='x', arg2='y'", prompt.Messages[0].Content.(*mcp.TextContent).Text, m.remote)
		read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
		require.NoError(t, err, m.remote)
		assert.Equal(t, "This is the content of the static text resource.", read.Contents[0].Text, m.remote)
	}
}

// The cluster's flags need --cluster; a member's settings that no other
// member could reach are a usage error. conduit gateway --cluster runs
// conduit-cluster in its place, which says so.
func TestGatewayClusterFlagsAreChecked(t *testing.T) {
	cfg := writeFile(t, "mcp.json", `{"mcpServers":{}}`)
	r := runInProcess(t, "gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--cluster-seeds", "127.0.0.1:6001")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: --cluster-listen, --cluster-health, --cluster-seeds and --cluster-secret-file need --cluster NAME\nRun 'conduit gateway --help' for usage.\n", r.stderr)
	clusterBinaries(t)
	r = runCLI(t, "gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--cluster", "c", "--cluster-listen", "0.0.0.0:7001", "--cluster-health", "6001", "--cluster-seeds", "127.0.0.1:6001")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: cluster: listen address \"0.0.0.0:7001\": want HOST:PORT with a host the others can reach and a port\nRun 'conduit gateway --help' for usage.\n", r.stderr)
	r = runCLI(t, "gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--cluster", "c", "--cluster-listen", "127.0.0.1:7001", "--cluster-health", "6001", "--cluster-seeds", "127.0.0.1:6001")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: cluster: no shared secret of 16 bytes at least (--cluster-secret-file FILE or $CONDUIT_CLUSTER_SECRET, the same on every member): it seals the modern calls' requestStates that any member may receive\nRun 'conduit gateway --help' for usage.\n", r.stderr)
}
