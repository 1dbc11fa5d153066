package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SIGTERM the member holding a server while calls to it are in flight
// through another member: the member drains. The others print that it
// drains, then that it left; its calls in flight finish on it (on the
// server process that had them), calls made meanwhile complete, the next
// call starts the server afresh on a survivor, and the member exits 0.
func TestGatewayClusterDrainsOnSIGTERM(t *testing.T) {
	fifo, marks := markFIFO(t)
	started := bufio.NewScanner(marks)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterServerEnv, fifo))
	members := startCluster(t, 3, cfg, "--cluster-drain", "20s", "-v")
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, m := range members { // what each member said after it started
			for _, l := range m.after() {
				t.Logf("member %s: %s", m.remote, l)
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var counts tally
	sessions := clientsOf(t, ctx, members, connectMCP)
	pid, err := work(ctx, sessions[0], false, &counts)
	require.NoError(t, err)
	holderPID := parentPID(t, strings.TrimPrefix(pid, "pid "))
	holder := -1
	for i, m := range members {
		if m.cmd.Process.Pid == holderPID {
			holder = i
		}
	}
	require.NotEqual(t, -1, holder)
	via := (holder + 1) % 3
	other := (holder + 2) % 3

	// Two slow calls in flight on the holder, through another member.
	slow := make(chan string, 2)
	for range 2 {
		go func() {
			counts.add("started")
			res, err := sessions[via].CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"sleepMs": 2000}})
			switch {
			case err != nil:
				counts.add("failed: " + err.Error())
				slow <- err.Error()
			default:
				counts.add("completed")
				slow <- res.Content[0].(*mcp.TextContent).Text
			}
		}()
	}
	for range 2 {
		require.True(t, started.Scan())
	}
	require.NoError(t, members[holder].cmd.Process.Signal(syscall.SIGTERM))
	term := time.Now()
	// Calls meanwhile, through both others, complete.
	for i := range 6 {
		start := time.Now()
		_, err := work(ctx, sessions[[]int{via, other}[i%2]], false, &counts)
		require.NoError(t, err)
		t.Logf("call %d during the drain took %v", i, time.Since(start).Round(time.Millisecond))
	}
	for range 2 {
		assert.Equal(t, pid, <-slow, "finished on the server process that had it")
	}
	exited := make(chan error, 1)
	go func() { exited <- members[holder].cmd.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err, "the drained member exits 0")
		t.Logf("the drained member exited %v after SIGTERM", time.Since(term).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the drained member did not exit")
	}
	// The server starts afresh on a survivor.
	start := time.Now()
	again, err := work(ctx, sessions[via], false, &counts)
	require.NoError(t, err)
	t.Logf("first call after the drain took %v", time.Since(start).Round(time.Millisecond))
	assert.NotEqual(t, pid, again)
	newHolder := parentPID(t, strings.TrimPrefix(again, "pid "))
	assert.Contains(t, []int{members[via].cmd.Process.Pid, members[other].cmd.Process.Pid}, newHolder)
	assert.Equal(t, map[string]int{"started": 1 + 2 + 6 + 1, "completed": 1 + 2 + 6 + 1}, counts.get())

	// Each survivor printed the holder's drain and leave as events.
	for _, i := range []int{via, other} {
		events := regexp.MustCompile(`^conduit gateway: \d\d:\d\d:\d\d\.\d{3} member ` + regexp.QuoteMeta(members[holder].remote) + ` (\w+)`)
		var kinds []string
		require.Eventually(t, func() bool {
			kinds = nil
			for _, l := range members[i].after() {
				if g := events.FindStringSubmatch(l); g != nil {
					kinds = append(kinds, g[1])
				}
			}
			return len(kinds) >= 2
		}, 10*time.Second, 50*time.Millisecond)
		assert.Equal(t, []string{"draining", "left"}, kinds, "through %s: %q", members[i].remote, members[i].after())
	}
}

// With --json, a member prints the cluster's membership as JSON events on
// stderr: each member joining (itself too), and, when one is killed, its
// loss (the connection dropped) and its leaving (the provider's topology).
func TestGatewayClusterPrintsMembershipEventsAsJSON(t *testing.T) {
	cfg := writeFile(t, "mcp.json", `{"mcpServers":{}}`)
	t0 := time.Now()
	members := startCluster(t, 2, cfg, "--json")
	t.Logf("started in %v", time.Since(t0))
	type event struct {
		Cluster, Event, Member, Why string
		Members                     int
		MemberID                    string `json:"member_id"`
	}
	parse := func(lines []string) []event {
		var out []event
		for _, l := range lines {
			var ev event
			if json.Unmarshal([]byte(l), &ev) == nil && ev.Event != "" {
				assert.NotEmpty(t, ev.MemberID, l)
				ev.MemberID = ""
				out = append(out, ev)
			}
		}
		return out
	}
	for _, m := range members {
		var joined []string
		for _, ev := range parse(m.beforeReady()) {
			assert.Equal(t, "joined", ev.Event)
			assert.Equal(t, "c", ev.Cluster)
			joined = append(joined, ev.Member)
		}
		assert.ElementsMatch(t, []string{members[0].remote, members[1].remote}, joined, "as %s saw it", m.remote)
	}
	require.NoError(t, members[1].cmd.Process.Signal(syscall.SIGKILL))
	t0 = time.Now()
	var got []event
	require.Eventually(t, func() bool {
		got = parse(members[0].after())
		return len(got) >= 2
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, []event{
		{Cluster: "c", Event: "lost", Member: members[1].remote, Members: 2, Why: "its connection dropped"},
		{Cluster: "c", Event: "left", Member: members[1].remote, Members: 1},
	}, got)
	t.Logf("events in %v", time.Since(t0))
}

// conduit gateway --cluster --admin serves each member's admin listener:
// /readyz and the servers' state from the cluster's view, so on every
// member; the tool calls counted where the server runs, on its holder
// only, whichever member took the calls; /readyz is 503 once it drains.
var requestsRE = regexp.MustCompile(`(?m)^conduit_cluster_requests_total\{outcome="(\w+)"\} (\d+)$`)

func TestGatewayClusterServesAdmin(t *testing.T) {
	fifo, marks := markFIFO(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterServerEnv, fifo))
	members := startCluster(t, 2, cfg, "--admin", "127.0.0.1:0", "--cluster-drain", "5s")
	adminRE := regexp.MustCompile(`^conduit gateway: admin at (http://127\.0\.0\.1:\d+/) `)
	admins := make([]string, len(members))
	for i, m := range members {
		for _, l := range m.beforeReady() {
			if g := adminRE.FindStringSubmatch(l); g != nil {
				admins[i] = g[1]
			}
		}
		require.NotEmpty(t, admins[i], "member %s printed its admin address", m.remote)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var counts tally
	var pid string
	for _, m := range members {
		cs := connectMCP(t, ctx, m.url)
		for range 3 {
			var err error
			pid, err = work(ctx, cs, false, &counts)
			require.NoError(t, err)
		}
		_ = cs.Close()
	}
	holderPID := parentPID(t, strings.TrimPrefix(pid, "pid "))
	get := func(url string) (int, string) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for i, m := range members {
		code, body := get(admins[i] + "readyz")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"ready":true,"not_ready":[]}`, body)
		_, metrics := get(admins[i] + "metrics")
		assert.Contains(t, metrics, `conduit_server_state{server="s",state="ready"} 1`, m.remote)
		assert.Contains(t, metrics, "\nconduit_cluster_calls_orphaned_total 0\n", "the member's own counters, no member lost")
		sent := map[string]int{}
		for _, g := range requestsRE.FindAllStringSubmatch(metrics, -1) {
			sent[g[1]], _ = strconv.Atoi(g[2])
		}
		assert.GreaterOrEqual(t, sent["started"], 3, "its gateway's three calls at least went to the holder: %v", sent)
		assert.Equal(t, sent["started"], sent["completed"], "each answered: %v", sent)
		assert.Equal(t, 0, sent["lost"]+sent["timed_out"], "%v", sent)
		if m.cmd.Process.Pid == holderPID {
			assert.Contains(t, metrics, `conduit_tool_calls_total{outcome="ok",server="s",tool="work"} 6`, "the holder counts every call")
		} else {
			assert.NotContains(t, metrics, `conduit_tool_calls_total{`, "a member that holds no server counts no call")
		}
	}
	assert.Equal(t, map[string]int{"started": 6, "completed": 6}, counts.get())
	// A draining member is not ready.
	other := 0
	if members[0].cmd.Process.Pid == holderPID {
		other = 1
	}
	cs := connectMCP(t, ctx, members[other].url)
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"sleepMs": 3000}})
	}()
	require.True(t, bufio.NewScanner(marks).Scan())
	holder := 1 - other
	require.NoError(t, members[holder].cmd.Process.Signal(syscall.SIGTERM))
	require.Eventually(t, func() bool {
		code, body := get(admins[holder] + "readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "this member drains before it leaves the cluster")
	}, 5*time.Second, 20*time.Millisecond)
	<-hung
}

// A downstream call that ends (its client gave up) through a member that
// does not hold the server ends on the holding member too: the server is
// told the call is cancelled, not left to run to its 5 min deadline.
func TestGatewayClusterCancelReachesTheHoldingMember(t *testing.T) {
	fifo, marks := markFIFO(t)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(marks)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterServerEnv, fifo))
	members := startCluster(t, 2, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var counts tally
	sessions := clientsOf(t, ctx, members, connectMCP)
	pid, err := work(ctx, sessions[0], false, &counts)
	require.NoError(t, err)
	via := 0
	if members[0].cmd.Process.Pid == parentPID(t, strings.TrimPrefix(pid, "pid ")) {
		via = 1
	}
	callCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := work(callCtx, sessions[via], true, &counts)
		done <- err
	}()
	assert.Equal(t, "hang", <-lines)
	stop()
	require.Error(t, <-done)
	select {
	case l := <-lines:
		assert.Equal(t, "cancelled", l)
	case <-time.After(10 * time.Second):
		t.Fatal("the server was not told the call was cancelled")
	}
	assert.Equal(t, map[string]int{"started": 2, "completed": 1, "failed: deadline": 1}, counts.get())
}
