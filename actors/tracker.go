package actors

import (
	"container/heap"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

// tracker is the call tracker: one entry per outgoing call in flight, with
// its deadline, its MaxTotalTimeout and its assigns. While any input of a
// call is open its deadline is paused (taken off the clock, remaining time
// kept); the total limit is never paused, so no call outlives
// MaxTotalTimeout. It also keeps the handler timeout of each request child.
//
// It is state of the connection actor, touched on that actor's goroutine
// only (docs/decisions.md #23): the connection starts and ends calls and
// grants input in its own order, with no message in between, so a request
// child is started with its grant.
//
// Every deadline it keeps is on one clock (docs/decisions.md #26): a
// min-heap of deadlines and one time.Timer per connection, armed for the
// earliest or earlier. The timer's callback only calls fire, which sends
// deadlineTick to the connection; the tick takes every deadline that has
// passed and re-arms the timer for the next. A tick with nothing due (the
// deadline it was armed for went) only re-arms, so ending a call or an
// input touches the timer only when it leaves the clock empty.
type tracker struct {
	fire   func()                       // sends deadlineTick to the connection
	calls  map[messages.ID]*trackedCall // made on first use: an idle connection has none
	inputs []*trackedInput              // every input open, each at its slot
	tasks  map[string]messages.ID       // task id → the call awaiting it
	due    deadlines                    // every deadline on the clock
	timer  *time.Timer                  // made with the first deadline
	armed  time.Time                    // when timer fires; zero when it is not armed
	lanes  []*lane                      // one per handler timeout length seen
}

// trackers holds the trackers of connections at rest (decision 75): a
// tracker's 120 bytes were part of every connection's runtime, and only a
// busy one uses them. A connection takes one with its first call, input,
// task binding or deadline (trk) and gives it back once it tracks nothing
// and has no timer (settleTracker); both on the connection actor's
// goroutine, the only one that touches its tracker. A pooled tracker keeps
// its empty maps and lanes' slice for the next busy period; it never
// keeps a timer, whose callback is the connection's that made it, so a
// timer stopped too late ticks that connection, which ignores a tick while
// it has no tracker and re-arms or drops a timer otherwise (tick).
var trackers = sync.Pool{New: func() any { return new(tracker) }}

// trk is the connection's tracker, taken from trackers if it has none.
func (c *connection) trk() *tracker {
	if c.tracker == nil {
		c.tracker = trackers.Get().(*tracker)
		c.tracker.fire = c.fireTick
	}
	return c.tracker
}

// settleTracker gives the tracker back to trackers once it tracks nothing:
// no call (calls goes back to trackedMaps with the last), no input, no
// task binding, no deadline on the clock (so no lane holds one) and no
// timer. It runs after every message of the connection actor.
func (c *connection) settleTracker() {
	t := c.tracker
	if t == nil || t.calls != nil || len(t.inputs) > 0 || len(t.tasks) > 0 || len(t.due) > 0 || t.timer != nil {
		return
	}
	clear(t.lanes)
	*t = tracker{inputs: t.inputs, tasks: t.tasks, due: t.due[:0], lanes: t.lanes[:0]}
	trackers.Put(t)
	c.tracker = nil
}

// fireTick is the tracker's timer callback: a deadlineTick to the connection.
func (c *connection) fireTick() {
	rt := c.life.rt
	rt.post(&deadlineTick{})
}

type trackedCall struct {
	id          messages.ID
	started     time.Time
	timeout     time.Duration
	maxTotal    time.Duration
	remaining   time.Duration // time left on the deadline when paused
	deadline    time.Time     // when it runs (unpaused) and has a timeout: its timeout's end
	limit       time.Time     // started + maxTotal, when it has one
	due         deadline      // its next moment: the earlier of deadline (while it runs) and limit
	open        int           // inputs open
	pausedSince time.Time
	paused      time.Duration
	assigns     map[string]any
}

// trackedInput is an input the tracker knows: the call it paused (when
// hasCall) and, for a request child, its handler timeout. Its grant is
// what the input's driver reads (never written once granted; the tracker
// keeps its own fields apart, as the call may end first).
//
// The tracker finds it by its slot in inputs, not by a key: a map of a
// burst's thousand inputs cost a twentieth of the burst's CPU in cache
// misses (decision 80). Whoever ends an input holds its entry.
type trackedInput struct {
	request messages.ID // a request child's id, which its handler timeout names; zero for other inputs
	call    messages.ID
	hasCall bool
	slot    int // its index in the tracker's inputs; -1 when not open there
	timeout deadline
	grant   inputGrant
}

// deadline is a moment on the tracker's clock: a call's next one (call
// set), or an input's handler timeout (input set).
type deadline struct {
	at    time.Time
	index int // in the heap; -1 when off the clock or behind others in its lane
	call  *trackedCall
	input *trackedInput
	// lane is the handler timeouts' lane it waits in, nil when none; prev
	// and next are its neighbours there.
	lane       *lane
	prev, next *deadline
}

// lane is the handler timeouts of one length, in the order they were
// clocked, which is the order they fall due: only its head is in the heap.
// A burst of requests puts a thousand timeouts of the same length on the
// clock, and ends them in about the order they came: in one heap, every
// one cost a push and a removal of log n steps each; in a lane, a link and
// an unlink, and the heap keeps a handful of heads.
type lane struct {
	timeout    time.Duration
	head, tail *deadline
}

// deadlines is a min-heap by at, for container/heap.
type deadlines []*deadline

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *deadlines) Push(x any) {
	d := x.(*deadline)
	d.index = len(*h)
	*h = append(*h, d)
}
func (h *deadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	d.index = -1
	return d
}

// start tracks a call and puts its next moment on the clock.
func (t *tracker) start(id messages.ID, timeout, maxTotal time.Duration, assigns map[string]any) {
	if t.calls == nil {
		t.calls = trackedMaps.get()
	}
	c := &trackedCall{id: id, started: time.Now(), timeout: timeout, maxTotal: maxTotal, assigns: assigns}
	c.due = deadline{index: -1, call: c}
	if c.timeout > 0 {
		c.deadline = c.started.Add(c.timeout)
	}
	if c.maxTotal > 0 {
		c.limit = c.started.Add(c.maxTotal)
	}
	t.calls[id] = c
	t.reclock(c)
}

// reclock puts c's next moment on the clock: its deadline while it runs
// unpaused, its total limit, whichever comes first; none when it has
// neither.
func (t *tracker) reclock(c *trackedCall) {
	at := c.limit
	if !c.deadline.IsZero() && c.open == 0 && (at.IsZero() || c.deadline.Before(at)) {
		at = c.deadline
	}
	switch {
	case at.IsZero():
		t.unclock(&c.due)
	case c.due.index >= 0:
		c.due.at = at
		heap.Fix(&t.due, c.due.index)
		t.armFor(&c.due)
	default:
		t.clock(&c.due, at)
	}
}

// clock puts d on the clock at at.
func (t *tracker) clock(d *deadline, at time.Time) {
	d.at = at
	heap.Push(&t.due, d)
	t.armFor(d)
}

// clockIn puts an input's handler timeout d on the clock, timeout from
// now, at the tail of its lane.
func (t *tracker) clockIn(d *deadline, timeout time.Duration) {
	at := time.Now().Add(timeout)
	var l *lane
	for _, x := range t.lanes {
		if x.timeout == timeout {
			l = x
			break
		}
	}
	if l == nil {
		l = &lane{timeout: timeout}
		t.lanes = append(t.lanes, l)
	}
	switch {
	case l.tail == nil:
		d.lane, l.head, l.tail = l, d, d
		t.clock(d, at)
	case at.Before(l.tail.at):
		t.clock(d, at) // the clock went back: not in order, so not in the lane
	default:
		d.at, d.lane, d.prev = at, l, l.tail
		l.tail.next, l.tail = d, d
	}
}

// unlane takes d out of its lane; the head's place in the heap goes to the
// next, if any.
func (t *tracker) unlane(d *deadline) {
	l := d.lane
	if d.prev != nil {
		d.prev.next = d.next
	} else {
		l.head = d.next
	}
	if d.next != nil {
		d.next.prev = d.prev
	} else {
		l.tail = d.prev
	}
	next := d.next
	d.lane, d.prev, d.next = nil, nil, nil
	if d.index < 0 || l.head == nil {
		return // behind the head; or the last, whose slot the caller frees
	}
	i := d.index
	t.due[i], next.index, d.index = next, i, -1
	heap.Fix(&t.due, i)
}

// armFor arms the timer for d when d is now the earliest and the timer is
// not armed for earlier.
func (t *tracker) armFor(d *deadline) {
	if d.index == 0 && (t.armed.IsZero() || d.at.Before(t.armed)) {
		t.arm(d.at)
	}
}

// unclock takes d off the clock. The timer stays armed (see tracker)
// unless the clock is empty: an idle connection has no timer, running or
// kept (decision 60: a kept one cost 112 bytes a connection at rest).
func (t *tracker) unclock(d *deadline) {
	if d.lane != nil {
		t.unlane(d)
	}
	if d.index < 0 {
		return
	}
	heap.Remove(&t.due, d.index)
	if len(t.due) == 0 && t.timer != nil {
		t.timer.Stop()
		t.timer, t.armed = nil, time.Time{}
	}
}

func (t *tracker) arm(at time.Time) {
	t.armed = at
	if t.timer == nil {
		t.timer = time.AfterFunc(time.Until(at), t.fire)
		return
	}
	t.timer.Reset(time.Until(at))
}

// tick takes the timer's tick: every deadline that has passed is acted on
// (a call's through expired, a handler timeout through timedOut, with its
// request's id), then the timer is armed for the next.
func (t *tracker) tick(expired func(*callExpired), timedOut func(request messages.ID)) {
	t.armed = time.Time{}
	now := time.Now()
	for len(t.due) > 0 && !t.due[0].at.After(now) {
		d := t.due[0]
		if d.lane != nil {
			t.unlane(d) // the next of its lane takes its place
		}
		if d.index == 0 {
			heap.Pop(&t.due)
		}
		if c := d.call; c != nil {
			expired(t.expire(c, !c.limit.IsZero() && !c.limit.After(now)))
		} else {
			timedOut(d.input.request)
		}
	}
	if len(t.due) > 0 {
		t.arm(t.due[0].at)
	} else {
		t.timer = nil // it has fired: nothing to stop
	}
}

// inputStarted relates an input to its call, pauses that call's deadline
// and returns its entry, whose grant the input's driver reads;
// inputEnded(entry) ends the pause. The entry is in when not nil (part of
// a request child: one allocation less per request), else made here.
// hint is the raw id of the call whose stream carried the input ("" when
// the transport cannot tell), task the related-task id it carries (""
// when none). A positive timeout puts the input's handler timeout on the
// clock (request children; the other drivers time their handlers
// themselves).
func (t *tracker) inputStarted(in *trackedInput, request messages.ID, hint, task string, timeout time.Duration) *trackedInput {
	return t.open(in, request, t.relate(hint, task), timeout)
}

// inputOf is inputStarted for an input that names its call, id: when that
// call has ended (its deadline passed before the input started), the input
// belongs to none, never to whichever call is in flight.
func (t *tracker) inputOf(id messages.ID) *trackedInput {
	return t.open(nil, messages.ID{}, t.calls[id], 0)
}

// open opens an input of call c (nil: none), pausing c's deadline, and
// puts a positive timeout on the clock; its entry is in (nil: made here).
// An input of no call and no timeout is not kept: ending it does nothing.
func (t *tracker) open(in *trackedInput, request messages.ID, c *trackedCall, timeout time.Duration) *trackedInput {
	if in == nil {
		in = &trackedInput{}
	}
	*in = trackedInput{request: request, slot: -1, grant: inputGrant{inFlight: len(t.calls)}}
	if c == nil && timeout <= 0 {
		return in
	}
	in.timeout = deadline{index: -1, input: in}
	in.slot = len(t.inputs)
	t.inputs = append(t.inputs, in)
	if c != nil {
		in.grant.related, in.grant.assigns, in.grant.hasCall = c.id, c.assigns, true
		in.call, in.hasCall = c.id, true
		if c.open++; c.open == 1 {
			t.pause(c)
		}
	}
	if timeout > 0 {
		t.clockIn(&in.timeout, timeout)
	}
	return in
}

// inputEnded ends the pause in's input took and takes its handler timeout
// off the clock; it reports the expiry to act on when the call's time ran
// out meanwhile. An entry this tracker does not hold (ended already, never
// kept, or held by a tracker since stopped) ends nothing.
func (t *tracker) inputEnded(in *trackedInput) *callExpired {
	if in == nil || in.slot < 0 || in.slot >= len(t.inputs) || t.inputs[in.slot] != in {
		return nil
	}
	last := len(t.inputs) - 1
	moved := t.inputs[last]
	t.inputs[in.slot], moved.slot = moved, in.slot
	t.inputs[last] = nil
	t.inputs = t.inputs[:last]
	in.slot = -1
	t.unclock(&in.timeout)
	if !in.hasCall {
		return nil
	}
	c, ok := t.calls[in.call]
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
	if c.timeout > 0 {
		c.remaining = max(0, c.deadline.Sub(c.pausedSince))
	}
	t.reclock(c) // its deadline leaves the clock (c.open is 1)
}

func (t *tracker) resume(c *trackedCall) *callExpired {
	c.paused += time.Since(c.pausedSince)
	if c.timeout <= 0 {
		return nil
	}
	if c.remaining <= 0 {
		return t.expire(c, false)
	}
	c.deadline = time.Now().Add(c.remaining)
	t.reclock(c)
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

// end forgets a call: its deadlines leave the clock, its task bindings
// go, and its inputs belong to no call any more (their handler timeouts
// stay).
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
	t.unclock(&c.due)
	delete(t.calls, id)
	if len(t.calls) == 0 {
		trackedMaps.put(t.calls) // an idle connection keeps no map (idmaps.go)
		t.calls = nil
	}
	if c.open == 0 {
		return // no input refers to it
	}
	for _, in := range t.inputs {
		if in.hasCall && in.call == id {
			in.hasCall = false
		}
	}
}

// stop forgets every call and input: no tick comes after it.
func (t *tracker) stop() {
	// The ids first: the last end gives the map back to trackedMaps,
	// where another connection may take it while a range is still on it.
	for _, id := range slices.Collect(maps.Keys(t.calls)) {
		t.end(id)
	}
	t.inputs, t.due, t.armed, t.lanes = nil, nil, time.Time{}, nil
	if t.timer != nil {
		t.timer.Stop()
	}
}
