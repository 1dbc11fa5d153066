package actors

import (
	"context"
	"sync"

	"github.com/conduitmcp/conduit/transport"
)

// writer owns the transport's write side. The connection actor enqueues
// without blocking (a slow server must not stall the actor); one goroutine
// writes in order. After close it flushes what is queued, then exits.
type writer struct {
	conn   transport.Conn
	onErr  func(error)
	wake   chan struct{} // capacity 1
	exited chan struct{}

	mu     sync.Mutex
	queue  [][]byte
	closed bool
}

func startWriter(conn transport.Conn, onErr func(error)) *writer {
	w := &writer{conn: conn, onErr: onErr, wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go w.run()
	return w
}

// send queues data; it reports false once the writer is closed.
func (w *writer) send(data []byte) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, data)
	w.mu.Unlock()
	w.signal()
	return true
}

// close stops accepting; run exits once the queue is flushed.
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run() {
	defer close(w.exited)
	for range w.wake {
		w.mu.Lock()
		batch, closed := w.queue, w.closed
		w.queue = nil
		w.mu.Unlock()
		for _, data := range batch {
			if err := w.conn.Write(context.Background(), data); err != nil {
				w.mu.Lock()
				w.closed, w.queue = true, nil
				w.mu.Unlock()
				w.onErr(err)
				return
			}
		}
		if closed {
			w.mu.Lock()
			empty := len(w.queue) == 0
			w.mu.Unlock()
			if empty {
				return
			}
			w.signal()
		}
	}
}
