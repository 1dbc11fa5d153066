package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// errPeerClosed is returned by a memory Conn's Write once the other end has
// closed: nobody will ever read the message.
var errPeerClosed = fmt.Errorf("transport: peer closed: %w", io.ErrClosedPipe)

// NewMemoryPair returns two connected in-memory Conns, for tests and for
// running a server in the same process. A Write on one end is Read, as one
// Message, on the other, in order. Write copies data and never blocks: the
// queue is unbounded, so a slow reader costs memory, not progress.
//
// Closing one end makes the peer's Read return io.EOF once it has drained
// what was already queued, and the peer's Write fail. After Close, the
// closed end's own Read and Write return ErrClosed.
func NewMemoryPair() (client, server Conn) {
	mu := new(sync.Mutex)
	a := &memConn{mu: mu, ready: make(chan struct{}, 1), done: make(chan struct{})}
	b := &memConn{mu: mu, ready: make(chan struct{}, 1), done: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// memConn is one end of a memory pair. Both ends share one mutex so that a
// Write can check the writer's and the reader's state in one step.
type memConn struct {
	mu     *sync.Mutex
	peer   *memConn
	queue  [][]byte      // written by peer, not yet read; guarded by mu
	closed bool          // guarded by mu
	ready  chan struct{} // capacity 1: poked when queue grows
	done   chan struct{} // closed by Close
}

// Read returns the next queued message, waiting for one if needed.
func (c *memConn) Read(ctx context.Context) (Message, error) {
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return Message{}, ErrClosed
		case ctx.Err() != nil:
			c.mu.Unlock()
			return Message{}, ctx.Err()
		case len(c.queue) > 0:
			data := c.queue[0]
			c.queue[0] = nil // let the message be collected once read
			c.queue = c.queue[1:]
			if len(c.queue) == 0 {
				c.queue = nil // release the backing array
			}
			c.mu.Unlock()
			return Message{Data: data}, nil
		case c.peer.closed:
			c.mu.Unlock()
			return Message{}, io.EOF
		}
		c.mu.Unlock()

		// State is re-checked under the lock after every wake-up, so a
		// spurious or coalesced poke is harmless.
		select {
		case <-ctx.Done():
		case <-c.ready:
		case <-c.done:
		case <-c.peer.done:
		}
	}
}

// Write queues a copy of data for the peer. It never blocks.
func (c *memConn) Write(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	msg := bytes.Clone(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.peer.closed {
		return errPeerClosed
	}
	c.peer.queue = append(c.peer.queue, msg)
	select {
	case c.peer.ready <- struct{}{}:
	default: // a poke is already pending
	}
	return nil
}

// Close closes this end. It drops messages not yet read by this end; those
// already queued for the peer stay readable. It always returns nil.
func (c *memConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.queue = nil
		close(c.done)
	}
	return nil
}

// NewMemoryTransport wraps one end of a memory pair (or any Conn) as a
// Transport, for code that wants to connect by itself. The first Connect
// returns c; later ones fail, as c cannot be opened twice.
func NewMemoryTransport(c Conn) Transport {
	return &memTransport{conn: c}
}

type memTransport struct {
	mu   sync.Mutex
	conn Conn
	used bool
}

func (t *memTransport) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.conn == nil:
		return nil, errors.New("transport: memory transport has no Conn")
	case t.used:
		return nil, errors.New("transport: memory transport already connected")
	}
	t.used = true
	return t.conn, nil
}
