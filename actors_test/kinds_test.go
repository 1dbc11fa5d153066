package actors_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// The caller's own mistakes are KindUsage, found before anything is sent:
// never KindProtocol ("the server broke the protocol"), in either era.
func TestCallersMistakesAreUsage(t *testing.T) {
	mistakes := []struct {
		name string
		do   func(c *conduit.Client) error
		want string
	}{
		{"arguments that do not encode", func(c *conduit.Client) error {
			_, err := c.CallTool(context.Background(), "x", map[string]any{"ch": make(chan int)})
			return err
		}, "conduit: tools/call: usage: arguments could not be encoded: json: unsupported type: chan int"},
		{"params that do not encode", func(c *conduit.Client) error {
			return c.Call(context.Background(), "x/y", map[string]any{"f": func() {}}, nil)
		}, "conduit: x/y: usage: params could not be encoded: json: unsupported type: func()"},
		{"params that are not JSON", func(c *conduit.Client) error {
			return c.Call(context.Background(), "x/y", json.RawMessage(`{"a":`), nil)
		}, "conduit: x/y: usage: params are not valid JSON"},
		{"a progress token that does not encode", func(c *conduit.Client) error {
			_, err := c.CallTool(context.Background(), "x", nil, conduit.WithProgressToken(make(chan int)))
			return err
		}, "conduit: tools/call: usage: _meta progressToken: json: unsupported type: chan int"},
		{"AwaitTask without Options.Tasks", func(c *conduit.Client) error {
			_, err := c.AwaitTask(context.Background(), &conduit.Task{TaskID: "t-1"})
			return err
		}, "conduit: tasks/get: usage: tasks need Options.Tasks"},
	}
	for _, eraName := range []string{"legacy", "modern"} {
		for _, m := range mistakes {
			t.Run(eraName+"/"+m.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var c *conduit.Client
					var srv *fakeServer
					if eraName == "legacy" {
						c, srv = connect(t, conduit.Options{}, "2025-11-25")
					} else {
						c, srv = connectModernFake(t, conduit.Options{})
					}
					err := m.do(c)
					var ce *conduit.Error
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, conduit.KindUsage, ce.Kind)
					assert.Equal(t, m.want, err.Error())
					synctest.Wait()
					select {
					case f := <-srv.in:
						t.Fatalf("a mistake of the caller's was sent: %s", f.raw)
					default:
					}
				})
			})
		}
	}
}

// A panic in one of the connection's own child actors (here the mailbox,
// whose logger panics as it drops a malformed log entry) is Conduit's
// fault: the calls in flight and the client end with KindInternal, not
// KindProtocol ("the server broke the protocol").
func TestChildActorPanicIsInternal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := conduit.Handlers{Log: func(context.Context, conduit.NotificationContext, *conduit.LoggingMessage) {}}
		c, srv := connect(t, conduit.Options{Handlers: h, Logger: slog.New(panicOn("malformed server log entry dropped"))}, "2025-11-25")
		d := callAsync(c, "x")
		srv.next()
		// A log entry without params is malformed: the mailbox logs it.
		srv.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message"})
		r := <-d
		var ce *conduit.Error
		require.ErrorAs(t, r.err, &ce)
		assert.Equal(t, conduit.KindInternal, ce.Kind)
		assert.Equal(t, "conduit: tools/call: internal: internal actor failed: logger bug", r.err.Error())
		<-c.Done()
		assert.Equal(t, "conduit: internal: internal actor failed: logger bug", c.Err().Error())
		require.NoError(t, c.Close())
	})
}
