package gateway

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// exclusive is the weight of a call that runs alone on its server.
const exclusive = 1 << 20

// parkGrace is how long a modern client's parked round may hold its gated
// server while another call waits for it: past it, the parked call is
// cancelled upstream and the waiting call runs (docs/decisions.md #38).
// A client that retries within it (conformance clients do, in
// milliseconds) keeps its call; one that abandoned its round, or takes
// longer while others wait, loses it: its retry is refused as not pending.
const parkGrace = 5 * time.Second

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
	// parked are the calls holding the gate whose modern client has their
	// input: when parked and the cancel that ends each, by a number.
	parked map[uint64]parkedCall
	nextID uint64
	// preempted counts parked calls cancelled because another call waited
	// past parkGrace.
	preempted atomic.Int64
	// onPreempt is told how many parked calls one wait cancelled.
	onPreempt func(n int)
}

type parkedCall struct {
	since  time.Time
	cancel func()
}

func newGate() *gate {
	return &gate{sem: semaphore.NewWeighted(exclusive), plain: map[string]bool{}, parked: map[uint64]parkedCall{}}
}

// park records that a call holding the gate waits for its client's next
// round; cancel ends it. The returned unpark forgets it (the client came
// back, or the call ended). A nil gate records nothing.
func (gt *gate) park(cancel func()) (unpark func()) {
	if gt == nil {
		return func() {}
	}
	gt.mu.Lock()
	gt.nextID++
	id := gt.nextID
	gt.parked[id] = parkedCall{since: time.Now(), cancel: cancel}
	gt.mu.Unlock()
	return func() {
		gt.mu.Lock()
		delete(gt.parked, id)
		gt.mu.Unlock()
	}
}

// preempt cancels the calls parked for at least parkGrace; it reports how
// many.
func (gt *gate) preempt() int {
	gt.mu.Lock()
	var stale []func()
	for id, p := range gt.parked {
		if time.Since(p.since) >= parkGrace {
			stale = append(stale, p.cancel)
			delete(gt.parked, id)
		}
	}
	gt.mu.Unlock()
	for _, cancel := range stale {
		cancel()
	}
	gt.preempted.Add(int64(len(stale)))
	return len(stale)
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
	for {
		// Wait at most parkGrace at a time: a round parked that long while
		// this call waits is cancelled, so no client that walked away
		// holds the server until its state expires.
		wctx, stop := context.WithTimeout(ctx, parkGrace)
		err := gt.sem.Acquire(wctx, w)
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if n := gt.preempt(); n > 0 && gt.onPreempt != nil {
			gt.onPreempt(n)
		}
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
