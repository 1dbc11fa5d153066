package actors

import (
	"context"
	"sync"
	"time"
)

// ownCancel is the ctx of a handler whose request has no deadline (a
// request child's: its parent is the connection's ctx): the parent's
// values and none of its Done, as context.WithoutCancel, with a
// cancellation of its own. It lives inside the input, and its Done channel
// is made only when asked for, so a handler that never looks at its ctx
// costs no allocation for it; context.WithoutCancel and
// context.WithCancel cost three a request.
//
// The input ends it (cancel) before any handler of the parent could have
// ended, as the WithCancel it replaces did: every driver ends its input
// when the parent ends. A ctx derived from it (context.WithCancel,
// context.AfterFunc) is told through AfterFunc, with no goroutine of its
// own, as one derived from a context.WithCancel would be.
type ownCancel struct {
	values context.Context // the parent without its cancellation

	mu     sync.Mutex
	done   chan struct{} // made by Done or cancel, closed by cancel
	err    error
	afters map[*afterFunc]struct{}
}

// afterFunc is one function registered by AfterFunc.
type afterFunc struct{ f func() }

// closedDone is the Done of an ownCancel cancelled before anyone asked.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (o *ownCancel) Deadline() (time.Time, bool) { return time.Time{}, false }

func (o *ownCancel) Done() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done == nil {
		o.done = make(chan struct{})
	}
	return o.done
}

func (o *ownCancel) Err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

func (o *ownCancel) Value(key any) any { return o.values.Value(key) }

// cancel ends it with context.Canceled; later calls do nothing.
func (o *ownCancel) cancel() {
	o.mu.Lock()
	if o.err != nil {
		o.mu.Unlock()
		return
	}
	o.err = context.Canceled
	if o.done == nil {
		o.done = closedDone
	} else {
		close(o.done)
	}
	afters := o.afters
	o.afters = nil
	o.mu.Unlock()
	for a := range afters {
		go a.f()
	}
}

// AfterFunc runs f in its own goroutine once it is cancelled (at once when
// it is), as context.AfterFunc does; stop unregisters f and reports
// whether it did so before f was started.
func (o *ownCancel) AfterFunc(f func()) (stop func() bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a := &afterFunc{f: f}
	if o.err != nil {
		go f()
		return func() bool { return false }
	}
	if o.afters == nil {
		o.afters = map[*afterFunc]struct{}{}
	}
	o.afters[a] = struct{}{}
	return func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		_, ok := o.afters[a]
		delete(o.afters, a)
		return ok
	}
}

// AfterFunc makes a handler's ctx one that context.WithCancel and
// context.AfterFunc tell of its end without a goroutine each.
func (c *handlerCtx) AfterFunc(f func()) (stop func() bool) {
	if o, ok := c.Context.(*ownCancel); ok {
		return o.AfterFunc(f)
	}
	return context.AfterFunc(c.Context, f)
}
