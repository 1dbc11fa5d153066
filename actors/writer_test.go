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
		w := startWriter(conn, func(err error) { t.Errorf("unexpected write error %v", err) })
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
		w := startWriter(conn, func(err error) { errs = append(errs, err) })
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
