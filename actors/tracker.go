package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/messages"
)

// tracker is the call tracker: one entry per outgoing call in flight, with
// its deadline, its MaxTotalTimeout and its assigns. While any input of a
// call is open its deadline is paused (timer stopped, remaining time kept,
// generation bumped so a tick already in the mailbox is ignored); the total
// timer is never paused, so no call outlives MaxTotalTimeout.
//
// Timers are time.AfterFunc callbacks that only send deadlineFired to self:
// the actor's state is touched on the actor's goroutine alone.
type tracker struct {
	conn   *actor.PID
	calls  map[messages.ID]*trackedCall
	inputs map[any]messages.ID    // input token → the call it paused
	tasks  map[string]messages.ID // task id → the call awaiting it
}

type trackedCall struct {
	id          messages.ID
	started     time.Time
	timeout     time.Duration
	maxTotal    time.Duration
	remaining   time.Duration // time left on the deadline when paused
	deadline    time.Time     // when running
	timer       *time.Timer
	totalTimer  *time.Timer
	gen         uint64
	open        int // inputs open
	pausedSince time.Time
	paused      time.Duration
	assigns     map[string]any
}

func newTracker(conn *actor.PID) *tracker {
	return &tracker{conn: conn, calls: map[messages.ID]*trackedCall{}, inputs: map[any]messages.ID{}, tasks: map[string]messages.ID{}}
}

func (t *tracker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *callStarted:
		now := time.Now()
		c := &trackedCall{id: m.id, started: now, timeout: m.timeout, maxTotal: m.maxTotal, assigns: m.assigns}
		t.calls[m.id] = c
		if c.timeout > 0 {
			t.arm(ctx, c, c.timeout)
		}
		if c.maxTotal > 0 {
			id, self, root := c.id, ctx.Self(), ctx.ActorSystem().Root
			c.totalTimer = time.AfterFunc(c.maxTotal, func() { root.Send(self, &deadlineFired{id: id, total: true}) })
		}
	case *callEnded:
		t.remove(m.id)
	case *deadlineFired:
		c, ok := t.calls[m.id]
		if !ok || (!m.total && (m.gen != c.gen || c.open > 0)) {
			return // stale tick: ended, re-armed or paused since
		}
		t.expire(ctx, c, m.total)
	case *inputStarted:
		grant := &inputGrant{inFlight: len(t.calls)}
		if c := t.relate(m.hint, m.task); c != nil {
			grant.related, grant.assigns, grant.hasCall = c.id, c.assigns, true
			t.inputs[m.token] = c.id
			if c.open == 0 {
				t.pause(c)
			}
			c.open++
		}
		ctx.Respond(grant)
	case *taskBound:
		// It may come before the call's callStarted, which goes through
		// the connection; the call's end removes it in any case.
		t.tasks[m.task] = m.id
	case *inputEnded:
		id, ok := t.inputs[m.token]
		if !ok {
			return
		}
		delete(t.inputs, m.token)
		if c, ok := t.calls[id]; ok {
			c.open--
			if c.open == 0 {
				t.resume(ctx, c)
			}
		}
	case *actor.Stopping:
		for id := range t.calls {
			t.remove(id)
		}
	}
}

// relate finds the call an input belongs to: the one awaiting the task it
// names, else the one whose stream carried it, else the only call in
// flight, else none.
func (t *tracker) relate(hint, task string) *trackedCall {
	if id, ok := t.tasks[task]; ok && task != "" {
		if c, ok := t.calls[id]; ok {
			return c
		}
	}
	if hint != "" {
		for id, c := range t.calls {
			if id.String() == hint {
				return c
			}
		}
	}
	if len(t.calls) == 1 {
		for _, c := range t.calls {
			return c
		}
	}
	return nil
}

func (t *tracker) arm(ctx actor.Context, c *trackedCall, d time.Duration) {
	c.gen++
	c.deadline = time.Now().Add(d)
	id, gen, self, root := c.id, c.gen, ctx.Self(), ctx.ActorSystem().Root
	c.timer = time.AfterFunc(d, func() { root.Send(self, &deadlineFired{id: id, gen: gen}) })
}

func (t *tracker) pause(c *trackedCall) {
	c.pausedSince = time.Now()
	if c.timer != nil {
		c.timer.Stop()
		c.gen++
		c.remaining = max(0, c.deadline.Sub(c.pausedSince))
	}
}

func (t *tracker) resume(ctx actor.Context, c *trackedCall) {
	c.paused += time.Since(c.pausedSince)
	if c.timer == nil {
		return
	}
	if c.remaining <= 0 {
		t.expire(ctx, c, false)
		return
	}
	t.arm(ctx, c, c.remaining)
}

func (t *tracker) expire(ctx actor.Context, c *trackedCall, total bool) {
	paused := c.paused
	if c.open > 0 {
		paused += time.Since(c.pausedSince)
	}
	limit := c.timeout
	if total {
		limit = c.maxTotal
	}
	t.remove(c.id)
	ctx.Send(t.conn, &callExpired{id: c.id, active: time.Since(c.started), paused: paused, limit: limit, total: total})
}

func (t *tracker) remove(id messages.ID) {
	for task, cid := range t.tasks {
		if cid == id {
			delete(t.tasks, task) // even when the call is gone: bound after it expired
		}
	}
	c, ok := t.calls[id]
	if !ok {
		return
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.totalTimer != nil {
		c.totalTimer.Stop()
	}
	delete(t.calls, id)
	for tok, cid := range t.inputs {
		if cid == id {
			delete(t.inputs, tok)
		}
	}
}
