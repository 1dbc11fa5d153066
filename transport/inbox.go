package transport

import (
	"context"
	"sync"
)

// inbox is the ordered queue of messages a connection has received and
// Read has not returned yet, shared by the memory and HTTP connections.
// Writers push without blocking; Read waits on ready. A bounded inbox
// (HTTP's) also lets a writer wait for room (waitRoom) before it pushes,
// so that a stream's reader stops reading while Read's caller is behind.
//
// The connection's mutex guards items; ready is a channel. A closing end
// pokes ready: Read re-checks the state after every wake-up.
type inbox struct {
	mu    *sync.Mutex
	items []Message
	ready chan struct{} // capacity 1: poked on every change Read must see
	// bytes is the Data queued; max (0: unbounded) is what waitRoom
	// waits under; room is signalled when Read takes one and at every
	// poke (a close).
	bytes int64
	max   int64
	room  *sync.Cond
}

// MaxQueuedBytes bounds the bytes of the messages a Streamable HTTP
// connection has read from its streams and Read has not returned: past it
// the streams are not read on until Read catches up (the server's writes
// wait). A message larger than it is queued once the queue is empty.
const MaxQueuedBytes = 16 << 20

func newInbox(mu *sync.Mutex) inbox {
	return inbox{mu: mu, ready: make(chan struct{}, 1)}
}

// newBoundedInbox is an inbox whose writers may wait under max bytes.
func newBoundedInbox(mu *sync.Mutex, max int64) inbox {
	return inbox{mu: mu, ready: make(chan struct{}, 1), max: max, room: sync.NewCond(mu)}
}

// push queues m and wakes Read; mu is held.
func (q *inbox) push(m Message) {
	q.items = append(q.items, m)
	q.bytes += int64(len(m.Data))
	q.poke()
}

// waitRoom waits, mu held (and released meanwhile), until the queue has
// room for n bytes or stop reports true; an unbounded inbox has room.
func (q *inbox) waitRoom(n int64, stop func() bool) {
	for q.room != nil && q.bytes > 0 && q.bytes+n > q.max && !stop() {
		q.room.Wait()
	}
}

// poke wakes Read to re-check the connection's state, and the writers
// waiting for room; mu is held.
func (q *inbox) poke() {
	select {
	case q.ready <- struct{}{}:
	default: // a poke is already pending
	}
	if q.room != nil {
		q.room.Broadcast()
	}
}

// clear drops what is queued; mu is held.
func (q *inbox) clear() { q.items, q.bytes = nil, 0 }

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
			q.bytes -= int64(len(m.Data))
			if q.room != nil {
				q.room.Broadcast()
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
