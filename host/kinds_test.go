package host

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A call to a server the host does not run is the caller's mistake
// (KindUsage), not a closed client: nothing was closed. A server stopped
// because the host closed is KindClosed: its client was.
func TestCallToAServerNotRunKinds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		off := stdio(RestartPolicy{})
		off.Conduit.Disabled = true
		fakes := map[string]*fakeTransport{"a": {tools: []string{"echo"}}, "off": {}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "off": off}}, fakes, Options{})
		synctest.Wait()
		ctx := context.Background()

		check := func(err error, kind conduit.Kind, sentinel error, text string) {
			t.Helper()
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, kind, ce.Kind)
			assert.ErrorIs(t, err, sentinel)
			assert.EqualError(t, err, text)
		}
		_, err := h.CallTool(ctx, "nope", "echo", nil)
		check(err, conduit.KindUsage, ErrUnknownServer, `conduit: tools/call: usage: no server "nope": host: unknown server`)
		_, err = h.CallTool(ctx, "off", "echo", nil)
		check(err, conduit.KindUsage, ErrStopped, `conduit: tools/call: usage: server "off" is disabled in the configuration: host: server stopped`)
		assert.Equal(t, 0, fakes["off"].count(), "a disabled server is never started")

		require.NoError(t, h.Close())
		_, err = h.CallTool(ctx, "a", "echo", nil)
		check(err, conduit.KindClosed, ErrStopped, `conduit: tools/call: closed: server "a" is stopped: host: server stopped`)
		_, err = h.CallTool(ctx, "off", "echo", nil)
		check(err, conduit.KindClosed, ErrStopped, `conduit: tools/call: closed: server "off" is stopped: host: server stopped`)
	})
}
