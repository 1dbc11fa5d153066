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
		// Two connection actors and the guardian of the top-level strategy.
		assert.Equal(t, base+3, registered(sys), "while both are ready")
		assert.NoError(t, h.Close())
		synctest.Wait()
		assert.Equal(t, base+1, registered(sys), "after Close: the guardian alone")
	})
}
