package actors

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/messages"
)

// The rate limit and the cap are checked before an entry is sanitised: an
// entry that finds 1 000 waiting is dropped as such, even one the
// sanitiser would reject, and costs no sanitising.
func TestLogEntriesBeyondTheCapAreDroppedUnsanitised(t *testing.T) {
	sh := &shared{ctx: context.Background(), rt: &Runtime{cfg: Config{Logger: slog.New(slog.DiscardHandler),
		Handlers: messages.Handlers{Log: func(context.Context, messages.NotificationContext, *messages.LoggingMessage) {}}}}}
	m := newMailbox(sh, messages.NotificationContext{}, rate.Inf, 1, 0)
	m.queue.running = true // a worker holds one entry; none is started here
	malformed := &enqueue{method: messages.MethodLog, params: []byte(`{"level":`)}

	m.admit(malformed)
	assert.EqualValues(t, 1, sh.count().malformed.Load(), "malformed, with room in the queue")

	m.queue.items = make([]item, MaxWaitingNotifications)
	m.admit(malformed)
	assert.EqualValues(t, 1, sh.count().notificationsDropped.Load(), "dropped")
	assert.EqualValues(t, 1, sh.count().malformed.Load(), "malformed: the full queue's entry was not sanitised")
	assert.Len(t, m.queue.items, MaxWaitingNotifications)
}

// An entry the worker has claimed when the queue and then its gate close
// (the teardown's order) is not delivered, and is counted as discarded:
// close counts only what was not claimed.
func TestAnEntryClaimedAsTheQueueClosesIsCountedDiscarded(t *testing.T) {
	delivered := 0
	sh := &shared{ctx: context.Background(), rt: &Runtime{cfg: Config{Logger: slog.New(slog.DiscardHandler),
		Handlers: messages.Handlers{Log: func(context.Context, messages.NotificationContext, *messages.LoggingMessage) { delivered++ }}}}}
	m := newMailbox(sh, messages.NotificationContext{}, rate.Inf, 1, 0)
	q := m.queue
	q.claimed = func() {
		q.close()
		q.gate.Close()
	}
	m.admit(&enqueue{method: messages.MethodLog, params: []byte(`{"level":"info","data":"one"}`)})
	<-q.exited
	assert.Zero(t, delivered)
	assert.EqualValues(t, 1, sh.count().notificationsDiscarded.Load(), "neither delivered nor counted")
}
