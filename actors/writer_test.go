package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// recordingConn records what is written; it fails from the failAt-th
// write on (0: never).
type recordingConn struct {
	transport.Conn
	mu      sync.Mutex
	written []string
	failAt  int
}

func (c *recordingConn) Write(_ context.Context, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failAt > 0 && len(c.written)+1 >= c.failAt {
		return errors.New("broken pipe")
	}
	c.written = append(c.written, string(data))
	return nil
}

// Frames are written in the order sent, across batches and the swapping of
// their arrays, and close's channel is closed once all are written.
func TestWriterWritesInOrderAndFlushesAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &recordingConn{}
		w := startWriter(conn, DefaultMaxWriteQueueBytes, func(err error) { t.Errorf("unexpected write error %v", err) })
		var want []string
		for i := range 200 {
			f := fmt.Sprint(i)
			want = append(want, f)
			require.True(t, w.send([]byte(f)))
			if i%7 == 0 {
				synctest.Wait() // let the writer drain now and then
			}
		}
		<-w.close()
		assert.Equal(t, want, conn.written)
		assert.False(t, w.send([]byte("late")), "closed: refused")
	})
}

// A failed write ends the writer: onErr is told once, later frames are
// refused, and close's channel is closed.
func TestWriterEndsAtAFailedWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &recordingConn{failAt: 2}
		var errs []error
		w := startWriter(conn, DefaultMaxWriteQueueBytes, func(err error) { errs = append(errs, err) })
		w.send([]byte("1"))
		w.send([]byte("2"))
		w.send([]byte("3"))
		synctest.Wait()
		assert.Equal(t, []string{"1"}, conn.written)
		require.Len(t, errs, 1)
		assert.EqualError(t, errs[0], "broken pipe")
		assert.False(t, w.send([]byte("4")))
		<-w.close()
	})
}

// blockingConn's Write blocks until Close, as a pipe the server no longer
// reads; written counts the writes begun.
type blockingConn struct {
	transport.Conn
	closed  chan struct{}
	written chan []byte
}

func (c *blockingConn) Write(_ context.Context, data []byte) error {
	c.written <- data
	<-c.closed
	return transport.ErrClosed
}

// Past its bound the writer overflows: onErr is told once, with what was
// unsent (the message being written included), what is queued is dropped,
// later frames are refused, and the write that fails when the connection
// closes is not reported again.
func TestWriterOverflows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &blockingConn{closed: make(chan struct{}), written: make(chan []byte, 10)}
		var errs []error
		w := startWriter(conn, 300, func(err error) { errs = append(errs, err) })
		frame := make([]byte, 36) // 100 bytes counted each
		require.True(t, w.send(frame))
		synctest.Wait()
		assert.Len(t, conn.written, 1, "the first is being written")
		require.True(t, w.send(frame))
		require.True(t, w.send(frame))
		assert.False(t, w.stuck())
		assert.False(t, w.send([]byte("x")), "the fourth overflows: 3×100 + 1 + 64 > 300")
		require.Len(t, errs, 1)
		assert.Equal(t, &messages.WriteQueueOverflowError{Unsent: 3*36 + 1, Messages: 4, Limit: 300}, errs[0])
		assert.True(t, w.stuck())
		assert.False(t, w.send(frame), "closed")
		exited := w.close()
		close(conn.closed) // the connection closes: the blocked write fails
		<-exited
		assert.Len(t, conn.written, 1, "nothing queued was written")
		assert.Len(t, errs, 1, "the failed write is not reported")
	})
}

// One message bigger than the bound passes when nothing else is queued.
func TestWriterBigMessageAlonePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := &recordingConn{}
		w := startWriter(conn, 100, func(err error) { t.Errorf("unexpected error %v", err) })
		require.True(t, w.send(make([]byte, 1000)))
		synctest.Wait()
		require.True(t, w.send(make([]byte, 1000)), "the first was written: the queue is empty again")
		<-w.close()
		assert.Len(t, conn.written, 2)
	})
}
