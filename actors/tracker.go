package actors

import (
	"time"

	"github.com/conduitmcp/conduit/messages"
)

// tracker is the call tracker: one entry per outgoing call in flight, with
// its deadline, its MaxTotalTimeout and its assigns. While any input of a
// call is open its deadline is paused (timer stopped, remaining time kept);
// the total timer is never paused, so no call outlives MaxTotalTimeout. A
// tick already in the mailbox when the timer was stopped or reset is
// stale: the call is paused, or its deadline is later than now.
//
// It is state of the connection actor, touched on that actor's goroutine
// only (docs/decisions.md #23): the connection starts and ends calls and
// grants input in its own order, with no message in between, so a request
// child is spawned with its grant. Timers are time.AfterFunc callbacks that
// only call fire, which sends deadlineFired to the connection.
type tracker struct {
	fire   func(*deadlineFired)
	calls  map[messages.ID]*trackedCall // made on first use: an idle connection has none
	inputs map[any]messages.ID          // input token → the call it paused
	tasks  map[string]messages.ID       // task id → the call awaiting it
}

type trackedCall struct {
	id          messages.ID
	started     time.Time
	timeout     time.Duration
	maxTotal    time.Duration
	remaining   time.Duration // time left on the deadline when paused
	deadline    time.Time     // when running
	timer       *time.Timer   // one per call, reset at each resume
	totalTimer  *time.Timer
	open        int // inputs open
	pausedSince time.Time
	paused      time.Duration
	assigns     map[string]any
}

// start tracks a call and arms its timers.
func (t *tracker) start(id messages.ID, timeout, maxTotal time.Duration, assigns map[string]any) {
	if t.calls == nil {
		t.calls = map[messages.ID]*trackedCall{}
	}
	c := &trackedCall{id: id, started: time.Now(), timeout: timeout, maxTotal: maxTotal, assigns: assigns}
	t.calls[id] = c
	if c.timeout > 0 {
		c.deadline = c.started.Add(c.timeout)
		c.timer = time.AfterFunc(c.timeout, func() { t.fire(&deadlineFired{id: id}) })
	}
	if c.maxTotal > 0 {
		c.totalTimer = time.AfterFunc(c.maxTotal, func() { t.fire(&deadlineFired{id: id, total: true}) })
	}
}

// fired takes a timer's tick: it reports the expiry to act on, or nil for
// a stale tick (the call ended, is paused, or was resumed with a later
// deadline since).
func (t *tracker) fired(m *deadlineFired) *callExpired {
	c, ok := t.calls[m.id]
	if !ok || (!m.total && (c.open > 0 || time.Now().Before(c.deadline))) {
		return nil
	}
	return t.expire(c, m.total)
}

// inputStarted relates an input to its call, pauses that call's deadline
// and returns the grant; token ends the pause (inputEnded). hint is the raw
// id of the call whose stream carried the input ("" when the transport
// cannot tell), task the related-task id it carries ("" when none).
func (t *tracker) inputStarted(token any, hint, task string) *inputGrant {
	grant := &inputGrant{inFlight: len(t.calls)}
	if c := t.relate(hint, task); c != nil {
		grant.related, grant.assigns, grant.hasCall = c.id, c.assigns, true
		if t.inputs == nil {
			t.inputs = map[any]messages.ID{}
		}
		t.inputs[token] = c.id
		if c.open == 0 {
			t.pause(c)
		}
		c.open++
	}
	return grant
}

// inputEnded ends the pause token took; it reports the expiry to act on
// when the call's time ran out meanwhile.
func (t *tracker) inputEnded(token any) *callExpired {
	id, ok := t.inputs[token]
	if !ok {
		return nil
	}
	delete(t.inputs, token)
	c, ok := t.calls[id]
	if !ok {
		return nil
	}
	c.open--
	if c.open > 0 {
		return nil
	}
	return t.resume(c)
}

// bindTask makes the inputs that name task belong to call id. It may come
// before the call starts; the call's end removes it in any case.
func (t *tracker) bindTask(task string, id messages.ID) {
	if t.tasks == nil {
		t.tasks = map[string]messages.ID{}
	}
	t.tasks[task] = id
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
	var carrier messages.ID
	if hint != "" && carrier.UnmarshalJSON([]byte(hint)) == nil {
		if c, ok := t.calls[carrier]; ok {
			return c
		}
	}
	if len(t.calls) == 1 {
		for _, c := range t.calls {
			return c
		}
	}
	return nil
}

func (t *tracker) pause(c *trackedCall) {
	c.pausedSince = time.Now()
	if c.timer != nil {
		c.timer.Stop()
		c.remaining = max(0, c.deadline.Sub(c.pausedSince))
	}
}

func (t *tracker) resume(c *trackedCall) *callExpired {
	c.paused += time.Since(c.pausedSince)
	if c.timer == nil {
		return nil
	}
	if c.remaining <= 0 {
		return t.expire(c, false)
	}
	c.deadline = time.Now().Add(c.remaining)
	c.timer.Reset(c.remaining)
	return nil
}

// expire forgets c and returns its expiry.
func (t *tracker) expire(c *trackedCall, total bool) *callExpired {
	paused := c.paused
	if c.open > 0 {
		paused += time.Since(c.pausedSince)
	}
	limit := c.timeout
	if total {
		limit = c.maxTotal
	}
	t.end(c.id)
	return &callExpired{id: c.id, active: time.Since(c.started), paused: paused, limit: limit, total: total}
}

// end forgets a call: its timers stop, its inputs and task bindings go.
func (t *tracker) end(id messages.ID) {
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
	if len(t.calls) == 0 {
		t.calls = nil // an idle connection keeps no map (a map keeps its largest size)
	}
	for tok, cid := range t.inputs {
		if cid == id {
			delete(t.inputs, tok)
		}
	}
}

// stop forgets every call: no timer fires after it.
func (t *tracker) stop() {
	for id := range t.calls {
		t.end(id)
	}
}
