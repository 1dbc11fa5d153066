package actors

import (
	"runtime"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// workerIdle is how long a dispatcher worker waits for the next mailbox
// activation before it exits, and how long queued activations wait behind
// busy workers before one more worker is started.
const workerIdle = time.Millisecond

// dispatcher runs the mailbox activations of one connection's actors on a
// few goroutines that outlive an activation. protoactor's default
// dispatcher starts a fresh goroutine per activation, whose 2 KB stack then
// grows, copy by copy, to what decoding, guards and encoding need. A
// burst of server requests schedules hundreds of activations at once (each
// request child's start): a goroutine each, as a first version of this
// dispatcher did when no worker was idle, meant about a thousand workers
// per burst of 1 000, each grown at its start, shrunk by the collector and
// grown again, and a fifth of the burst's CPU went to copying stacks.
//
// So activations queue (FIFO) behind a bounded set of workers: Schedule
// never blocks; it wakes an idle worker, or starts one while fewer than max
// run (twice the processors: as many, or one more, cost more CPU a request
// in the burst benchmarks), or else queues the activation for the next
// worker that finishes one; the connection actor's goes ahead of the
// queue, since every request and every answer passes through it (but for
// its yields to its children: msgQueue.yieldToChildren). A Receive that
// blocks (a slow audit hook) must not hold up the connection's other
// actors for long: whenever activations
// have waited a whole workerIdle with none taken (every worker is stuck),
// one more worker is started, past the bound, for each period that goes
// so. Idle workers exit once a whole workerIdle has passed without an
// activation being scheduled (so between one and two workerIdle after the
// last), so an idle connection keeps none, and when the connection actor
// has stopped (close): nothing outlives the connection.
// One timer per dispatcher (reap) does both checks. The timer is made by
// the connection, inside a synctest bubble when a test runs in one.
type dispatcher struct {
	mu     sync.Mutex  // guards what follows
	wake   sync.Cond   // an idle worker waits on it, with mu
	queue  []activator // activations waiting for a worker; queue[:head] are taken
	head   int
	closed bool
	armed  bool  // reaper is set to run (beside closed: one word for both)
	max    int32 // workers started while fewer run; the watchdog starts more
	// workers are started and not yet ended; idle of them wait on wake;
	// ending of those idle are told to end.
	workers, idle, ending int32
	// first is the connection actor's activation while it waits: a
	// worker takes it before the queue (msgQueue, decision 81).
	first activator
	// scheduled counts Schedules, seen is its value at the last reap; taken
	// counts queued activations taken, takenSeen its value at the last
	// reap: counters, as a clock read per activation cost more.
	scheduled, seen, taken, takenSeen uint64
	reaper                            *time.Timer // runs reap; armed while a worker is not told to end
}

var _ actor.Dispatcher = (*dispatcher)(nil)

// activator is an activation to run: a mailbox (msgQueue) or, through
// Schedule, a function.
type activator interface{ activate() }

type activation func()

func (f activation) activate() { f() }

func newDispatcher() *dispatcher {
	d := &dispatcher{max: 2 * int32(runtime.GOMAXPROCS(0))}
	d.wake.L = &d.mu
	return d
}

// close makes every worker exit once the queue is empty; a later Schedule
// still runs its activation, on a goroutine of its own.
func (d *dispatcher) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	d.wake.Broadcast()
	if d.reaper != nil {
		d.reaper.Stop()
	}
}

// Schedule runs fn on an idle worker, a new one, or the next that is free.
func (d *dispatcher) Schedule(fn func()) { d.schedule(activation(fn)) }

// schedule is Schedule for any activator.
func (d *dispatcher) schedule(fn activator) {
	q, ok := fn.(*msgQueue)
	d.enqueue(fn, ok && q.first)
}

// enqueue runs fn on an idle worker, a new one, or the next that is free:
// ahead of the queue when first (the connection actor's mailbox; one at
// most, as a mailbox has one activation at a time), else behind it.
func (d *dispatcher) enqueue(fn activator, first bool) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		go fn.activate()
		return
	}
	d.scheduled++
	switch {
	case d.idle > d.ending:
		d.push(fn, first)
		d.wake.Signal()
	case d.workers < d.max:
		d.start()
		d.mu.Unlock()
		go d.worker(fn)
		return
	default:
		d.push(fn, first)
	}
	d.mu.Unlock()
}

func (d *dispatcher) push(fn activator, first bool) {
	if first {
		d.first = fn
		return
	}
	if d.head == len(d.queue) && d.head > 0 {
		d.queue, d.head = d.queue[:0], 0
	}
	d.queue = append(d.queue, fn)
}

// start counts a worker about to start, with mu held.
func (d *dispatcher) start() {
	d.workers++
	if !d.armed {
		d.arm(workerIdle)
	}
}

func (d *dispatcher) arm(after time.Duration) {
	d.armed = true
	if d.reaper == nil {
		d.reaper = time.AfterFunc(after, d.reap)
		return
	}
	d.reaper.Reset(after)
}

// reap runs on the timer, every workerIdle while workers remain. When
// activations wait and none was taken since the last reap, it starts one
// more worker; when no activation was scheduled since the last reap, every
// idle worker is told to end.
func (d *dispatcher) reap() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armed = false
	if d.closed {
		return
	}
	if d.waiting() && d.taken == d.takenSeen {
		d.start()
		go d.worker(d.pop())
	}
	d.takenSeen = d.taken
	if d.scheduled != d.seen {
		d.seen = d.scheduled
		d.arm(workerIdle)
		return
	}
	if d.idle > d.ending {
		d.ending = d.idle
		d.wake.Broadcast()
	}
	if d.workers > d.ending {
		d.arm(workerIdle)
	} else {
		d.reaper = nil // it has fired; an idle connection keeps no timer (decision 60)
	}
}

// waiting reports an activation waiting for a worker, with mu held.
func (d *dispatcher) waiting() bool { return d.first != nil || d.head < len(d.queue) }

// pop takes the next activation, with mu held: the connection actor's,
// then the queue's in order.
func (d *dispatcher) pop() activator {
	if q := d.first; q != nil {
		d.first = nil
		return q
	}
	fn := d.queue[d.head]
	d.queue[d.head] = nil
	d.head++
	if d.head == len(d.queue) {
		if cap(d.queue) > 1024 {
			d.queue = nil // a burst's array goes back to the collector
		} else {
			d.queue = d.queue[:0]
		}
		d.head = 0
	}
	return fn
}

// Throughput is how many messages an activation processes before it
// yields, protoactor's default.
func (d *dispatcher) Throughput() int { return 300 }

func (d *dispatcher) worker(fn activator) {
	growStack()
	for {
		fn.activate()
		d.mu.Lock()
		for !d.waiting() {
			if d.closed || d.ending > 0 {
				if d.ending > 0 {
					d.ending--
				}
				d.workers--
				d.mu.Unlock()
				return
			}
			d.idle++
			d.wake.Wait()
			d.idle--
		}
		fn = d.pop()
		d.taken++
		d.mu.Unlock()
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
// deep decode (where each copy walks every frame).
//
//go:noinline
func growStack() byte {
	var frame [workerStack]byte
	return frame[stackIndex]
}

// spawn starts a, the notification mailbox, as a protoactor child of the
// connection (request children are run by the connection itself:
// request.start).
func (c *connection) spawn(ctx actor.Context, a actor.Actor) *actor.PID {
	return ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return a },
		actor.WithDispatcher(c.dispatch), actor.WithMailbox(newMsgQueue)))
}
