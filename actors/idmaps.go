package actors

import (
	"sync"

	"github.com/conduitmcp/conduit/messages"
)

// idMaps hands out empty maps by request id for a connection's busy
// period and takes them back, cleared, when the period ends (decision 60):
// an idle connection keeps no map (a map keeps its largest size), and the
// next busy period of any connection, the handshake's one call first of
// all, reuses the group a map allocates on its first insert rather than
// leaving it as garbage. The pool lets go of what it holds at a collection.
type idMaps[V any] struct{ pool sync.Pool }

var (
	pendingMaps idMaps[*callRequest] // connection.pending
	trackedMaps idMaps[*trackedCall] // tracker.calls
)

// get is an empty map.
func (p *idMaps[V]) get() map[messages.ID]V {
	if m, ok := p.pool.Get().(map[messages.ID]V); ok {
		return m
	}
	return map[messages.ID]V{}
}

// put takes back m, which its owner no longer refers to.
func (p *idMaps[V]) put(m map[messages.ID]V) {
	if m == nil {
		return
	}
	clear(m)
	p.pool.Put(m)
}
