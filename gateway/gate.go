package gateway

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
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
	// waiting counts the calls waiting for their turn now; onWait, when
	// set, is told of each call that has to wait, and how many wait.
	waiting atomic.Int64
	onWait  func(turn string, waiting int64)
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
	if gt.sem.TryAcquire(w) {
		return gt.releaser(tool, w), nil
	}
	n := gt.waiting.Add(1)
	defer gt.waiting.Add(-1)
	if gt.onWait != nil {
		gt.onWait(tool, n)
	}
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
	return gt.releaser(tool, w), nil
}

// releaser ends a turn of weight w taken for tool.
func (gt *gate) releaser(tool string, w int64) func(asked bool) {
	return func(asked bool) {
		gt.mu.Lock()
		if asked {
			delete(gt.plain, tool)
		} else if w == exclusive {
			gt.plain[tool] = true
		}
		gt.mu.Unlock()
		gt.sem.Release(w)
	}
}

// stray forgets what the gate of server learnt: an input of it belonged
// to no call.
func (g *Gateway) stray(server string) { g.serial[server].stray() }

// stray forgets what gt learnt: an input belonged to no call. A nil gate
// learns nothing.
func (gt *gate) stray() {
	if gt == nil {
		return
	}
	gt.mu.Lock()
	clear(gt.plain)
	gt.mu.Unlock()
}

// plainTurn takes a plain call's turn on gt (nil: none to take).
func (gt *gate) plainTurn(ctx context.Context) (release func(), err error) {
	if gt == nil {
		return func() {}, nil
	}
	if err := gt.sem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	return func() { gt.sem.Release(1) }, nil
}

// Gated reports whether the calls of s go through a gate (decision 37):
// a stdio server not pinned to the modern era, whose wire cannot say
// which call an input request belongs to.
func Gated(s host.Server) bool { return s.URL == "" && s.Conduit.Era != conduit.EraModern }

// Gate is the gate of one gated server (Gated) for an Upstream that runs
// it where the server runs (Gating: package cluster's grains, so that the
// calls of every member queue at one gate): a call that may ask for input
// runs alone, a tool that ran without asking becomes plain and runs beside
// other plain calls, and a call parked on a modern client's round is
// cancelled once another has waited ParkGrace (decisions #37, #38). Its
// methods are safe for concurrent use; a nil Gate admits every call.
type Gate struct{ gt *gate }

// inner is g's gate; nil (admits every call) for a nil Gate.
func (g *Gate) inner() *gate {
	if g == nil {
		return nil
	}
	return g.gt
}

// ParkGrace is how long a parked call may hold a Gate while another call
// waits for it.
const ParkGrace = parkGrace

// NewGate returns an open gate; onPreempt, when set, is told how many
// parked calls one wait cancelled, and onWait of each call that has to
// wait for its turn (its turn's key, and how many wait now).
func NewGate(onPreempt func(n int), onWait func(turn string, waiting int64)) *Gate {
	gt := newGate()
	gt.onPreempt, gt.onWait = onPreempt, onWait
	return &Gate{gt}
}

// Acquire waits for turn's turn (a tool's name, "prompt NAME", "resource
// URI") within ctx; release, told whether the call asked for input, learns
// from it.
func (g *Gate) Acquire(ctx context.Context, turn string) (release func(asked bool), err error) {
	return g.inner().acquire(ctx, turn)
}

// Plain takes a plain call's turn, for a request that asks no input (a
// listing, a subscription, a log level).
func (g *Gate) Plain(ctx context.Context) (release func(), err error) {
	return g.inner().plainTurn(ctx)
}

// Park records that a call holding the gate waits for its modern client's
// next round; cancel ends it. unpark forgets it.
func (g *Gate) Park(cancel func()) (unpark func()) { return g.inner().park(cancel) }

// Stray forgets what the gate learnt: an input belonged to no call.
func (g *Gate) Stray() { g.inner().stray() }

// Preempted counts the parked calls it cancelled.
func (g *Gate) Preempted() int64 {
	if g == nil {
		return 0
	}
	return g.gt.preempted.Load()
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
