package gateway

import (
	"context"
	"maps"
	"slices"
	"sync"

	"golang.org/x/sync/semaphore"
)

// exclusive is the weight of a call that runs alone on its server.
const exclusive = 1 << 20

// gate runs the calls of one upstream server whose input requests the wire
// cannot attribute (a legacy stdio server) so that every input is
// attributable: a call of a tool that may ask for input runs alone (the
// client attributes an input to the one call in flight); a tool that has
// run without asking is "plain", and its calls run side by side with other
// plain ones. A tool is plain once a call of it ended without an input
// request; it is no longer plain once one asks. An input that belongs to
// no call (a plain tool that asked while others ran: refused, never
// guessed) makes every tool of the server unknown again (stray).
type gate struct {
	sem   *semaphore.Weighted // FIFO: an exclusive call waiting holds back later ones
	mu    sync.Mutex
	plain map[string]bool
}

func newGate() *gate {
	return &gate{sem: semaphore.NewWeighted(exclusive), plain: map[string]bool{}}
}

// acquire waits for tool's turn within ctx; release, told whether the call
// asked for input, learns from it. A nil gate admits every call.
func (gt *gate) acquire(ctx context.Context, tool string) (release func(asked bool), err error) {
	if gt == nil {
		return func(bool) {}, nil
	}
	gt.mu.Lock()
	w := int64(exclusive)
	if gt.plain[tool] {
		w = 1
	}
	gt.mu.Unlock()
	if err := gt.sem.Acquire(ctx, w); err != nil {
		return nil, err
	}
	return func(asked bool) {
		gt.mu.Lock()
		if asked {
			delete(gt.plain, tool)
		} else if w == exclusive {
			gt.plain[tool] = true
		}
		gt.mu.Unlock()
		gt.sem.Release(w)
	}, nil
}

// stray forgets what the gate of server learnt: an input of it belonged
// to no call.
func (g *Gateway) stray(server string) {
	gt := g.serial[server]
	if gt == nil {
		return
	}
	gt.mu.Lock()
	clear(gt.plain)
	gt.mu.Unlock()
}

// listTurn takes a plain call's turn on every gated server, in the order
// of their names (a call holds one gate only, so this cannot deadlock), for
// the gateway's own listings.
func (g *Gateway) listTurn(ctx context.Context) (release func(), err error) {
	var held []*gate
	release = func() {
		for _, gt := range held {
			gt.sem.Release(1)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.serial)) {
		gt := g.serial[name]
		if err := gt.sem.Acquire(ctx, 1); err != nil {
			release()
			return nil, err
		}
		held = append(held, gt)
	}
	return release, nil
}
