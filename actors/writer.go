package actors

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// DefaultMaxWriteQueueBytes bounds the bytes queued for the server and not
// yet written when Config.MaxWriteQueueBytes is 0.
const DefaultMaxWriteQueueBytes = 16 << 20

// frameOverhead is what a queued message costs beyond its bytes, counted
// against the bound: its slice in the queue and its allocation's rounding.
// A backlog of small answers (pings) costs more than their bytes.
const frameOverhead = 64

// writer owns the transport's write side. The connection actor enqueues
// without blocking (a slow server must not stall the actor); one goroutine
// at a time writes in order. That goroutine exists only while something is
// queued: send starts it when none runs, and it exits when the queue is
// empty, so an idle connection has none. After close it flushes what is
// queued, then exits.
//
// What is queued and not yet written is bounded in bytes (limit, each
// message counted with frameOverhead): a server that stops reading its
// input while it makes the client answer (pings, say) would otherwise grow
// the queue without end. A message that would take the queue past the
// bound overflows it: the writer closes, drops what is queued and tells
// onErr a *messages.WriteQueueOverflowError; its goroutine, stuck in a
// Write the server does not read, ends when the connection is closed. A
// message alone in the queue passes whatever its size: the bound is on a
// backlog, not on one message.
type writer struct {
	conn   transport.Conn
	onErr  func(error)
	limit  int
	exited chan struct{} // made by close; closed once closed and no goroutine writes

	mu         sync.Mutex
	queue      [][]byte
	spare      [][]byte // an empty backing array for the next queue
	unsent     int      // bytes of the queue and of the batch being written
	frames     int      // their messages
	running    bool     // a writing goroutine exists
	closed     bool
	overflowed atomic.Bool // closed by an overflow: nothing more is written
}

func startWriter(conn transport.Conn, limit int, onErr func(error)) *writer {
	return &writer{conn: conn, limit: limit, onErr: onErr}
}

// send queues data; it reports false once the writer is closed, or when
// data overflowed the queue (which closes it).
func (w *writer) send(data []byte) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	if w.frames > 0 && w.unsent+len(data)+(w.frames+1)*frameOverhead > w.limit {
		err := &messages.WriteQueueOverflowError{Unsent: w.unsent + len(data), Messages: w.frames + 1, Limit: w.limit}
		w.closeLocked()
		w.overflowed.Store(true)
		w.queue, w.spare = nil, nil
		if !w.running {
			close(w.exited)
		}
		w.mu.Unlock()
		w.onErr(err)
		return false
	}
	w.queue = append(w.queue, data)
	w.unsent += len(data)
	w.frames++
	if !w.running {
		w.running = true
		go w.run()
	}
	w.mu.Unlock()
	return true
}

// stuck reports whether the writer overflowed: what it still holds will
// never be written, so close need not wait for it.
func (w *writer) stuck() bool { return w.overflowed.Load() }

// close stops accepting; the channel it returns is closed once the queue
// is flushed (or a write failed, or the queue overflowed and the write in
// progress returned).
func (w *writer) close() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.closeLocked()
		if !w.running {
			close(w.exited)
		}
	}
	return w.exited
}

// closeLocked stops accepting and makes exited: only now, so an idle
// connection has no channel for it. w.mu is held; w is not closed yet.
func (w *writer) closeLocked() {
	w.closed = true
	w.exited = make(chan struct{})
}

// run writes batches until the queue is empty. A failed write ends the
// writer: what is queued is dropped and onErr is told, before exited is
// closed.
//
// The queue and the batch being written swap backing arrays (a small one
// is kept), so a steady flow of frames appends without allocating.
func (w *writer) run() {
	var written [][]byte     // the last batch, emptied
	sent, sentFrames := 0, 0 // its bytes and messages
	for {
		w.mu.Lock()
		w.unsent -= sent
		w.frames -= sentFrames
		if w.spare == nil && cap(written) <= keptCap && !w.overflowed.Load() {
			w.spare = written
		}
		batch := w.queue
		if len(batch) == 0 {
			if w.queue == nil {
				w.queue, w.spare = w.spare, nil // the next send appends to it
			}
			w.idleLocked()
			w.mu.Unlock()
			return
		}
		w.queue, w.spare = w.spare, nil
		w.mu.Unlock()
		sent, sentFrames = 0, len(batch)
		for i, data := range batch {
			batch[i] = nil
			sent += len(data)
			if w.overflowed.Load() {
				continue // the rest of the batch is dropped with the queue
			}
			if err := w.conn.Write(context.Background(), data); err != nil {
				w.mu.Lock()
				if !w.closed {
					w.closeLocked()
				}
				w.queue, w.spare = nil, nil
				overflowed := w.overflowed.Load()
				w.mu.Unlock()
				if !overflowed { // else onErr was told why already
					w.onErr(err)
				}
				w.mu.Lock()
				w.idleLocked()
				w.mu.Unlock()
				return
			}
		}
		written = batch[:0]
	}
}

// idleLocked marks the goroutine gone; w.mu is held.
func (w *writer) idleLocked() {
	w.running = false
	if w.closed {
		close(w.exited)
	}
}
