package host

import (
	"testing"
	"testing/synctest"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/actors"
)

func registered(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// As docs/supervision.md says: a server's client runs its connection actor
// in the Host's one actor system, the tree's, beside its supervisor ...
func TestServersShareTheHostsSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": stdio(RestartPolicy{})}},
			map[string]*fakeTransport{"a": {}, "b": {}}, Options{})
		synctest.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, name := range []string{"a", "b"} {
			assert.Same(t, h.tree.System(), h.servers[name].sup.opts.System, name)
		}
	})
}

// ... or in the program's own system when Options.Client.System names one:
// each ready server's connection actor is there, and gone after Close.
func TestServersUseTheProgramsSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := actors.NewSystem(nil)
		base := registered(sys)
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": stdio(RestartPolicy{})}},
			map[string]*fakeTransport{"a": {}, "b": {}}, Options{Client: conduit.Options{System: sys}})
		synctest.Wait()
		// Two connection actors, beside what the system itself may have
		// spawned meanwhile (the guardian of the top-level strategy, made
		// once): counted against each other, not against a fixed number.
		ready := registered(sys)
		assert.GreaterOrEqual(t, ready, base+2, "while both are ready")
		assert.NoError(t, h.Close())
		synctest.Wait()
		assert.Equal(t, ready-2, registered(sys), "after Close: both connection actors gone")
	})
}
