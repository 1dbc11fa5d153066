package actors

import (
	"sync"
	"sync/atomic"
)

// DefaultMaxInboundBytes is how many bytes of server messages the reader
// goroutine may have handed to the actors and they have not finished with
// (Config.MaxInboundBytes).
const DefaultMaxInboundBytes = 16 << 20

// DefaultMaxWaitingNotificationBytes is how many bytes of notifications
// and log entries may wait for their callback, beside the
// MaxWaitingNotifications entries (Config.MaxWaitingNotificationBytes).
const DefaultMaxWaitingNotificationBytes = 16 << 20

// inboundBudget bounds the bytes of the messages the reader goroutine has
// read and the actors have not finished with: the connection actor
// releases a message once it has handled it, the mailbox a notification
// once it has admitted (queued or dropped) it. Past the bound the reader
// waits before it reads on, so the server's pipe or socket fills and its
// writes wait: backpressure, on the hops that never wait for a callback
// (a slow notification callback drops entries at the queue, it never
// holds the reader), so a call's answer is never held behind it. A message
// larger than the bound is read once nothing else is held.
//
// One goroutine (the reader) acquires; any may release. waiting is set
// (under mu) before held is read again, and a release lowers held before
// it reads waiting: one of the two sees the other, so no wake-up is
// missed. It is part of shared and makes its channel only when the reader
// first waits: an idle connection's budget is the struct (decision 60; two
// channels made at start cost 224 bytes a connection).
type inboundBudget struct {
	max     int64
	held    atomic.Int64
	waiting atomic.Bool

	mu     sync.Mutex
	closed bool
	wake   chan struct{} // capacity 1; made by the first wait, closed by close
}

// init readies a zero budget of max bytes.
func (b *inboundBudget) init(max int) *inboundBudget {
	b.max = int64(max)
	return b
}

func newInboundBudget(max int) *inboundBudget { return new(inboundBudget).init(max) }

// acquire holds n bytes, waiting while the bound would be passed; it
// reports false once the budget is closed.
func (b *inboundBudget) acquire(n int64) bool {
	for {
		h := b.held.Load()
		if b.fits(h, n) {
			if b.held.CompareAndSwap(h, h+n) {
				return true
			}
			continue
		}
		b.mu.Lock()
		b.waiting.Store(true)
		if b.closed {
			b.mu.Unlock()
			return false
		}
		if b.fits(b.held.Load(), n) {
			b.waiting.Store(false)
			b.mu.Unlock()
			continue
		}
		if b.wake == nil {
			b.wake = make(chan struct{}, 1)
		}
		wake := b.wake
		b.mu.Unlock()
		<-wake
		b.waiting.Store(false)
	}
}

// fits says whether n more bytes may be held when h are.
func (b *inboundBudget) fits(h, n int64) bool { return h == 0 || h+n <= b.max }

// release gives back n bytes acquired.
func (b *inboundBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.held.Add(-n)
	if b.waiting.Load() {
		b.mu.Lock()
		if b.wake != nil && !b.closed {
			select {
			case b.wake <- struct{}{}:
			default: // a wake-up is pending already
			}
		}
		b.mu.Unlock()
	}
}

// close ends every wait, now and later: the reader is stopping.
func (b *inboundBudget) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	if b.wake != nil {
		close(b.wake)
	}
}
