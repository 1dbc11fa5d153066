package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/supervisor"
)

// MaxWaitingNotifications is how many notifications may wait for the
// handler; newer ones are dropped and counted. The one being handled does
// not count toward it, nor toward the bytes that may wait
// (Config.MaxWaitingNotificationBytes).
const MaxWaitingNotifications = 1000

// mailbox is the notification mailbox actor: it admits what the
// connection hands it into a notifQueue, which runs HandleNotification and
// HandleLog one at a time, in arrival order. A log entry passes the rate
// limit and the queue's cap before it is sanitised, so what is dropped
// costs no sanitising.
//
// The actor only admits; delivery never sends it anything. (An
// acknowledgement per delivery would queue behind the whole backlog of
// notifications still in this actor's mailbox, and the queue would sit at
// its cap while the handler idles.) At Stopping the queue is closed: what
// still waits is discarded and counted.
type mailbox struct {
	shared  *shared
	limiter *rate.Limiter
	queue   *notifQueue
}

type item struct {
	log      *messages.LoggingMessage
	progress *messages.Progress
	notif    *messages.Notification
	update   *messages.ResourceUpdate
	post     func(ctx context.Context, nc messages.NotificationContext) // Runtime.Post's
	complete *messages.ElicitationComplete
	// change is the key of a change for a typed hook (the list's method,
	// or the updated resource's uri): one waiting makes another the same
	// redundant.
	change string
	size   int64 // its weight against the queue's byte bound (entrySize)
}

// newMailbox returns the mailbox actor; its queue's exited is closed once
// the queue is closed and its worker, if any, has left (or was abandoned
// through its gate).
// maxBytes bounds the bytes waiting (0: DefaultMaxWaitingNotificationBytes).
func newMailbox(s *shared, nc messages.NotificationContext, limit rate.Limit, burst int, maxBytes int64) *mailbox {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxWaitingNotificationBytes
	}
	q := &notifQueue{shared: s, nc: nc, gate: supervisor.NewGate(&s.abandoned), exited: make(chan struct{}),
		ctx: context.WithValue(s.ctx, callbackOf{}, s), maxBytes: maxBytes}
	return &mailbox{shared: s, limiter: rate.NewLimiter(limit, burst), queue: q}
}

func (m *mailbox) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *enqueue:
		m.admit(msg)
	case *flushNotifications:
		m.queue.flushed(msg.done)
	case *actor.Stopping:
		m.queue.close()
	}
}

// admit queues a notification (one somebody listens for: the connection
// sends no other) unless it is rate limited (log entries), the queue is
// full (1 000 entries, or its bytes), or it is malformed (log entries), in
// that order: the checks that cost least come first. A log entry is
// weighed once sanitised (what the queue keeps of it), a notification as
// it came. Either way its message's bytes of the inbound budget are
// released once admitted: the reader may read on.
func (m *mailbox) admit(msg *enqueue) {
	defer m.shared.budget.release(msg.size)
	c := m.shared.count()
	isLog := msg.method == messages.MethodLog
	switch {
	case isLog && !m.limiter.Allow():
		c.logsDropped.Add(1)
		return
	case m.queue.full(0):
		c.notificationsDropped.Add(1)
		return
	case msg.post != nil:
		m.queue.admit(item{post: msg.post})
		return
	case msg.method == messages.MethodResourceUpdated && m.shared.handlers().ResourceUpdated != nil:
		var u messages.ResourceUpdate
		if err := json.Unmarshal(msg.params, &u); err != nil || u.URI == "" {
			c.malformed.Add(1)
			m.shared.logger().Warn("malformed notifications/resources/updated dropped (no uri)")
			return
		}
		u.URI, u.Title = sanitize.Text(u.URI, sanitize.MaxString), sanitize.Text(u.Title, sanitize.MaxString)
		m.queue.admit(item{update: &u, size: int64(len(msg.params)), change: "updated " + u.URI})
		return
	case m.typedChange(msg.method):
		m.queue.admit(item{notif: &messages.Notification{Method: msg.method, Params: msg.params}, size: int64(len(msg.params)), change: msg.method})
		return
	case msg.method == messages.MethodProgress && m.shared.handlers().Progress != nil:
		p, err := decodeProgress(msg.params)
		if err != nil {
			c.malformed.Add(1)
			m.shared.logger().Warn("malformed server progress notification dropped", "err", err)
			return
		}
		m.queue.admit(item{progress: p, size: int64(len(msg.params))})
		return
	case msg.method == messages.MethodElicitationComplete && m.shared.handlers().ElicitationComplete != nil:
		id, err := decodeElicitationComplete(msg.params)
		if err != nil {
			c.malformed.Add(1)
			m.shared.logger().Warn("malformed elicitation completion dropped", "err", err)
			return
		}
		req, ok := m.shared.active().elicitations.complete(id)
		if !ok {
			// Never issued, forgotten, or completed already: the
			// specification says to ignore it.
			c.unknownResponses.Add(1)
			m.shared.logger().Debug("completion of an unknown elicitation dropped", "elicitation_id", id)
			return
		}
		m.queue.admit(item{complete: &messages.ElicitationComplete{ElicitationID: id, Request: req}, size: int64(len(msg.params))})
		return
	case !isLog:
		m.queue.admit(item{notif: &messages.Notification{Method: msg.method, Params: msg.params}, size: int64(len(msg.params))})
		return
	}
	e, err := sanitize.Log(msg.params)
	if err != nil {
		c.malformed.Add(1)
		m.shared.logger().Warn("malformed server log entry dropped", "err", err)
		return
	}
	m.queue.admit(item{log: &messages.LoggingMessage{Level: e.Level, Logger: e.Logger, Data: e.Data},
		size: int64(len(e.Level)+len(e.Logger)) + entrySize(e.Data)})
}

// typedChange reports whether a typed hook takes the list changes of
// method.
func (m *mailbox) typedChange(method string) bool {
	h := m.shared.handlers()
	switch method {
	case messages.MethodToolsListChanged:
		return h.ToolsChanged != nil
	case messages.MethodPromptsListChanged:
		return h.PromptsChanged != nil
	case messages.MethodResourcesListChanged:
		return h.ResourcesChanged != nil
	}
	return false
}

// decodeProgress decodes the params of notifications/progress for
// Handlers.Progress: progressToken (a string or a number) and progress (a
// number) are required, total and message optional; the message is
// sanitised as a log entry's strings are.
func decodeProgress(raw json.RawMessage) (*messages.Progress, error) {
	var p struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress *float64        `json:"progress"`
		Total    *float64        `json:"total"`
		Message  *string         `json:"message"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("notifications/progress: %w", err)
	}
	if p.Progress == nil {
		return nil, errors.New("notifications/progress: no numeric progress")
	}
	out := &messages.Progress{Progress: *p.Progress, Total: p.Total}
	if p.Message != nil {
		out.Message = sanitize.Text(*p.Message, sanitize.MaxString)
	}
	var token any
	dec := json.NewDecoder(bytes.NewReader(p.Token))
	dec.UseNumber()
	if len(p.Token) == 0 || dec.Decode(&token) != nil {
		return nil, errors.New("notifications/progress: no progressToken")
	}
	switch t := token.(type) {
	case string:
		out.Token = t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			out.Token = i
		} else if f, err := t.Float64(); err == nil {
			out.Token = f
		} else {
			return nil, fmt.Errorf("notifications/progress: progressToken %s out of range", t)
		}
	default:
		return nil, errors.New("notifications/progress: progressToken must be a string or a number")
	}
	return out, nil
}

// entrySize estimates the bytes a decoded JSON value holds: its strings,
// and a word or two for every value, key and number.
func entrySize(v any) int64 {
	switch v := v.(type) {
	case string:
		return 16 + int64(len(v))
	case json.Number:
		return 16 + int64(len(v))
	case map[string]any:
		n := int64(48)
		for k, e := range v {
			n += 16 + int64(len(k)) + entrySize(e)
		}
		return n
	case []any:
		n := int64(24)
		for _, e := range v {
			n += entrySize(e)
		}
		return n
	}
	return 16
}

// notifQueue holds the notifications waiting for the handler and runs
// them. Only the mailbox actor pushes and closes it, so full-then-push
// cannot overshoot the cap. A worker goroutine exists only while there is
// something to deliver: push starts one when none runs, and it exits when
// the queue is empty, so an idle connection has none. The worker takes
// everything waiting at once (one lock for a batch, not one per entry:
// in a flood the mailbox actor pushes as fast as it can); what it took and
// has not started yet still counts toward the cap.
//
// A callback still running at close (one that ignores its ctx) is
// abandoned through gate and counted until it returns; teardown never waits
// for it, so a callback may itself call Close.
type notifQueue struct {
	shared *shared
	ctx    context.Context              // the callbacks': shared.ctx, marked (callbackOf)
	nc     messages.NotificationContext // Era is filled in at each delivery
	gate   *supervisor.Gate

	mu    sync.Mutex
	items []item // waiting, oldest first
	// changes counts the typed changes waiting in items, by key (nil when
	// none).
	changes map[string]int
	// taken counts what the worker took and has not started; raised only
	// with mu held. close sets takenClosed in it (and counts the rest as
	// discarded): the worker claims each entry with a compare-and-swap,
	// so an entry is either started or counted, never both.
	taken   atomic.Int64
	running bool // a worker goroutine exists
	closed  bool
	exited  chan struct{} // closed once closed and no worker runs

	// pushed counts the entries ever queued (under mu), finished those
	// whose callback has returned (the worker's, in order): every entry up
	// to the n-th pushed is handled once finished reaches n. flushes wait
	// for that (under mu); waiting says there are some, so that the worker
	// takes mu only then.
	pushed   int64
	finished atomic.Int64
	flushes  []flush
	waiting  atomic.Bool

	// bytes is the weight of what waits (items, and what the worker took
	// and has not started); maxBytes bounds it, beside the
	// MaxWaitingNotifications entries.
	bytes    atomic.Int64
	maxBytes int64

	// claimed, when set (tests only), runs between the worker's claim of
	// an entry and its gate.Enter: the window a close can fall into.
	claimed func()
}

// full reports that an entry of size bytes finds no room: 1 000 waiting,
// or their bytes and its own over maxBytes, counting those the worker took
// but has not started (the one in the handler's hands does not count; an
// entry larger than the bound is queued when nothing else waits).
func (q *notifQueue) full(size int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := len(q.items) + int(q.taken.Load()&^takenClosed)
	return n >= MaxWaitingNotifications || n > 0 && q.bytes.Load()+size > q.maxBytes
}

// admit pushes it unless its bytes find no room (full), or it is a change
// the same as one still waiting (a flood of list changes holds one entry
// per list, of updates one per resource): then it is dropped and counted.
// Only the mailbox actor admits, so full-then-push cannot overshoot.
func (q *notifQueue) admit(it item) {
	if q.full(it.size) || it.change != "" && q.changeWaiting(it.change) {
		q.shared.count().notificationsDropped.Add(1)
		return
	}
	q.push(it)
}

// changeWaiting reports whether a change of key waits (the worker has not
// taken it).
func (q *notifQueue) changeWaiting(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.changes[key] > 0
}

// push queues it and starts a worker if none runs; after close it drops
// it.
func (q *notifQueue) push(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		q.shared.count().notificationsDiscarded.Add(1)
		return
	}
	q.items = append(q.items, it)
	if it.change != "" {
		if q.changes == nil {
			q.changes = map[string]int{}
		}
		q.changes[it.change]++
	}
	q.bytes.Add(it.size)
	q.pushed++
	if !q.running {
		q.running = true
		go q.run()
	}
}

// takenClosed marks taken once the queue is closed.
const takenClosed = int64(1) << 62

// close discards and counts what waits, and what the worker took and has
// not started; no callback starts after it. exited is closed now if no
// worker runs, else when the worker leaves.
func (q *notifQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.closed = true
	q.shared.count().notificationsDiscarded.Add(int64(len(q.items)) + q.taken.Swap(takenClosed))
	q.items, q.changes = nil, nil
	q.release(math.MaxInt64)
	if !q.running {
		close(q.exited)
	}
}

// callbackOf is the key of the mark the notification callbacks' ctx
// carries: the connection's shared state. A call made with it, from inside
// a callback, does not wait for the notifications before its answer: they
// wait for the callback (Runtime.outcome).
type callbackOf struct{}

// flush is a wait for the entries queued before it: done is closed once
// the at-th entry's callback has returned, or the queue has closed.
type flush struct {
	at   int64
	done chan struct{}
}

// flushed closes done once every entry queued so far is handled: its
// callback has returned, or it was discarded at close. (What the mailbox
// dropped never waited.) waiting is set before finished is read, and the
// worker adds to finished before it reads waiting: one of the two sees
// the other, so no flush is missed.
func (q *notifQueue) flushed(done chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		close(done)
		return
	}
	q.flushes = append(q.flushes, flush{at: q.pushed, done: done})
	q.waiting.Store(true)
	q.release(q.finished.Load())
}

// release closes the flushes of every entry up to the n-th; mu is held.
func (q *notifQueue) release(n int64) {
	i := 0
	for ; i < len(q.flushes) && q.flushes[i].at <= n; i++ {
		close(q.flushes[i].done)
		q.flushes[i] = flush{}
	}
	q.flushes = q.flushes[i:]
	if len(q.flushes) == 0 {
		q.flushes = nil
		q.waiting.Store(false)
	}
}

// handled counts one more entry whose callback has returned, and releases
// the flushes waiting for it.
func (q *notifQueue) handled() {
	n := q.finished.Add(1)
	if !q.waiting.Load() {
		return
	}
	q.mu.Lock()
	q.release(n)
	q.mu.Unlock()
}

// take hands the worker everything waiting, in batch's backing array, or
// reports false when there is none (or the queue is closed): the worker
// then exits.
func (q *notifQueue) take(batch []item) ([]item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 || q.closed {
		q.running = false
		if q.closed {
			close(q.exited)
		}
		return batch, false
	}
	batch, q.items = q.items, batch[:0]
	if q.changes != nil {
		q.changes = nil // every change waiting is taken
	}
	q.taken.Store(int64(len(batch)))
	return batch, true
}

// run is the worker goroutine: one callback at a time, in order, until the
// queue is empty. It runs nothing once the gate is closed, and nothing
// more after its callback was abandoned; what it took and did not run is
// discarded and counted.
func (q *notifQueue) run() {
	var batch []item
	for {
		var ok bool
		if batch, ok = q.take(batch); !ok {
			return
		}
		for i, it := range batch {
			batch[i] = item{}
			if !q.claim() {
				q.stop() // closed: close counted the rest
				return
			}
			q.bytes.Add(-it.size)
			if q.claimed != nil {
				q.claimed()
			}
			if !q.gate.Enter() {
				// The queue closed after the claim, and then its gate:
				// close did not count this entry, which is not run.
				q.shared.count().notificationsDiscarded.Add(1)
				q.stop()
				return
			}
			q.deliver(q.ctx, it)
			if !q.gate.Leave() {
				q.stop()
				return
			}
			q.handled()
		}
		if cap(batch) > keptCap {
			batch = nil // a flood's array goes
		}
	}
}

// claim takes the next entry of the worker's batch off taken; it reports
// false once the queue is closed.
func (q *notifQueue) claim() bool {
	for {
		n := q.taken.Load()
		if n&takenClosed != 0 {
			return false
		}
		if q.taken.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// stop ends a worker that stops early: the queue is closed (its gate
// closes after it), and close counted what the worker did not run.
func (q *notifQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running = false
	if q.closed {
		close(q.exited)
	}
}

func (q *notifQueue) deliver(ctx context.Context, it item) {
	defer func() {
		if v := recover(); v != nil {
			q.shared.count().notificationPanics.Add(1)
			q.shared.logger().Error("notification handler panicked; skipped", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		}
	}()
	nc := q.nc
	nc.Era = q.shared.session.Load().era
	if it.log != nil {
		q.shared.handlers().Log(ctx, nc, it.log)
		return
	}
	if it.progress != nil {
		q.shared.handlers().Progress(ctx, nc, it.progress)
		return
	}
	if it.complete != nil {
		q.shared.handlers().ElicitationComplete(ctx, nc, it.complete)
		return
	}
	if it.post != nil {
		it.post(ctx, nc)
		return
	}
	h := q.shared.handlers()
	if it.update != nil {
		h.ResourceUpdated(ctx, nc, it.update)
		return
	}
	switch {
	case it.notif.Method == messages.MethodToolsListChanged && h.ToolsChanged != nil:
		h.ToolsChanged(ctx, nc, &messages.ToolsChange{Notifications: 1})
	case it.notif.Method == messages.MethodPromptsListChanged && h.PromptsChanged != nil:
		h.PromptsChanged(ctx, nc, &messages.PromptsChange{Notifications: 1})
	case it.notif.Method == messages.MethodResourcesListChanged && h.ResourcesChanged != nil:
		h.ResourcesChanged(ctx, nc, &messages.ResourcesChange{Notifications: 1})
	default:
		h.Notification(ctx, nc, it.notif)
	}
}
