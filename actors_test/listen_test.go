package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
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

const subID = "io.modelcontextprotocol/subscriptionId"

// listenCaps are the capabilities of a modern fake that offers every
// change: list changes of the three lists, and resource subscriptions.
var listenCaps = map[string]any{
	"tools":     map[string]any{"listChanged": true},
	"prompts":   map[string]any{"listChanged": true},
	"resources": map[string]any{"listChanged": true, "subscribe": true},
}

// startListening connects to a modern fake with caps; Connect goes on in
// the background (it waits for the listen stream's acknowledgement) and
// its client comes on the channel.
func startListening(t *testing.T, conn transport.Conn, srvConn transport.Conn, opts conduit.Options, caps map[string]any) (<-chan *conduit.Client, *fakeServer) {
	t.Helper()
	srv := newFakeServer(t, srvConn)
	ch := make(chan *conduit.Client, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(conn), opts)
		assert.NoError(t, err)
		ch <- c
	}()
	probe := srv.next()
	require.Equal(t, "server/discover", probe["method"])
	res := map[string]any{}
	for k, v := range discoverResult {
		res[k] = v
	}
	res["capabilities"] = caps
	srv.reply(probe["id"], res)
	t.Cleanup(func() {
		select {
		case c := <-ch:
			if c != nil {
				_ = c.Close()
			}
		default:
		}
		_ = srvConn.Close()
		for range srv.in {
		}
	})
	return ch, srv
}

// ack acknowledges the listen request m with notifications.
func (s *fakeServer) ack(m map[string]any, notifications map[string]any) {
	s.t.Helper()
	s.notify("notifications/subscriptions/acknowledged", map[string]any{"notifications": notifications, "_meta": map[string]any{subID: m["id"]}})
}

// nextListen reads the next frame and checks it is a subscriptions/listen.
func (s *fakeServer) nextListen() map[string]any {
	s.t.Helper()
	m := s.next()
	require.Equal(s.t, "subscriptions/listen", m["method"], "frame: %v", m)
	return m
}

func asked(m map[string]any) any { return m["params"].(map[string]any)["notifications"] }

// hooks records the typed change hooks' calls.
type hooks struct {
	mu  sync.Mutex
	got []string
}

func (h *hooks) add(s string) { h.mu.Lock(); h.got = append(h.got, s); h.mu.Unlock() }
func (h *hooks) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

func (h *hooks) handlers() conduit.Handlers {
	return conduit.Handlers{
		ToolsChanged: func(_ context.Context, _ conduit.NotificationContext, c *conduit.ToolsChange) {
			h.add("tools")
		},
		PromptsChanged: func(_ context.Context, _ conduit.NotificationContext, c *conduit.PromptsChange) {
			h.add("prompts")
		},
		ResourceUpdated: func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
			h.add("updated " + u.URI)
		},
	}
}

// The stream asks exactly the kinds hooked and offered; only what names
// it (subscriptionId) and was acknowledged passes; the rest is dropped and
// counted.
func TestListenPassesOnlyWhatTheStreamAcknowledged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		cs, ss := transport.NewMemoryPair()
		caps := map[string]any{"tools": map[string]any{"listChanged": true}, "prompts": map[string]any{}, "resources": map[string]any{"listChanged": true}}
		ch, srv := startListening(t, cs, ss, conduit.Options{Handlers: h.handlers()}, caps)
		m := srv.nextListen()
		// PromptsChanged is hooked but not offered; resources are offered
		// but not hooked.
		assert.Equal(t, map[string]any{"toolsListChanged": true}, asked(m))
		assert.Equal(t, "2026-07-28", meta(t, m)["io.modelcontextprotocol/protocolVersion"])
		// The server acknowledges more than asked: only what was asked is kept.
		srv.ack(m, map[string]any{"toolsListChanged": true, "promptsListChanged": true})
		c := <-ch
		require.NotNil(t, c)
		acked, open := c.Listening()
		assert.True(t, open)
		assert.Equal(t, conduit.Subscriptions{ToolsListChanged: true}, acked)

		tag := map[string]any{subID: m["id"]}
		srv.notify("notifications/tools/list_changed", map[string]any{"_meta": tag})
		synctest.Wait() // handled: the next is no repeat of one waiting
		srv.notify("notifications/tools/list_changed", map[string]any{})
		srv.notify("notifications/tools/list_changed", map[string]any{"_meta": map[string]any{subID: "other"}})
		srv.notify("notifications/prompts/list_changed", map[string]any{"_meta": tag})
		srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///x", "_meta": tag})
		srv.ack(m, map[string]any{"toolsListChanged": true})
		srv.notify("notifications/tools/list_changed", map[string]any{"_meta": tag})
		synctest.Wait()
		assert.Equal(t, []string{"tools", "tools"}, h.list())
		assert.EqualValues(t, 5, c.Stats().Unsubscribed)
		assert.Zero(t, c.Stats().NotificationsDropped)
	})
}

// A server that never acknowledges: Connect returns after the request
// timeout with the stream failed, logged, cancelled, and not retried.
func TestListenNeverAcknowledgedFailsAfterTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		logs := &slogRecorder{}
		cs, ss := transport.NewMemoryPair()
		start := time.Now()
		ch, srv := startListening(t, cs, ss, conduit.Options{Handlers: h.handlers(), Timeout: 5 * time.Second, Logger: slog.New(logs)}, listenCaps)
		m := srv.nextListen()
		c := <-ch
		require.NotNil(t, c)
		assert.Equal(t, 5*time.Second, time.Since(start))
		_, open := c.Listening()
		assert.False(t, open)
		cancel := srv.next()
		assert.Equal(t, "notifications/cancelled", cancel["method"])
		assert.Equal(t, m["id"], cancel["params"].(map[string]any)["requestId"])
		rec := logs.find("subscriptions/listen failed: change notifications will not arrive")
		require.NotNil(t, rec)
		assert.Contains(t, rec["err"], "the server did not acknowledge subscriptions/listen (notifications/subscriptions/acknowledged) within 5s")
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Empty(t, srv.in, "not retried")
	})
}

// A graceful end (a result, or on stdio notifications/cancelled from the
// server) is not followed by a reconnect.
func TestListenGracefulEndIsNotReopened(t *testing.T) {
	for _, how := range []string{"result", "cancelled"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &hooks{}
				cs, ss := transport.NewMemoryPair()
				ch, srv := startListening(t, cs, ss, conduit.Options{Handlers: h.handlers()}, listenCaps)
				m := srv.nextListen()
				srv.ack(m, map[string]any{"toolsListChanged": true, "promptsListChanged": true})
				c := <-ch
				if how == "result" {
					srv.reply(m["id"], map[string]any{"resultType": "complete", "_meta": map[string]any{subID: m["id"]}})
				} else {
					srv.notify("notifications/cancelled", map[string]any{"requestId": m["id"]})
				}
				time.Sleep(10 * time.Minute)
				synctest.Wait()
				assert.Empty(t, srv.in, "no reconnect")
				_, open := c.Listening()
				assert.False(t, open)
				assert.Zero(t, c.Stats().UnknownResponses)
			})
		})
	}
}

// failingConn is a client connection whose test can fail one request as
// a transport does when its stream ends early (Message.Err).
type failingConn struct {
	transport.Conn
	fail chan transport.Message
	msgs chan transport.Message
	done chan struct{}
	once sync.Once
}

func newFailingConn(c transport.Conn) *failingConn {
	f := &failingConn{Conn: c, fail: make(chan transport.Message, 4), msgs: make(chan transport.Message), done: make(chan struct{})}
	go func() {
		defer close(f.msgs)
		for {
			m, err := c.Read(context.Background())
			if err != nil {
				return
			}
			select {
			case f.msgs <- m:
			case <-f.done:
				return
			}
		}
	}()
	return f
}

func (f *failingConn) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-f.fail:
		return m, nil
	case m, ok := <-f.msgs:
		if !ok {
			return transport.Message{}, transport.ErrClosed
		}
		return m, nil
	}
}

func (f *failingConn) Close() error {
	f.once.Do(func() { close(f.done) })
	return f.Conn.Close()
}

// A stream that ends abruptly is re-opened after 1 s, then 2 s, …; an
// acknowledgement starts the backoff over.
func TestListenReopenedWithBackoffAfterAnAbruptEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		cs, ss := transport.NewMemoryPair()
		fc := newFailingConn(cs)
		ch, srv := startListening(t, fc, ss, conduit.Options{Handlers: h.handlers()}, listenCaps)
		m := srv.nextListen()
		srv.ack(m, map[string]any{"toolsListChanged": true})
		c := <-ch
		cut := func(m map[string]any) {
			raw, _ := json.Marshal(m["id"])
			fc.fail <- transport.Message{Related: string(raw), Err: errors.New("stream ended early")}
		}
		var waits []time.Duration
		for range 3 {
			cut(m)
			at := time.Now()
			m = srv.nextListen()
			waits = append(waits, time.Since(at))
		}
		assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, waits)
		srv.ack(m, map[string]any{"toolsListChanged": true})
		synctest.Wait()
		_, open := c.Listening()
		assert.True(t, open)
		cut(m)
		at := time.Now()
		m = srv.nextListen()
		assert.Equal(t, time.Second, time.Since(at), "the acknowledgement started the backoff over")
		srv.ack(m, map[string]any{"toolsListChanged": true})
		srv.notify("notifications/tools/list_changed", map[string]any{"_meta": map[string]any{subID: m["id"]}})
		synctest.Wait()
		assert.Equal(t, []string{"tools"}, h.list())
	})
}

// Close ends the stream: on stdio with notifications/cancelled for its id.
func TestListenEndedAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, ss := transport.NewMemoryPair()
		ch, srv := startListening(t, cs, ss, conduit.Options{Handlers: (&hooks{}).handlers()}, listenCaps)
		m := srv.nextListen()
		srv.ack(m, map[string]any{"toolsListChanged": true})
		c := <-ch
		require.NoError(t, c.Close())
		cancel := srv.next()
		assert.Equal(t, "notifications/cancelled", cancel["method"])
		assert.Equal(t, m["id"], cancel["params"].(map[string]any)["requestId"])
	})
}

// Subscribe and Unsubscribe re-open the one stream with the new set of
// resources, once the server has answered the stream they end (or after
// a second when it does not).
func TestModernSubscribeReopensTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		cs, ss := transport.NewMemoryPair()
		ch, srv := startListening(t, cs, ss, conduit.Options{Handlers: h.handlers()}, listenCaps)
		m := srv.nextListen()
		srv.ack(m, map[string]any{"toolsListChanged": true, "promptsListChanged": true})
		c := <-ch
		done := make(chan error, 1)
		go func() { done <- c.Subscribe(context.Background(), "file:///a") }()
		cancel := srv.next()
		assert.Equal(t, "notifications/cancelled", cancel["method"])
		assert.Equal(t, m["id"], cancel["params"].(map[string]any)["requestId"])
		srv.reply(m["id"], map[string]any{"resultType": "complete"})
		m2 := srv.nextListen()
		assert.Equal(t, map[string]any{"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": []any{"file:///a"}}, asked(m2))
		srv.notify("notifications/tools/list_changed", map[string]any{"_meta": map[string]any{subID: m["id"]}}) // the old stream's: dropped, uncounted
		srv.ack(m2, asked(m2).(map[string]any))
		require.NoError(t, <-done)
		srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///a", "_meta": map[string]any{subID: m2["id"]}})
		srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///b", "_meta": map[string]any{subID: m2["id"]}})
		synctest.Wait()
		assert.Equal(t, []string{"updated file:///a"}, h.list())
		assert.EqualValues(t, 1, c.Stats().Unsubscribed)

		go func() { done <- c.Unsubscribe(context.Background(), "file:///a") }()
		assert.Equal(t, "notifications/cancelled", srv.next()["method"])
		at := time.Now()
		m3 := srv.nextListen() // the server never answered the ended stream
		assert.Equal(t, time.Second, time.Since(at))
		assert.Equal(t, map[string]any{"toolsListChanged": true, "promptsListChanged": true}, asked(m3))
		srv.ack(m3, asked(m3).(map[string]any))
		require.NoError(t, <-done)

		// A server that acknowledges the stream without the resource.
		go func() { done <- c.Subscribe(context.Background(), "file:///c") }()
		srv.next()
		srv.reply(m3["id"], map[string]any{"resultType": "complete"})
		m4 := srv.nextListen()
		srv.ack(m4, map[string]any{"toolsListChanged": true})
		var ce *conduit.Error
		require.ErrorAs(t, <-done, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Equal(t, "conduit: subscriptions/listen: protocol: the server did not acknowledge the subscription to file:///c", ce.Error())
	})
}

// Legacy: Subscribe and Unsubscribe are resources/subscribe and
// resources/unsubscribe, and the updates reach the typed hook.
func TestLegacySubscribe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &hooks{}
		c, srv := connect(t, conduit.Options{Handlers: h.handlers()}, "2025-11-25")
		done := make(chan error, 1)
		go func() { done <- c.Subscribe(context.Background(), "file:///a") }()
		m := srv.next()
		assert.Equal(t, "resources/subscribe", m["method"])
		assert.Equal(t, map[string]any{"uri": "file:///a"}, m["params"])
		srv.reply(m["id"], map[string]any{})
		require.NoError(t, <-done)
		srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///a"})
		srv.notify("notifications/resources/updated", map[string]any{})
		synctest.Wait()
		assert.Equal(t, []string{"updated file:///a"}, h.list())
		assert.EqualValues(t, 1, c.Stats().Malformed)
		go func() { done <- c.Unsubscribe(context.Background(), "file:///a") }()
		m = srv.next()
		assert.Equal(t, "resources/unsubscribe", m["method"])
		srv.reply(m["id"], map[string]any{})
		require.NoError(t, <-done)
		_, open := c.Listening()
		assert.False(t, open)
	})
}

// With RefreshLists the hook runs once the notifications stop for the
// delay, with the fresh list and how many notifications it covers.
func TestListRefreshIsDebounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan *conduit.ToolsChange, 4)
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{
			RefreshLists: true,
			ToolsChanged: func(_ context.Context, _ conduit.NotificationContext, ch *conduit.ToolsChange) { got <- ch },
		}}, "2025-11-25")
		start := time.Now()
		for range 3 {
			srv.notify("notifications/tools/list_changed", map[string]any{})
			time.Sleep(100 * time.Millisecond)
		}
		m := srv.next()
		assert.Equal(t, "tools/list", m["method"])
		assert.Equal(t, 200*time.Millisecond+conduit.DefaultRefreshDelay, time.Since(start))
		srv.reply(m["id"], map[string]any{"tools": []any{map[string]any{"name": "t1", "inputSchema": map[string]any{"type": "object"}}}})
		ch := <-got
		assert.True(t, ch.Refreshed)
		assert.Equal(t, 3, ch.Notifications)
		require.Len(t, ch.Items, 1)
		assert.Equal(t, "t1", ch.Items[0].Name)

		srv.notify("notifications/tools/list_changed", map[string]any{})
		m = srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32603, "message": "broke"}})
		ch = <-got
		assert.False(t, ch.Refreshed)
		assert.Error(t, ch.Err)
		assert.Equal(t, 1, ch.Notifications)
		require.NoError(t, c.Close())
	})
}

// A stream that floods holds one waiting entry per list (and per
// resource): the repeats are dropped and counted; distinct updates are
// bounded by the 1 000 waiting entries.
func TestListenFloodIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		var mu sync.Mutex
		var got []string
		add := func(s string) { mu.Lock(); got = append(got, s); mu.Unlock() }
		h := conduit.Handlers{
			ToolsChanged: func(context.Context, conduit.NotificationContext, *conduit.ToolsChange) { <-hold; add("tools") },
			ResourceUpdated: func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
				add(u.URI)
			},
		}
		c, srv := connect(t, conduit.Options{Handlers: h}, "2025-11-25")
		srv.notify("notifications/tools/list_changed", map[string]any{})
		synctest.Wait() // in the hook's hands
		for range 4999 {
			srv.notify("notifications/tools/list_changed", map[string]any{})
		}
		for range 10 {
			srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///same"})
		}
		for i := range 1500 {
			srv.notify("notifications/resources/updated", map[string]any{"uri": "file:///" + strconv.Itoa(i)})
		}
		synctest.Wait()
		// One in the hook's hands, one tools waiting, one file:///same,
		// 998 distinct updates: the rest dropped.
		assert.EqualValues(t, 4999-1+9+502, c.Stats().NotificationsDropped)
		close(hold)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Len(t, got, 2+1+998)
		assert.Equal(t, []string{"tools", "tools", "file:///same"}, got[:3])
	})
}

// A hostile modern HTTP server's listen stream: an event over the size
// limit fails the stream as any message is refused, and the stream is
// re-opened after the backoff; Close closes the stream.
func TestHTTPListenStreamOversizeEventAndClose(t *testing.T) {
	var mu sync.Mutex
	listens := 0
	closed := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch m.Method {
		case "server/discover":
			w.Header().Set("Content-Type", "application/json")
			res := map[string]any{}
			for k, v := range discoverResult {
				res[k] = v
			}
			res["capabilities"] = listenCaps
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			_, _ = w.Write(b)
		case "subscriptions/listen":
			mu.Lock()
			listens++
			n := listens
			mu.Unlock()
			assert.Equal(t, "subscriptions/listen", r.Header.Get("Mcp-Method"))
			w.Header().Set("Content-Type", "text/event-stream")
			event := func(v any) {
				b, _ := json.Marshal(v)
				_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
				w.(http.Flusher).Flush()
			}
			tag := map[string]any{subID: m.ID}
			event(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": map[string]any{"notifications": map[string]any{"toolsListChanged": true}, "_meta": tag}})
			if n == 1 {
				event(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": map[string]any{"_meta": tag, "pad": strings.Repeat("x", 4096)}})
				<-r.Context().Done()
				return
			}
			event(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": map[string]any{"_meta": tag}})
			<-r.Context().Done()
			closed <- struct{}{}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	h := &hooks{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: srv.URL, MaxEventBytes: 1024}, conduit.Options{Handlers: h.handlers()})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(h.list()) == 1 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	assert.Equal(t, 2, listens, "re-opened once")
	mu.Unlock()
	_, open := c.Listening()
	assert.True(t, open)
	require.NoError(t, c.Close())
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("Close did not close the listen stream")
	}
}

// A modern list result is kept for its ttlMs, by method and cursor, and
// then asked again; one without ttlMs (or legacy) is never kept.
func TestCachedListsExpireWithTheirTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{})
		list := func(ttl any) {
			done := make(chan error, 1)
			go func() { _, err := c.ListTools(context.Background()); done <- err }()
			if ttl != nil {
				m := srv.next()
				assert.Equal(t, "tools/list", m["method"])
				srv.reply(m["id"], map[string]any{"resultType": "complete", "tools": []any{}, "ttlMs": ttl, "cacheScope": "private"})
			}
			require.NoError(t, <-done)
		}
		list(1000)
		time.Sleep(999 * time.Millisecond)
		list(nil) // from the cache
		assert.EqualValues(t, 1, c.Stats().CacheHits)
		time.Sleep(time.Millisecond)
		list(0) // expired: asked again; ttlMs 0 is not kept
		list(1000)
		list(nil)
		assert.EqualValues(t, 2, c.Stats().CacheHits)
		synctest.Wait()
		assert.Empty(t, srv.in)
	})
}
