package transport

import (
	"context"
	"sync"
)

// inbox is the unbounded, ordered queue of messages a connection has
// received and Read has not returned yet, shared by the memory and HTTP
// connections. Writers push without blocking; Read waits on ready.
//
// The connection's mutex guards items; ready is a channel. A closing end
// pokes ready: Read re-checks the state after every wake-up.
type inbox struct {
	mu    *sync.Mutex
	items []Message
	ready chan struct{} // capacity 1: poked on every change Read must see
}

func newInbox(mu *sync.Mutex) inbox {
	return inbox{mu: mu, ready: make(chan struct{}, 1)}
}

// push queues m and wakes Read; mu is held.
func (q *inbox) push(m Message) {
	q.items = append(q.items, m)
	q.poke()
}

// poke wakes Read to re-check the connection's state; mu is held.
func (q *inbox) poke() {
	select {
	case q.ready <- struct{}{}:
	default: // a poke is already pending
	}
}

// clear drops what is queued; mu is held.
func (q *inbox) clear() { q.items = nil }

// next is Read's loop: the next message, in order. closed reports this end
// closed (→ ErrClosed); end, checked once the queue is drained, returns
// the error that ends the stream (io.EOF, a fatal error) or nil to wait.
// Both are called with mu held. State is re-checked under the lock after
// every wake-up, so a spurious or coalesced poke is harmless.
func (q *inbox) next(ctx context.Context, closed func() bool, end func() error) (Message, error) {
	for {
		q.mu.Lock()
		switch {
		case closed():
			q.mu.Unlock()
			return Message{}, ErrClosed
		case ctx.Err() != nil:
			q.mu.Unlock()
			return Message{}, ctx.Err()
		case len(q.items) > 0:
			m := q.items[0]
			q.items[0] = Message{} // let the message be collected once read
			q.items = q.items[1:]
			if len(q.items) == 0 {
				q.items = nil // release the backing array
			}
			q.mu.Unlock()
			return m, nil
		}
		if err := end(); err != nil {
			q.mu.Unlock()
			return Message{}, err
		}
		q.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-q.ready:
		}
	}
}
