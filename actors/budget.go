package actors

import "sync/atomic"

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
// before held is read again, and a release lowers held before it reads
// waiting: one of the two sees the other, so no wake-up is missed.
type inboundBudget struct {
	max     int64
	held    atomic.Int64
	waiting atomic.Bool
	wake    chan struct{} // capacity 1
	done    chan struct{} // closed by close
}

func newInboundBudget(max int) *inboundBudget {
	return &inboundBudget{max: int64(max), wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// acquire holds n bytes, waiting while the bound would be passed; it
// reports false once the budget is closed.
func (b *inboundBudget) acquire(n int64) bool {
	for {
		h := b.held.Load()
		if h == 0 || h+n <= b.max {
			if b.held.CompareAndSwap(h, h+n) {
				b.waiting.Store(false)
				return true
			}
			continue
		}
		b.waiting.Store(true)
		if b.held.Load() != h {
			continue
		}
		select {
		case <-b.wake:
		case <-b.done:
			return false
		}
	}
}

// release gives back n bytes acquired.
func (b *inboundBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.held.Add(-n)
	if b.waiting.Load() {
		select {
		case b.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// close ends every wait, now and later: the reader is stopping.
func (b *inboundBudget) close() { close(b.done) }
