package actors_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// entries records the data of the log entries delivered.
type entries struct {
	mu  sync.Mutex
	got []string
}

func (e *entries) HandleLog(_ context.Context, _ conduit.NotificationContext, m *conduit.LoggingMessage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, fmt.Sprint(m.Data))
}

func (e *entries) list() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}

// What a server sent before a call's result has reached the log handler
// when the call returns, over HTTP in both eras (the result used to
// overtake the entries, which a Close right after discarded: 16 runs of
// 60 modern, 3 legacy), so a caller that closes on return loses none.
func TestLogsSentBeforeTheResultAreHandledBeforeTheCallReturnsHTTP(t *testing.T) {
	url := testpeer.LogsThenResult(t)
	want := []string{"entry 1", "entry 2", "entry 3"}
	for _, e := range []conduit.Era{conduit.EraModern, conduit.EraLegacy} {
		t.Run(string(e), func(t *testing.T) {
			for i := range 60 {
				h := &entries{}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				c, err := conduit.Connect(ctx, &transport.HTTP{URL: url}, conduit.Options{Era: e, Handlers: conduit.Handlers{Log: h.HandleLog}})
				require.NoError(t, err)
				res, err := c.CallTool(ctx, "t", map[string]any{})
				got := h.list()
				require.NoError(t, c.Close())
				cancel()
				require.NoError(t, err)
				require.Equal(t, "done", res.Content[0].Text)
				require.Equal(t, want, got, "run %d: the entries before the result, when the call returned", i)
				require.Zero(t, c.Stats().NotificationsDiscarded, "run %d", i)
			}
		})
	}
}

// The same over a stream transport (the in-memory pair, one message per
// write as stdio's lines), in both eras: three entries then the result,
// written at once.
func TestLogsSentBeforeTheResultAreHandledBeforeTheCallReturnsStream(t *testing.T) {
	want := []string{"entry 1", "entry 2", "entry 3"}
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			for i := range 60 {
				h := &entries{}
				c, srv := e.connect(t, conduit.Options{Handlers: conduit.Handlers{Log: h.HandleLog}})
				d := callAsync(c, "t")
				m := srv.next()
				for j := 1; j <= 3; j++ {
					srv.sendRaw(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"entry %d"}}`, j))
				}
				srv.reply(m["id"], map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "done"}}})
				r := <-d
				got := h.list()
				require.NoError(t, r.err)
				require.Equal(t, "done", r.res.Content[0].Text)
				require.Equal(t, want, got, "run %d: the entries before the result, when the call returned", i)
			}
		})
	}
}

// A notification callback that makes a call with its ctx gets the answer
// though a notification came in behind it before the answer: that one
// waits for the callback, so the call does not wait for it.
func TestACallFromANotificationCallbackDoesNotWaitForItself(t *testing.T) {
	var client atomic.Pointer[conduit.Client]
	listed := make(chan error, 1)
	h := &entries{}
	onNote := func(ctx context.Context, _ conduit.NotificationContext, n *conduit.Notification) {
		if n.Method == "notifications/tools/list_changed" {
			_, err := client.Load().ListTools(ctx)
			listed <- err
		}
	}
	c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{Notification: onNote, Log: h.HandleLog}}, "2025-11-25")
	client.Store(c)
	srv.notify("notifications/tools/list_changed", nil)
	m := srv.next()
	require.Equal(t, "tools/list", m["method"])
	srv.notify("notifications/message", map[string]any{"level": "info", "data": "behind the callback"})
	srv.reply(m["id"], map[string]any{"tools": []any{}})
	select {
	case err := <-listed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second): // a guard against a hang, not a wait
		t.Fatal("the call from the callback waited for the notifications behind that callback")
	}
	require.Eventually(t, func() bool { return len(h.list()) == 1 }, 30*time.Second, time.Millisecond)
}

// A call whose answer waits for a log callback still running returns that
// answer when the client closes: the close cancels the callbacks' ctx, and
// every entry is handled (with that ctx) or discarded and counted.
func TestACallWaitingForTheCallbacksReturnsItsAnswerAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var handled atomic.Int64
		h := func(ctx context.Context, _ conduit.NotificationContext, _ *conduit.LoggingMessage) {
			<-ctx.Done()
			handled.Add(1)
		}
		c, srv := connect(t, conduit.Options{Handlers: conduit.Handlers{Log: h}}, "2025-11-25")
		d := callAsync(c, "t")
		m := srv.next()
		for j := 1; j <= 3; j++ {
			srv.notify("notifications/message", map[string]any{"level": "info", "data": j})
		}
		srv.reply(m["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}})
		synctest.Wait()
		select {
		case <-d:
			t.Fatal("the call returned before the entries sent before its answer were handled")
		default:
		}
		require.NoError(t, c.Close())
		r := <-d
		require.NoError(t, r.err)
		require.Equal(t, "done", r.res.Content[0].Text)
		// Close does not wait for a callback it cancelled: let the one
		// that was running see its ctx end before counting.
		synctest.Wait()
		require.EqualValues(t, 3, handled.Load()+c.Stats().NotificationsDiscarded, "handled or discarded")
	})
}
