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
	a := &memConn{mu: mu, in: newInbox(mu)}
	b := &memConn{mu: mu, in: newInbox(mu)}
	a.peer, b.peer = b, a
	return a, b
}

// memConn is one end of a memory pair. Both ends share one mutex so that a
// Write can check the writer's and the reader's state in one step.
type memConn struct {
	mu     *sync.Mutex
	peer   *memConn
	in     inbox // written by peer, not yet read
	closed bool  // guarded by mu
}

// Read returns the next queued message, waiting for one if needed; io.EOF
// once the peer closed and the queue is drained.
func (c *memConn) Read(ctx context.Context) (Message, error) {
	return c.in.next(ctx, func() bool { return c.closed }, func() error {
		if c.peer.closed {
			return io.EOF
		}
		return nil
	})
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
	c.peer.in.push(Message{Data: msg})
	return nil
}

// Close closes this end. It drops messages not yet read by this end; those
// already queued for the peer stay readable. It always returns nil.
func (c *memConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		c.in.clear()
		c.in.poke()      // this end's Read sees ErrClosed
		c.peer.in.poke() // the peer's Read sees EOF once drained
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
