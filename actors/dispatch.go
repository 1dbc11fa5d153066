package actors

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerIdle is how long a dispatcher worker waits for the next mailbox
// activation before it exits.
const workerIdle = time.Millisecond

// dispatcher runs the mailbox activations of one connection's actors on
// goroutines that outlive an activation. protoactor's default dispatcher
// starts a fresh goroutine per activation, whose 2 KB stack then grows,
// copy by copy, to what decoding, guards and encoding need: a third of the
// CPU of a request went to runtime.newstack and copystack. A worker keeps
// its grown stack for the next activation.
//
// Schedule never blocks: it hands the activation to an idle worker, or
// starts a new worker when none is idle (so a Receive that blocks, such as
// a slow audit hook, delays only its own worker, as before). Idle workers
// exit once a whole workerIdle has passed without an activation being
// scheduled (so between one and two workerIdle after the last), so an idle
// connection keeps none, and when the connection actor has stopped
// (close): nothing outlives the connection. Workers wait on the channel
// alone: a worker timer in that wait was a timer operation at each
// activation, so one timer per dispatcher (reap) ends them instead. The
// channel and the timer are made by the connection, inside a synctest
// bubble when a test runs in one.
type dispatcher struct {
	mu      sync.Mutex  // guards what follows; held to send on work or close it
	work    chan func() // unbuffered: a send succeeds only to an idle worker; nil ends it; closed by close
	closed  bool
	workers int // started and not yet told to end
	// scheduled counts Schedules, seen is its value at the last reap: a
	// counter, as a clock read per activation cost more.
	scheduled, seen uint64
	reaper          *time.Timer // armed while workers > 0; runs reap
}

var _ actor.Dispatcher = (*dispatcher)(nil)

func newDispatcher() *dispatcher {
	return &dispatcher{work: make(chan func())}
}

// close makes every worker exit once idle; a later Schedule still runs its
// activation, on a worker that exits right after it.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	close(d.work)
	if d.reaper != nil {
		d.reaper.Stop()
	}
}

// Schedule runs fn on an idle worker or a new one.
func (d *dispatcher) Schedule(fn func()) {
	d.mu.Lock()
	handed := false
	if !d.closed {
		d.scheduled++
		select {
		case d.work <- fn:
			handed = true
		default:
			d.workers++
			if d.workers == 1 {
				d.arm(workerIdle)
			}
		}
	}
	d.mu.Unlock()
	if !handed {
		go d.worker(fn)
	}
}

func (d *dispatcher) arm(after time.Duration) {
	if d.reaper == nil {
		d.reaper = time.AfterFunc(after, d.reap)
		return
	}
	d.reaper.Reset(after)
}

// reap runs on the timer, every workerIdle while workers remain: when no
// activation was scheduled since the last reap, every idle worker is told
// to end.
func (d *dispatcher) reap() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if d.scheduled != d.seen {
		d.seen = d.scheduled
		d.arm(workerIdle)
		return
	}
reaping:
	for d.workers > 0 {
		select {
		case d.work <- nil:
			d.workers--
		default:
			break reaping // the others are busy
		}
	}
	if d.workers > 0 {
		d.arm(workerIdle)
	} else {
		d.reaper = nil // it has fired; an idle connection keeps no timer (decision 60)
	}
}

// Throughput is how many messages an activation processes before it
// yields, protoactor's default.
func (d *dispatcher) Throughput() int { return 300 }

func (d *dispatcher) worker(fn func()) {
	growStack()
	fn()
	for fn := range d.work {
		if fn == nil {
			return
		}
		fn()
	}
}

// workerStack is about the stack an activation needs at its deepest
// (encoding/json decoding the params of a sampling request in a guard).
const workerStack = 16 << 10

// stackIndex is never changed: reading it keeps the compiler from proving
// growStack's frame unused.
var stackIndex = 0

// growStack grows a new worker's stack to workerStack in one copy, while
// the stack holds two frames, rather than copy by copy in the middle of a
// deep decode (where each copy walks every frame): a burst of requests
// starts many workers at once.
//
//go:noinline
func growStack() byte {
	var frame [workerStack]byte
	return frame[stackIndex]
}

// spawn starts a as a child of the connection. Every child shares one
// Props, made at the first spawn, whose producers hand out c.born and its
// mailbox (bornQueue): Spawn calls them before it returns, on this actor's
// goroutine, and a child is never restarted (the strategy stops it), so
// they are never called later. A Props per child cost four allocations a
// request.
func (c *connection) spawn(ctx actor.Context, a actor.Actor) *actor.PID {
	if c.childProps == nil {
		if c.dispatch == nil {
			c.dispatch = newDispatcher()
		}
		c.childProps = actor.PropsFromProducer(func() actor.Actor { return c.born },
			actor.WithDispatcher(c.dispatch), actor.WithMailbox(c.bornQueue))
	}
	c.born = a
	defer func() { c.born = nil }()
	return ctx.Spawn(c.childProps)
}

// bornQueue is the mailbox of the child being spawned: a request child's
// is part of it, any other's a msgQueue of its own.
func (c *connection) bornQueue() actor.Mailbox {
	if r, ok := c.born.(*request); ok {
		return r.queue.init()
	}
	return newMsgQueue()
}
