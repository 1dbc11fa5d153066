package actors

import (
	"context"
	"sync"

	"github.com/conduitmcp/conduit/transport"
)

// writer owns the transport's write side. The connection actor enqueues
// without blocking (a slow server must not stall the actor); one goroutine
// at a time writes in order. That goroutine exists only while something is
// queued: send starts it when none runs, and it exits when the queue is
// empty, so an idle connection has none. After close it flushes what is
// queued, then exits.
type writer struct {
	conn   transport.Conn
	onErr  func(error)
	exited chan struct{} // made by close; closed once closed and no goroutine writes

	mu      sync.Mutex
	queue   [][]byte
	spare   [][]byte // an empty backing array for the next queue
	running bool     // a writing goroutine exists
	closed  bool
}

func startWriter(conn transport.Conn, onErr func(error)) *writer {
	return &writer{conn: conn, onErr: onErr}
}

// send queues data; it reports false once the writer is closed.
func (w *writer) send(data []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	w.queue = append(w.queue, data)
	if !w.running {
		w.running = true
		go w.run()
	}
	return true
}

// close stops accepting; the channel it returns is closed once the queue
// is flushed (or a write failed).
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
	var written [][]byte // the last batch, emptied
	for {
		w.mu.Lock()
		if w.spare == nil && cap(written) <= keptCap {
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
		for i, data := range batch {
			batch[i] = nil
			if err := w.conn.Write(context.Background(), data); err != nil {
				w.mu.Lock()
				if !w.closed {
					w.closeLocked()
				}
				w.queue, w.spare = nil, nil
				w.mu.Unlock()
				w.onErr(err)
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
