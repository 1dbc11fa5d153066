package actors_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// deafConn is the client's end of a connection whose server stops reading
// once deafen is called: a Write then blocks until Close, as on a full
// pipe.
type deafConn struct {
	transport.Conn
	mu     sync.Mutex
	deaf   bool
	closed chan struct{}
	once   sync.Once
}

func (c *deafConn) deafen() {
	c.mu.Lock()
	c.deaf = true
	c.mu.Unlock()
}

func (c *deafConn) Write(ctx context.Context, data []byte) error {
	c.mu.Lock()
	deaf := c.deaf
	c.mu.Unlock()
	if deaf {
		select {
		case <-c.closed:
			return transport.ErrClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return c.Conn.Write(ctx, data)
}

func (c *deafConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// A server that stops reading while it sends pings fills the write queue
// to its bound: the connection closes with a KindTransport error carrying
// *WriteQueueOverflowError, the call in flight fails with it, and
// Stats.WriteQueueOverflows counts it. Before the bound every answer was
// queued without end.
func TestWriteQueueOverflowClosesTheConnection(t *testing.T) {
	clientSide, serverSide := transport.NewMemoryPair()
	deaf := &deafConn{Conn: clientSide, closed: make(chan struct{})}
	srv := newFakeServer(t, serverSide)
	type res struct {
		c   *conduit.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(deaf), conduit.Options{MaxWriteQueueBytes: 4096})
		ch <- res{c, err}
	}()
	srv.handshake("2025-11-25")
	r := <-ch
	require.NoError(t, r.err)
	c := r.c
	defer func() {
		_ = c.Close()
		_ = serverSide.Close()
		for range srv.in {
		}
	}()

	call := callAsync(c, "slow")
	require.Equal(t, "tools/call", srv.next()["method"])
	deaf.deafen()
	for i := range 100 {
		if serverSide.Write(context.Background(), fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)) != nil {
			break // the client closed
		}
	}
	// The answers count their bytes and 64 more each: the first one that
	// would take them past 4096 overflows. (The first answer, blocked in
	// its Write, is unsent too.)
	unsent, messages := 0, 0
	for i := 1; ; i++ {
		n := len(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i))
		unsent, messages = unsent+n, messages+1
		if unsent+messages*64 > 4096 {
			break
		}
	}
	out := <-call
	require.Error(t, out.err)
	var e *conduit.Error
	require.ErrorAs(t, out.err, &e)
	assert.Equal(t, conduit.KindTransport, e.Kind)
	var overflow *conduit.WriteQueueOverflowError
	require.ErrorAs(t, out.err, &overflow)
	assert.Equal(t, conduit.WriteQueueOverflowError{Unsent: unsent, Messages: messages, Limit: 4096}, *overflow)
	assert.EqualError(t, out.err, fmt.Sprintf("conduit: tools/call: transport: the server stopped reading its input: 1 KiB unsent in %d messages, over the limit of 4 KiB", messages))
	<-c.Done()
	assert.Equal(t, int64(1), c.Stats().WriteQueueOverflows)
	var ended *conduit.WriteQueueOverflowError
	require.ErrorAs(t, c.Err(), &ended, "the client ended for that reason")
	assert.Equal(t, *overflow, *ended)
}
