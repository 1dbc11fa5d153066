package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// fakeCounts is a drop counter a test sets by hand.
type fakeCounts struct {
	mu sync.Mutex
	d  dropCounts
}

func (f *fakeCounts) get() dropCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.d
}

func (f *fakeCounts) add(change func(*dropCounts)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.d)
}

func TestDropReporterPrintsWhatIsNewSinceTheLastSummary(t *testing.T) {
	// tick, then wait for the summary: synctest.Wait returns once the
	// reporter is blocked again.
	synctest.Test(t, func(t *testing.T) {
		counts := &fakeCounts{}
		var out bytes.Buffer
		tick := make(chan time.Time)
		r := startDropReporter(counts.get, &out, false, tick)

		tick <- time.Time{}
		synctest.Wait() // nothing dropped: nothing printed
		counts.add(func(d *dropCounts) {
			d.stats.LogsDropped = 1900
			d.stats.NotificationsDropped = 1
			d.stats.NotificationsDiscarded = 6
			d.stats.RootsWithheld = 1
			d.stats.Busy = 2
			d.stats.RateLimited = 3
			d.stats.Malformed = 4
			d.stats.UnknownResponses = 5
			d.stats.NotificationHandlerPanics = 9 // not a drop
		})
		tick <- time.Time{}
		synctest.Wait()
		tick <- time.Time{}
		synctest.Wait() // nothing new
		counts.add(func(d *dropCounts) { d.stats.LogsDropped += 7; d.stats.Malformed++ })
		r.finish()

		assert.Equal(t, `conduit: dropped 1900 server log entries over the rate limit
conduit: dropped 1 notification over the queue (1000 or 16 MiB waiting)
conduit: dropped 6 notifications discarded at close
conduit: dropped 2 input requests refused as busy (over --max-server-requests)
conduit: dropped 3 input requests refused over the server's budget
conduit: dropped 1 root withheld from the server (not a local file:// URI)
conduit: dropped 4 malformed messages from the server
conduit: dropped 5 responses to no request in flight
conduit: dropped 7 server log entries over the rate limit
conduit: dropped 1 malformed message from the server
`, out.String())
	})
}

func TestDropReporterJSONOneObjectPerSummary(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := &fakeCounts{}
		var out bytes.Buffer
		tick := make(chan time.Time)
		r := startDropReporter(counts.get, &out, true, tick)
		counts.add(func(d *dropCounts) { d.stats.LogsDropped = 1900; d.stats.RateLimited = 2 })
		tick <- time.Time{}
		synctest.Wait()
		counts.add(func(d *dropCounts) { d.stats.Busy = 1 })
		r.finish()
		assert.Equal(t, `{"dropped":{"input_rate_limited":2,"logs_rate_limited":1900},"final":false}
{"dropped":{"input_busy":1},"final":true}
`, out.String())
	})
}

func TestDropReporterSilentWhenNothingDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, jsonOut := range []bool{false, true} {
			var out bytes.Buffer
			tick := make(chan time.Time)
			r := startDropReporter((&fakeCounts{}).get, &out, jsonOut, tick)
			tick <- time.Time{}
			synctest.Wait()
			r.finish()
			assert.Empty(t, out.String(), "json=%v", jsonOut)
		}
	})
}

// While the command runs, a summary comes at most every 10 s, whatever the
// rate of the drops.
func TestDropSummaryEveryTenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		counts := &fakeCounts{}
		var out lockedBuffer
		finish := newApp(streams{err: &out}).watchDrops(counts.get)
		// A log entry dropped every second, half a second off the ticks,
		// for 25 s: summaries at 10 s and 20 s, the last 5 at the end.
		time.Sleep(500 * time.Millisecond)
		for i := 1; i <= 25; i++ {
			counts.add(func(d *dropCounts) { d.stats.LogsDropped++ })
			time.Sleep(time.Second)
			synctest.Wait()
			require.Equal(t, i/10, strings.Count(out.String(), "\n"), "summaries after %d.5 s: %q", i, out.String())
		}
		finish()
		assert.Equal(t, `conduit: dropped 10 server log entries over the rate limit
conduit: dropped 10 server log entries over the rate limit
conduit: dropped 5 server log entries over the rate limit
`, out.String())
	})
}

// lockedBuffer is a bytes.Buffer safe for the reporter's goroutine and the
// test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// floodServer is a legacy MCP server on the server end of a memory pair.
// On tools/call it sends each flood of log entries at once, pause apart,
// then waits a second (the client shows what passed) and answers.
type floodServer struct {
	conn   transport.Conn
	floods []int
	pause  time.Duration
}

func (s *floodServer) serve() {
	ctx := context.Background()
	send := func(v any) {
		b, _ := json.Marshal(v)
		_ = s.conn.Write(ctx, b)
	}
	for {
		msg, err := s.conn.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(msg.Data, &m) != nil || len(m.ID) == 0 || m.Method == "" {
			continue
		}
		reply := func(result any) { send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}) }
		switch m.Method {
		case "initialize":
			reply(map[string]any{
				"protocolVersion": "2025-11-25",
				"capabilities":    map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
				"serverInfo":      map[string]any{"name": "flood", "version": "1"},
			})
		case "tools/call":
			for i, n := range s.floods {
				if i > 0 {
					time.Sleep(s.pause)
				}
				for j := range n {
					send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
						"params": map[string]any{"level": "info", "data": fmt.Sprintf("flood %d entry %d", i+1, j)}})
				}
			}
			time.Sleep(time.Second)
			reply(map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}})
		default:
			reply(map[string]any{})
		}
	}
}

// runFlood runs `conduit call` in this process against a floodServer, in a
// synctest bubble: each flood arrives at one instant, so exactly the burst
// (100) of each passes the log rate limit (50/s).
func runFlood(t *testing.T, srv *floodServer, args ...string) result {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	srv.conn = serverSide
	go srv.serve()
	defer serverSide.Close()
	var stdout, stderr bytes.Buffer
	a := newApp(streams{in: bytes.NewReader(nil), out: &stdout, err: &stderr})
	a.server = transport.NewMemoryTransport(clientSide)
	code := a.run(context.Background(), append(append([]string{"call", "--era", "legacy"}, args...), "flood", "--", "memory"))
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// shownEntries are the log lines of flood n that stderr shows.
func shownEntries(flood, n int, jsonOut bool) string {
	var b strings.Builder
	for j := range n {
		if jsonOut {
			fmt.Fprintf(&b, `{"level":"info","logger":"","data":"flood %d entry %d"}`+"\n", flood, j)
		} else {
			fmt.Fprintf(&b, "[info] flood %d entry %d\n", flood, j)
		}
	}
	return b.String()
}

func TestDropSummaryAfterLogFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two floods of 2000, 15 s apart: the summary at 10 s names the
		// first's 1900 drops, the one at the end the second's.
		r := runFlood(t, &floodServer{floods: []int{2000, 2000}, pause: 15 * time.Second})
		require.Equal(t, exitOK, r.code, r.String())
		assert.Equal(t, "done\n", r.stdout)
		assert.Equal(t, shownEntries(1, 100, false)+
			"conduit: dropped 1900 server log entries over the rate limit\n"+
			shownEntries(2, 100, false)+
			"conduit: dropped 1900 server log entries over the rate limit\n", r.stderr)
	})
	synctest.Test(t, func(t *testing.T) {
		r := runFlood(t, &floodServer{floods: []int{2000, 2000}, pause: 15 * time.Second}, "--json")
		require.Equal(t, exitOK, r.code, r.String())
		assert.Equal(t, shownEntries(1, 100, true)+
			`{"dropped":{"logs_rate_limited":1900},"final":false}`+"\n"+
			shownEntries(2, 100, true)+
			`{"dropped":{"logs_rate_limited":1900},"final":true}`+"\n", r.stderr)
	})
	synctest.Test(t, func(t *testing.T) {
		// Within the burst: nothing dropped, nothing said.
		r := runFlood(t, &floodServer{floods: []int{100}})
		require.Equal(t, exitOK, r.code, r.String())
		assert.Equal(t, shownEntries(1, 100, false), r.stderr)
	})
}

// The summaries say what Stats counts: the same client, its counters read
// after the last summary.
func TestDropSummaryMatchesStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clientSide, serverSide := transport.NewMemoryPair()
		srv := &floodServer{conn: serverSide, floods: []int{2000}}
		go srv.serve()
		defer serverSide.Close()
		var stderr lockedBuffer
		a := newApp(streams{err: &stderr})
		n := &notifier{w: &stderr, logger: newLogger(&stderr, 0, false)}
		audit := &auditor{logger: n.logger}
		client, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{
			Era: conduit.EraLegacy, Handlers: n.handlers(), Audit: audit.record, Logger: n.logger,
		})
		require.NoError(t, err)
		finish := a.watchDrops(clientDrops(client))
		_, err = client.CallTool(context.Background(), "flood", nil)
		require.NoError(t, err)
		// A malformed message too, then the client ends.
		require.NoError(t, serverSide.Write(context.Background(), []byte("garbage")))
		synctest.Wait()
		require.NoError(t, client.Close())
		finish()
		st := client.Stats()
		assert.EqualValues(t, 1900, st.LogsDropped)
		assert.EqualValues(t, 1, st.Malformed)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		assert.Equal(t, []string{
			fmt.Sprintf("conduit: dropped %d server log entries over the rate limit", st.LogsDropped),
			fmt.Sprintf("conduit: dropped %d malformed message from the server", st.Malformed),
		}, lines[len(lines)-2:])
	})
}
