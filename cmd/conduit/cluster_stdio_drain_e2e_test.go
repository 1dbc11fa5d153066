package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A member may serve stdio (no --listen): on SIGTERM its stdio session
// ends, then it drains as a member over HTTP does (the other member
// prints "draining" then "left" for it), exits 0, and the server it held,
// if any, starts afresh on the other member.
func TestGatewayClusterDrainsAStdioMember(t *testing.T) {
	cli, _ := clusterBinaries(t)
	fifo, _ := markFIFO(t) // its read end lets the server open it; no mark is read here
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`, os.Args[0], clusterServerEnv, fifo))
	ports := freePorts(t, 4)
	seeds := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[2], ports[3])
	member := func(i int, args ...string) *exec.Cmd {
		cmd := exec.Command(cli, append([]string{"gateway", "--config", cfg, "--cluster", "c", "--cluster-listen", fmt.Sprintf("127.0.0.1:%d", ports[i]),
			"--cluster-health", strconv.Itoa(ports[2+i]), "--cluster-seeds", seeds, "--cluster-refresh", "300ms", "--cluster-drain", "10s"}, args...)...)
		cmd.Env = append(os.Environ(), "CONDUIT_CLUSTER_SECRET="+clusterSecret)
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	stdio := member(0)
	in, err := stdio.StdinPipe()
	require.NoError(t, err)
	out, err := stdio.StdoutPipe()
	require.NoError(t, err)
	var stdioLog strings.Builder
	stdio.Stderr = &stdioLog
	require.NoError(t, stdio.Start())
	web := member(1, "--listen", "127.0.0.1:0")
	stderr, err := web.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, web.Start())
	var mu sync.Mutex
	var lines []string
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if g := regexp.MustCompile(`servers at (http://\S+/mcp), member`).FindStringSubmatch(sc.Text()); g != nil {
				ready <- g[1]
			}
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var url string
	select {
	case url = <-ready:
	case <-ctx.Done():
		t.Fatal("the HTTP member never served")
	}

	// A call over the stdio member's stdin reaches the server. Its client
	// declares what connectMCP's go-sdk client does (roots), so that both
	// calls reach one connection of the server, not two variants
	// (decision 78).
	replies := bufio.NewScanner(out)
	send := func(v string) { _, err := in.Write([]byte(v + "\n")); require.NoError(t, err) }
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"t","version":"1"}}}`)
	require.True(t, replies.Scan())
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__work","arguments":{}}}`)
	require.True(t, replies.Scan())
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(replies.Bytes(), &res), replies.Text())
	require.Len(t, res.Result.Content, 1, replies.Text())
	pid := res.Result.Content[0].Text
	heldByStdio := parentPID(t, strings.TrimPrefix(pid, "pid ")) == stdio.Process.Pid

	term := time.Now()
	require.NoError(t, stdio.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- stdio.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err, "the drained member exits 0; its stderr:\n%s", stdioLog.String())
		t.Logf("the stdio member (holding the server: %v) exited %v after SIGTERM", heldByStdio, time.Since(term).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the stdio member did not exit")
	}
	events := regexp.MustCompile(`^conduit gateway: \d\d:\d\d:\d\d\.\d{3} member 127\.0\.0\.1:` + strconv.Itoa(ports[0]) + ` (\w+)`)
	var kinds []string
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		kinds = nil
		for _, l := range lines {
			if g := events.FindStringSubmatch(l); g != nil && g[1] != "joined" {
				kinds = append(kinds, g[1])
			}
		}
		return len(kinds) >= 2
	}, 10*time.Second, 50*time.Millisecond)
	assert.Equal(t, []string{"draining", "left"}, kinds)

	// The other member serves the server now, afresh if the stdio member held it.
	cs := connectMCP(t, ctx, url)
	var counts tally
	again, err := work(ctx, cs, false, &counts)
	require.NoError(t, err)
	assert.Equal(t, web.Process.Pid, parentPID(t, strings.TrimPrefix(again, "pid ")))
	if heldByStdio {
		assert.NotEqual(t, pid, again)
	} else {
		assert.Equal(t, pid, again)
	}
}
