package actors

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/supervisor"
)

// MaxWaitingNotifications is how many notifications may wait for the
// handler; newer ones are dropped and counted. The one being handled does
// not count toward it.
const MaxWaitingNotifications = 1000

// mailbox is the notification mailbox: HandleNotification and HandleLog run
// one at a time, in arrival order, in one goroutine it owns. Each delivery
// is acknowledged before the next, so at most one item is in the worker's
// hands and the rest wait in an explicit queue with a hard cap (the
// library's bounded mailboxes spin or drop the oldest). Log entries are rate
// limited and sanitised before they are queued.
//
// At close the worker runs nothing more: what still waits is discarded
// and counted, and a callback still running (one that ignores its ctx) is
// abandoned through gate, counted until it returns; teardown never waits
// for it, so a callback may itself call Close.
type mailbox struct {
	shared  *shared
	nc      messages.NotificationContext // Era is filled in at each delivery
	limiter *rate.Limiter
	work    chan item // capacity 1; closed in Stopping
	gate    *supervisor.Gate
	exited  chan struct{}
	queue   []item
	busy    bool
}

type item struct {
	log   *messages.LoggingMessage
	notif *messages.Notification
}

func newMailbox(s *shared, nc messages.NotificationContext, limit rate.Limit, burst int, gate *supervisor.Gate, exited chan struct{}) *mailbox {
	return &mailbox{shared: s, nc: nc, limiter: rate.NewLimiter(limit, burst), work: make(chan item, 1), gate: gate, exited: exited}
}

func (m *mailbox) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		self, root := ctx.Self(), ctx.ActorSystem().Root
		go m.run(func() { root.Send(self, &delivered{}) })
	case *enqueue:
		it, ok := m.item(msg)
		if !ok {
			return
		}
		switch {
		case !m.busy:
			m.busy = true
			m.work <- it
		case len(m.queue) >= MaxWaitingNotifications:
			m.shared.counters.notificationsDropped.Add(1)
		default:
			m.queue = append(m.queue, it)
		}
	case *delivered:
		if len(m.queue) == 0 {
			m.busy = false
			return
		}
		it := m.queue[0]
		m.queue[0] = item{}
		m.queue = m.queue[1:]
		m.work <- it
	case *actor.Stopping:
		discarded := len(m.queue)
		m.queue = nil
		select {
		case <-m.work: // handed over but not yet taken
			discarded++
		default:
		}
		close(m.work)
		m.shared.counters.notificationsDiscarded.Add(int64(discarded))
	}
}

// item turns a notification into a queue item, or reports false when it is
// rate limited, malformed, or nobody listens for it.
func (m *mailbox) item(msg *enqueue) (item, bool) {
	h := &m.shared.handlers
	if msg.method == messages.MethodLog {
		if h.Log == nil {
			return item{}, false
		}
		if !m.limiter.Allow() {
			m.shared.counters.logsDropped.Add(1)
			return item{}, false
		}
		e, err := sanitize.Log(msg.params)
		if err != nil {
			m.shared.counters.malformed.Add(1)
			m.shared.logger.Warn("malformed server log entry dropped", "err", err)
			return item{}, false
		}
		return item{log: &messages.LoggingMessage{Level: e.Level, Logger: e.Logger, Data: e.Data}}, true
	}
	if h.Notification == nil {
		return item{}, false
	}
	return item{notif: &messages.Notification{Method: msg.method, Params: msg.params}}, true
}

// run is the worker goroutine: one callback at a time, each acknowledged.
// It exits once the gate is closed: at once when no callback runs, else as
// soon as the abandoned one returns.
func (m *mailbox) run(ack func()) {
	defer close(m.exited)
	for it := range m.work {
		if !m.gate.Enter() {
			m.shared.counters.notificationsDiscarded.Add(1)
			return
		}
		m.deliver(m.shared.ctx, it)
		if !m.gate.Leave() {
			return
		}
		ack()
	}
}

func (m *mailbox) deliver(ctx context.Context, it item) {
	defer func() {
		if v := recover(); v != nil {
			m.shared.counters.notificationPanics.Add(1)
			m.shared.logger.Error("notification handler panicked; skipped", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	nc := m.nc
	nc.Era = m.shared.session.Load().era
	if it.log != nil {
		m.shared.handlers.Log(ctx, nc, it.log)
		return
	}
	m.shared.handlers.Notification(ctx, nc, it.notif)
}
