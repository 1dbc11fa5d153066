package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spread is an HTTP transport that sends each request of one legacy
// client to the member its kind names: initialize, tools/call, a response
// (the client's answer to a server→client request), or anything else
// (notifications, GET, DELETE); it counts where each went.
type spread struct {
	mu   sync.Mutex
	to   map[string]string // kind → member URL; "" the default
	sent map[string]int    // "kind → URL"
	ids  []string          // the Mcp-Session-Id of each request that had one
}

func (s *spread) RoundTrip(r *http.Request) (*http.Response, error) {
	kind := r.Method
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		_ = r.Body.Close()
	}
	if r.Method == http.MethodPost {
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &m)
		kind = m.Method
		if kind == "" && len(m.ID) > 0 {
			kind = "response"
		}
	}
	s.mu.Lock()
	target, ok := s.to[kind]
	if !ok {
		target = s.to[""]
	}
	s.sent[kind+" → "+target]++
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		s.ids = append(s.ids, id)
	}
	s.mu.Unlock()
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	r2 := r.Clone(r.Context())
	r2.URL.Scheme, r2.URL.Host, r2.Host = u.Scheme, u.Host, u.Host
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	return http.DefaultTransport.RoundTrip(r2)
}

func (s *spread) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.sent {
		out[k] = v
	}
	return out
}

// holderOf is the member a session id names (cluster.Servers.NewSessionID).
func holderOf(t *testing.T, id string) string {
	prefix, _, ok := strings.Cut(id, ".")
	require.True(t, ok, "session id %q names a member", id)
	addr, err := base64.RawURLEncoding.DecodeString(prefix)
	require.NoError(t, err)
	return string(addr)
}

// sessionCluster starts three members serving the everything-server (e,
// legacy) and the cluster test server (s), whose marks the returned
// scanner reads.
func sessionCluster(t *testing.T) ([]*clusterMember, *bufio.Scanner) {
	_, server := clusterBinaries(t)
	fifo, marks := markFIFO(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"e":{"command":%q,"conduit":{"era":"legacy"}},"s":{"command":%q,"env":{%q:"1","CONDUIT_CLUSTER_MARK":%q}}}}`,
		server, os.Args[0], clusterServerEnv, fifo))
	return startCluster(t, 3, cfg), bufio.NewScanner(marks)
}

// A legacy session initialized on member 1 is used through the others as
// if they were it: a tools/call through member 2 whose server asks for
// input (an elicitation, on the call's SSE stream, streamed back through
// member 2), answered by a POST through member 3, completes with the
// answer; a call cancelled by its client through member 2 is cancelled on
// the server; a DELETE through member 3 ends the session on member 1, and
// its id is then unknown through member 2 too (404).
func TestGatewayClusterLegacySessionThroughOtherMembers(t *testing.T) {
	members, marks := sessionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sp := &spread{to: map[string]string{"initialize": members[0].url, "tools/call": members[1].url, "response": members[2].url, "": members[2].url}, sent: map[string]int{}}
	asked := 0
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-legacy", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			assert.Equal(t, "Your name?", req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: members[0].url, HTTPClient: &http.Client{Transport: sp}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	id := cs.ID()
	assert.Equal(t, members[0].remote, holderOf(t, id), "the session's id names the member that holds it")

	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "e__test_elicitation", Arguments: map[string]any{"message": "Your name?"}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", res.Content[0].(*mcp.TextContent).Text)
	assert.Equal(t, 1, asked)
	t.Logf("a legacy call through another member, its input answered through a third: %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, map[string]int{
		"initialize → " + members[0].url:                1,
		"notifications/initialized → " + members[2].url: 1,
		"tools/call → " + members[1].url:                1,
		"response → " + members[2].url:                  1,
	}, sp.counts())

	// A plain call, and one its client cancels: the server hears of it.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Regexp(t, `^pid \d+$`, res.Content[0].(*mcp.TextContent).Text)
	callCtx, cancelCall := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"hang": true}})
		failed <- err
	}()
	require.True(t, marks.Scan())
	require.Equal(t, "hang", marks.Text())
	cancelCall()
	require.ErrorIs(t, <-failed, context.Canceled)
	require.True(t, marks.Scan())
	assert.Equal(t, "cancelled", marks.Text(), "the server got notifications/cancelled")

	// The cost of the hop: the same session's calls sent to the member
	// holding it, then through another (docs/cluster.md's figure).
	direct, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: members[0].url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer direct.Close()
	for _, c := range []struct {
		path string
		cs   *mcp.ClientSession
	}{{"direct", direct}, {"through another member", cs}} {
		var took []time.Duration
		for range 200 {
			start := time.Now()
			_, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{}})
			require.NoError(t, err)
			took = append(took, time.Since(start))
		}
		slices.Sort(took)
		t.Logf("legacy call %s: p50 %v, p90 %v (200 calls)", c.path, took[100].Round(10*time.Microsecond), took[180].Round(10*time.Microsecond))
	}

	// DELETE through member 3 ends the session where it lives.
	require.NoError(t, cs.Close())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, members[1].url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	require.NoError(t, err)
	legacyHeaders(req, id)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the deleted session is unknown through another member")
	assert.Equal(t, 1, sp.counts()["DELETE → "+members[2].url])
	for _, got := range sp.ids {
		assert.Equal(t, id, got)
	}
}

// SIGKILL the member holding a legacy session while a call of it runs
// through another member: the call fails at once with an error naming the
// lost member; the session's id is then unknown (404) through the
// survivors, and a new session through a survivor works.
func TestGatewayClusterLegacySessionHolderKilled(t *testing.T) {
	members, marks := sessionCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sp := &spread{to: map[string]string{"initialize": members[0].url, "": members[1].url}, sent: map[string]int{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "cluster-legacy", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: members[0].url, HTTPClient: &http.Client{Transport: sp}, DisableStandaloneSSE: true, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	id := cs.ID()
	require.Equal(t, members[0].remote, holderOf(t, id))

	failed := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{"hang": true}})
		failed <- err
	}()
	require.True(t, marks.Scan())
	require.Equal(t, "hang", marks.Text())
	killed := time.Now()
	require.NoError(t, members[0].cmd.Process.Signal(syscall.SIGKILL))
	var err2 error
	select {
	case err2 = <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not fail within 10 s of its session's member's loss")
	}
	in := time.Since(killed)
	require.Error(t, err2)
	assert.Regexp(t, `cluster member `+regexp.QuoteMeta(members[0].remote)+` \(\w+\) holding the downstream session was lost with the request in flight: its connection dropped`, err2.Error())
	assert.Less(t, in, 3*time.Second, "it fails fast")
	t.Logf("the call through %s failed %v after its session's member was killed: %v", members[1].remote, in.Round(time.Millisecond), err2)

	// Once a survivor's topology drops the killed member (its next poll
	// of the provider), the session is unknown there; until then, its
	// requests fail as the call did.
	lost := regexp.MustCompile(`^\{"error":\{"code":-32603,"message":"cluster member ` + regexp.QuoteMeta(members[0].remote) + ` \(\w+\) holding the downstream session was lost with the request in flight: its connection dropped"\},"id":9,"jsonrpc":"2.0"\}\n?$`)
	for _, m := range members[1:] {
		var status int
		var body []byte
		require.Eventually(t, func() bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
			require.NoError(t, err)
			legacyHeaders(req, id)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			body, _ = io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			status = resp.StatusCode
			if status != http.StatusNotFound {
				assert.Regexp(t, lost, string(body), "via %s, before its topology dropped the member", m.remote)
			}
			return status == http.StatusNotFound
		}, 10*time.Second, 50*time.Millisecond, "via %s: %d %s", m.remote, status, body)
		assert.Equal(t, fmt.Sprintf("session not found: the cluster member %s that held it is not in the cluster\n", members[0].remote), string(body))
	}
	fresh, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: members[1].url, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer fresh.Close()
	assert.Equal(t, members[1].remote, holderOf(t, fresh.ID()))
	res, err := fresh.CallTool(ctx, &mcp.CallToolParams{Name: "s__work", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Regexp(t, `^pid \d+$`, res.Content[0].(*mcp.TextContent).Text)
}

// legacyHeaders are those of a legacy session's POST.
func legacyHeaders(req *http.Request, id string) {
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
}
