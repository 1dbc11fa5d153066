package actors_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// notes records notifications and log entries in the order delivered, and
// can hold the first delivery until released.
type notes struct {
	mu      sync.Mutex
	got     []string
	hold    chan struct{} // when set, the first delivery waits on it
	once    sync.Once
	panicOn string
}

func (n *notes) wait() {
	if n.hold != nil {
		n.once.Do(func() { <-n.hold })
	}
}

func (n *notes) add(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, s)
}

func (n *notes) list() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

func (n *notes) HandleNotification(_ context.Context, nc conduit.NotificationContext, m *conduit.Notification) {
	n.wait()
	if m.Method == n.panicOn {
		panic("notification handler bug")
	}
	n.add(m.Method + " " + string(m.Params))
}

func (n *notes) HandleLog(_ context.Context, nc conduit.NotificationContext, e *conduit.LoggingMessage) {
	n.wait()
	n.add(fmt.Sprintf("log %s %s %v", e.Level, e.Logger, e.Data))
}

func TestNotificationsInArrivalOrderAndPanicsSkipped(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		n := &notes{panicOn: "notifications/acme/list_changed"}
		c, srv := e.connect(t, conduit.Options{Handler: n})
		srv.notify("notifications/acme/updated", map[string]any{"uri": "a"})
		srv.notify("notifications/message", map[string]any{"level": "warning", "logger": "idx", "data": "one"})
		srv.notify("notifications/acme/list_changed", map[string]any{})
		srv.notify("notifications/progress", map[string]any{"progressToken": 1, "progress": 2})
		srv.notify("notifications/message", map[string]any{"level": "bogus", "data": "two", "extra": "dropped"})
		synctest.Wait()
		assert.Equal(t, []string{
			`notifications/acme/updated {"uri":"a"}`,
			"log warning idx one",
			`notifications/progress {"progress":2,"progressToken":1}`,
			"log info  two",
		}, n.list())
		assert.EqualValues(t, 1, c.Stats().NotificationHandlerPanics)
	})
}

func TestNotificationContextCarriesClientServerAndEra(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		got := make(chan conduit.NotificationContext, 2)
		h := notifyFunc(func(nc conduit.NotificationContext) { got <- nc })
		_, srv := e.connect(t, conduit.Options{Name: "acme", ServerID: "s9", Handler: h})
		srv.notify("notifications/acme/list_changed", map[string]any{})
		srv.notify("notifications/message", map[string]any{"level": "info", "data": "x"})
		want := conduit.NotificationContext{Client: "acme", ServerID: "s9", Era: e.era}
		assert.Equal(t, want, <-got, "notification")
		assert.Equal(t, want, <-got, "log")
	})
}

// notifyFunc receives notifications and log entries alike.
type notifyFunc func(conduit.NotificationContext)

func (f notifyFunc) HandleNotification(_ context.Context, nc conduit.NotificationContext, _ *conduit.Notification) {
	f(nc)
}

func (f notifyFunc) HandleLog(_ context.Context, nc conduit.NotificationContext, _ *conduit.LoggingMessage) {
	f(nc)
}

func TestBeyondThousandWaitingNotificationsAreDroppedAndCounted(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		n := &notes{hold: make(chan struct{})}
		c, srv := e.connect(t, conduit.Options{Handler: n})
		// The first is taken by the handler (and held); 1000 more wait;
		// the next 5 are dropped.
		for i := range 1006 {
			srv.notify("notifications/acme/updated", map[string]any{"i": i})
		}
		synctest.Wait()
		assert.EqualValues(t, 5, c.Stats().NotificationsDropped)
		close(n.hold)
		synctest.Wait()
		got := n.list()
		require.Len(t, got, 1001)
		assert.Equal(t, `notifications/acme/updated {"i":0}`, got[0])
		assert.Equal(t, `notifications/acme/updated {"i":1000}`, got[1000])
	})
}

func TestServerLogsAreRateLimited(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		n := &notes{}
		c, srv := e.connect(t, conduit.Options{Handler: n})
		for i := range 150 {
			srv.notify("notifications/message", map[string]any{"level": "info", "data": i})
		}
		synctest.Wait()
		assert.Len(t, n.list(), 100) // the burst
		assert.EqualValues(t, 50, c.Stats().LogsDropped)
		time.Sleep(time.Second) // 50 more tokens
		for i := range 60 {
			srv.notify("notifications/message", map[string]any{"level": "info", "data": i})
		}
		synctest.Wait()
		assert.Len(t, n.list(), 150)
		assert.EqualValues(t, 60, c.Stats().LogsDropped)
	})
}

func TestServerLogsAreSanitised(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		n := &notes{}
		_, srv := e.connect(t, conduit.Options{Handler: n})
		srv.notify("notifications/message", map[string]any{"level": "error", "logger": "ev\u202eil\x1b[31m", "data": "a\x1b]0;pwned\x07b\u2028c"})
		synctest.Wait()
		assert.Equal(t, []string{"log error evil ab c"}, n.list())
	})
}

// logFunc receives log entries.
type logFunc func(context.Context, *conduit.LoggingMessage)

func (f logFunc) HandleLog(ctx context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
	f(ctx, e)
}

func TestCloseAbandonsACallbackIgnoringItsContextAndDiscardsTheQueue(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		release := make(chan struct{})
		var calls atomic.Int32
		h := logFunc(func(context.Context, *conduit.LoggingMessage) {
			calls.Add(1)
			<-release // ignores ctx
		})
		c, srv := e.connect(t, conduit.Options{Handler: h})
		for i := range 4 { // the first is taken and held, three wait
			srv.notify("notifications/message", map[string]any{"level": "info", "data": i})
		}
		synctest.Wait()
		require.NoError(t, c.Close())
		assert.EqualValues(t, 1, c.Stats().AbandonedHandlers)
		assert.EqualValues(t, 3, c.Stats().NotificationsDiscarded)
		close(release)
		synctest.Wait()
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
		assert.EqualValues(t, 1, calls.Load(), "nothing is delivered after Close")
	})
}

func TestCloseFromInsideALogCallbackReturns(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		var client atomic.Pointer[conduit.Client]
		entered, closed := make(chan struct{}), make(chan error, 1)
		h := logFunc(func(_ context.Context, m *conduit.LoggingMessage) {
			if m.Level == "emergency" { // a host disconnecting on a fatal server log
				close(entered)
				closed <- client.Load().Close()
			}
		})
		c, srv := e.connect(t, conduit.Options{Handler: h})
		client.Store(c)
		srv.notify("notifications/message", map[string]any{"level": "emergency", "data": "disk on fire"})
		<-entered
		alsoClosed := make(chan error, 1)
		go func() { alsoClosed <- c.Close() }() // and the host, at the same time
		require.NoError(t, <-closed)
		require.NoError(t, <-alsoClosed)
		<-c.Done()
		require.NoError(t, c.Close(), "a second Close")
		synctest.Wait()
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
	})
}

// holdMalformed is a slog.Handler that holds the goroutine logging a
// malformed server log entry (the mailbox actor, admitting it) until
// release is closed.
type holdMalformed struct{ release chan struct{} }

func (h holdMalformed) Enabled(context.Context, slog.Level) bool { return true }
func (h holdMalformed) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h holdMalformed) WithGroup(string) slog.Handler            { return h }
func (h holdMalformed) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "malformed server log entry dropped" {
		<-h.release
	}
	return nil
}

// Notifications the connection handed the mailbox actor and that it had
// not admitted yet when Close came are discarded and counted: none is lost
// uncounted. (The mailbox was stopped with a system message, which
// overtook them.)
func TestCloseCountsNotificationsTheMailboxHadNotAdmitted(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		release := make(chan struct{})
		n := &notes{}
		c, srv := e.connect(t, conduit.Options{Handler: n, Logger: slog.New(holdMalformed{release})})
		// A log entry without params is malformed: the mailbox actor logs
		// it, and is held there while the rest queue up behind it.
		srv.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message"})
		for i := range 5 {
			srv.notify("notifications/acme/updated", map[string]any{"i": i})
		}
		synctest.Wait()
		closeWhileHeld(t, c, release)
		s := c.Stats()
		assert.EqualValues(t, 1, s.Malformed)
		assert.EqualValues(t, 5, int64(len(n.list()))+s.NotificationsDropped+s.NotificationsDiscarded,
			"delivered %d, dropped %d, discarded %d", len(n.list()), s.NotificationsDropped, s.NotificationsDiscarded)
	})
}
