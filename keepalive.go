package conduit

import (
	"fmt"
	"sync"
	"time"
)

// DefaultKeepAliveFailures is how many failed keep-alive pings in a row
// end a client (Options.KeepAliveFailures).
const DefaultKeepAliveFailures = 3

// KeepAliveError is why a client with Options.KeepAlive ended itself:
// Failures pings in a row failed, the last with Err. It is the Err of the
// KindTransport *Error that Client.Err returns; find it with errors.As.
type KeepAliveError struct {
	Failures int
	Err      error
}

func (e *KeepAliveError) Error() string {
	return fmt.Sprintf("%d pings in a row failed: %v", e.Failures, e.Err)
}

// Unwrap exposes the last ping's error.
func (e *KeepAliveError) Unwrap() error { return e.Err }

// startKeepAlive starts the one goroutine of a client with a keep-alive;
// Close ends it (and waits for it), as does the client's own end. Without
// Options.KeepAlive nothing starts.
func (c *Client) startKeepAlive() {
	if c.opts.KeepAlive <= 0 {
		return
	}
	c.mu.Lock()
	keeper := &c.rareLocked().keeper
	c.mu.Unlock()
	keeper.Add(1)
	go c.keepAlive(keeper, c.opts.KeepAlive, max(c.opts.KeepAliveFailures, 0))
}

// keepAlive pings every interval; a ping still running at a tick skips
// that tick. failures pings failed in a row end the client.
func (c *Client) keepAlive(keeper *sync.WaitGroup, interval time.Duration, failures int) {
	defer keeper.Done()
	if failures == 0 {
		failures = DefaultKeepAliveFailures
	}
	closing, done := c.closingCtx(), c.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	failed := 0
	for {
		select {
		case <-closing.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		err := c.Ping(closing, WithTimeout(interval/2))
		switch {
		case closing.Err() != nil:
			return
		case err == nil:
			failed = 0
			continue
		}
		if failed++; failed >= failures {
			c.fail(&Error{Kind: KindTransport, Message: "keep-alive", Err: &KeepAliveError{Failures: failed, Err: err}})
			return
		}
	}
}

// fail ends the client with err, as Close does but keeping err as the
// reason (a client that already ended keeps its own). It is called from
// the keep-alive goroutine, which Close waits for: it must not wait for
// that goroutine itself.
func (c *Client) fail(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	c.mu.Unlock()
	c.opts.Logger.Warn("the server did not answer its keep-alive pings: client ended", "err", err)
	c.abort()
	c.redial.Lock() // wait for a renewal to give up and release its session
	s := c.sess()
	c.redial.Unlock()
	_ = s.rt.CloseWith(err) // the calls in flight fail with err too
	c.watchers.Wait()
	c.finish()
}
