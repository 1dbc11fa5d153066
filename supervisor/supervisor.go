// Package supervisor decides how input handlers are supervised: request
// children are stopped, never restarted; a handler runs in a goroutine its
// child owns, with its panic recovered there (the actor library does not
// recover panics in goroutines it did not start); a callback that ignores
// its context is abandoned and counted, never waited for. (A host's
// servers are restarted by package restart.)
//
// Only the actors import it.
package supervisor

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
)

// PanicError is a recovered handler panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("input handler panicked: %v", e.Value) }

// Outcome is what a handler goroutine produced.
type Outcome struct {
	Result any
	Err    error // a *PanicError when the handler panicked
}

// Gauge counts abandoned callbacks that are still running. It is safe for
// concurrent use.
type Gauge struct{ n atomic.Int64 }

// Load returns the number of abandoned callbacks still running.
func (g *Gauge) Load() int64 { return g.n.Load() }

// The states of a Gate.
const (
	idle int32 = iota
	busy
	closed
	abandoned
)

// Gate is where a goroutine enters and leaves user code, and where its
// owner, when it stops waiting, finds out whether that goroutine is inside:
// then it is abandoned and counted by the gauge until it leaves. The zero
// Gate (with a nil gauge, nothing is counted) is idle. Its methods are safe
// for concurrent use; Enter and Leave are called by the one goroutine that
// runs the callbacks, one at a time.
type Gate struct {
	state atomic.Int32
	gauge *Gauge
}

// NewGate returns an idle Gate that counts abandonment in gauge.
func NewGate(gauge *Gauge) *Gate { return &Gate{gauge: gauge} }

// Enter marks the start of a callback. It reports false once the gate is
// closed: the goroutine must not run the callback.
func (g *Gate) Enter() bool { return g.state.CompareAndSwap(idle, busy) }

// Leave marks the end of a callback. It reports false when the callback was
// abandoned meanwhile (it is no longer counted): the goroutine must run
// nothing more.
func (g *Gate) Leave() bool {
	if g.state.CompareAndSwap(busy, idle) {
		return true
	}
	if g.state.CompareAndSwap(abandoned, closed) && g.gauge != nil {
		g.gauge.n.Add(-1)
	}
	return false
}

// Close stops the gate. It reports whether a callback was running, which is
// then abandoned and counted until it returns; otherwise no callback runs
// after Close.
func (g *Gate) Close() bool {
	for {
		switch g.state.Load() {
		case idle:
			if g.state.CompareAndSwap(idle, closed) {
				return false
			}
		case busy:
			if g.state.CompareAndSwap(busy, abandoned) {
				if g.gauge != nil {
					g.gauge.n.Add(1)
				}
				return true
			}
		default:
			return false
		}
	}
}

// Job is a handler that Go runs.
type Job interface {
	// Run is the user's callback.
	Run(ctx context.Context) (any, error)
	// Done gets Run's outcome, on the job's goroutine, even after Abandon
	// (the owner ignores a late outcome); it must not block.
	Done(Outcome)
}

// Handle is one handler goroutine; its owner keeps it (the zero Handle is
// ready for Go), so that starting a handler allocates no more than its
// goroutine.
type Handle struct{ gate Gate }

// Go runs job.Run(ctx) in a new goroutine that recovers its panic and then
// calls job.Done with the outcome. h is the job's Handle; an abandoned job
// is counted in gauge until it returns.
func Go(ctx context.Context, gauge *Gauge, h *Handle, job Job) {
	h.gate = Gate{gauge: gauge}
	h.gate.Enter()
	go h.run(ctx, job)
}

func (h *Handle) run(ctx context.Context, job Job) {
	var out Outcome
	defer func() {
		h.gate.Leave()
		job.Done(out)
	}()
	defer func() {
		if v := recover(); v != nil {
			out = Outcome{Err: &PanicError{Value: v, Stack: debug.Stack()}}
		}
	}()
	res, err := job.Run(ctx)
	out = Outcome{Result: res, Err: err}
}

// Abandon records that the owner stopped waiting. It reports whether the
// handler was still running (and is now counted by the gauge).
func (h *Handle) Abandon() bool { return h.gate.Close() }

// Cap bounds how many server requests run at once. It is owned by one actor
// and not safe for concurrent use.
type Cap struct {
	Max     int
	Running int
}

// Acquire takes a slot, or reports false when all Max are taken.
func (c *Cap) Acquire() bool {
	if c.Running >= c.Max {
		return false
	}
	c.Running++
	return true
}

// Release frees a slot.
func (c *Cap) Release() {
	if c.Running > 0 {
		c.Running--
	}
}
