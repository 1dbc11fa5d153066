package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
)

// dropInterval is how often, at most, a running command says what the
// client dropped.
const dropInterval = 10 * time.Second

// dropCounts are the client's drop counters: its Stats.
type dropCounts struct {
	stats conduit.Stats
}

// dropKind is one kind of drop: its key in the --json summary, the words
// of its line for one and for more, and its counter.
type dropKind struct {
	key       string
	one, many string
	count     func(dropCounts) int64
}

// dropKinds are the kinds of drop a summary reports, in its order.
var dropKinds = []dropKind{
	{"logs_rate_limited", "server log entry over the rate limit", "server log entries over the rate limit", func(d dropCounts) int64 { return d.stats.LogsDropped }},
	{"notifications_queue_full", "notification over the queue (1000 or 16 MiB waiting)", "notifications over the queue (1000 or 16 MiB waiting)", func(d dropCounts) int64 { return d.stats.NotificationsDropped }},
	{"notifications_discarded", "notification discarded at close", "notifications discarded at close", func(d dropCounts) int64 { return d.stats.NotificationsDiscarded }},
	{"input_busy", "input request refused as busy (over --max-server-requests)", "input requests refused as busy (over --max-server-requests)", func(d dropCounts) int64 { return d.stats.Busy }},
	{"input_rate_limited", "input request refused over the server's budget", "input requests refused over the server's budget", func(d dropCounts) int64 { return d.stats.RateLimited }},
	{"roots_withheld", "root withheld from the server (not a local file:// URI)", "roots withheld from the server (not local file:// URIs)", func(d dropCounts) int64 { return d.stats.RootsWithheld }},
	{"malformed", "malformed message from the server", "malformed messages from the server", func(d dropCounts) int64 { return d.stats.Malformed }},
	{"unknown_responses", "response to no request in flight", "responses to no request in flight", func(d dropCounts) int64 { return d.stats.UnknownResponses }},
	{"unsubscribed", "change notification outside the listen stream's acknowledged kinds", "change notifications outside the listen stream's acknowledged kinds", func(d dropCounts) int64 { return d.stats.Unsubscribed }},
}

// dropReporter says what the client dropped: on each tick while a command
// runs, and once when it ends, each time only what is new since the last
// summary, and nothing when nothing is. The summaries go to w: one line per
// kind, "conduit: dropped N <kind>", or with --json one object per summary,
// {"dropped": {"<key>": N, …}, "final": true|false}.
//
// Concurrency: the ticking goroutine and finish both call report; mu keeps
// last and the order of the summaries.
type dropReporter struct {
	counts func() dropCounts
	w      io.Writer
	json   bool

	mu   sync.Mutex
	last dropCounts

	stop chan struct{}
	done chan struct{}
}

// startDropReporter reports on every tick until finish.
func startDropReporter(counts func() dropCounts, w io.Writer, jsonOut bool, tick <-chan time.Time) *dropReporter {
	r := &dropReporter{counts: counts, w: w, json: jsonOut, stop: make(chan struct{}), done: make(chan struct{})}
	go r.run(tick)
	return r
}

func (r *dropReporter) run(tick <-chan time.Time) {
	defer close(r.done)
	for {
		select {
		case <-tick:
			r.report(false)
		case <-r.stop:
			return
		}
	}
}

// finish stops the ticking and prints the last summary. Call it once the
// client is closed, so that its counters are final.
func (r *dropReporter) finish() {
	close(r.stop)
	<-r.done
	r.report(true)
}

// report prints what was dropped since the last summary, if anything.
func (r *dropReporter) report(final bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.counts()
	dropped := map[string]int64{}
	var b strings.Builder
	for _, k := range dropKinds {
		n := k.count(now) - k.count(r.last)
		if n <= 0 {
			continue
		}
		dropped[k.key] = n
		text := k.many
		if n == 1 {
			text = k.one
		}
		fmt.Fprintf(&b, "conduit: dropped %d %s\n", n, text)
	}
	r.last = now
	if len(dropped) == 0 {
		return
	}
	if r.json {
		line, _ := json.Marshal(struct {
			Dropped map[string]int64 `json:"dropped"`
			Final   bool             `json:"final"`
		}{dropped, final})
		_, _ = r.w.Write(append(line, '\n'))
		return
	}
	_, _ = io.WriteString(r.w, b.String())
}

// watchDrops starts the drop summaries of a command's client: every
// dropInterval while it runs, and when the returned finish is called, after
// the client is closed. Every connecting command uses it.
func (a *app) watchDrops(counts func() dropCounts) (finish func()) {
	ticker := time.NewTicker(dropInterval)
	r := startDropReporter(counts, a.stderr, a.opts.json, ticker.C)
	return func() {
		ticker.Stop()
		r.finish()
	}
}

// clientDrops reads the drop counters of client.
func clientDrops(client *conduit.Client) func() dropCounts {
	return func() dropCounts { return dropCounts{stats: client.Stats()} }
}
