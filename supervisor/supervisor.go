// Package supervisor decides how input handlers are supervised: request
// children are stopped, never restarted; a handler runs in a goroutine its
// child owns, with its panic recovered there (the actor library does not
// recover panics in goroutines it did not start); a handler that ignores its
// context is abandoned and counted, never waited for.
package supervisor

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Stopping is the strategy for Conduit's top-level actors: a failed actor is
// stopped. The library's default restarts it, which would silently drop the
// failing message and, for a parent, stop all its children.
func Stopping() actor.SupervisorStrategy {
	return actor.NewOneForOneStrategy(0, 0, func(any) actor.Directive { return actor.StopDirective })
}

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

// Gauge counts abandoned handlers that are still running. It is safe for
// concurrent use.
type Gauge struct{ n atomic.Int64 }

// Load returns the number of abandoned handlers still running.
func (g *Gauge) Load() int64 { return g.n.Load() }

const (
	running int32 = iota
	returned
	abandoned
)

// Handle is one running handler goroutine.
type Handle struct {
	state atomic.Int32
	gauge *Gauge
}

// Go runs fn(ctx) in a new goroutine that recovers its panic and then calls
// done with the outcome (from that goroutine; done must not block). done is
// called even after Abandon, so the owner must ignore late outcomes.
func Go(ctx context.Context, gauge *Gauge, fn func(context.Context) (any, error), done func(Outcome)) *Handle {
	h := &Handle{gauge: gauge}
	go func() {
		var out Outcome
		defer func() {
			if !h.state.CompareAndSwap(running, returned) && h.gauge != nil {
				h.gauge.n.Add(-1) // it was abandoned and has now come back
			}
			done(out)
		}()
		defer func() {
			if v := recover(); v != nil {
				out = Outcome{Err: &PanicError{Value: v, Stack: debug.Stack()}}
			}
		}()
		res, err := fn(ctx)
		out = Outcome{Result: res, Err: err}
	}()
	return h
}

// Abandon records that the owner stopped waiting. It reports whether the
// handler was still running (and is now counted by the gauge).
func (h *Handle) Abandon() bool {
	if h.state.CompareAndSwap(running, abandoned) {
		if h.gauge != nil {
			h.gauge.n.Add(1)
		}
		return true
	}
	return false
}

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
