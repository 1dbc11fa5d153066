package supervisor

import (
	"slices"
	"time"
)

// Policy is when a failed server is started again: backoff doubling from
// InitialBackoff up to MaxBackoff, each wait jittered by ±20 %, and at most
// Intensity starts (the first one included) within any Period. The values
// must be positive: the caller fills its defaults.
type Policy struct {
	InitialBackoff, MaxBackoff time.Duration
	Intensity                  int
	Period                     time.Duration
	// Jitter returns a number in [0, 1).
	Jitter func() float64
}

// Restarts is the restart history of one server under a Policy: plain
// state, no timers, so that the numbers are testable without actors. The
// zero value is not usable: use NewRestarts. It is not safe for concurrent
// use: its owner (one actor) calls it.
type Restarts struct {
	p       Policy
	backoff time.Duration
	attempt int         // failures since the backoff was last reset
	starts  []time.Time // the starts within the last Period
}

// NewRestarts returns a fresh history under p.
func NewRestarts(p Policy) *Restarts { return &Restarts{p: p, backoff: p.InitialBackoff} }

// Started records a start at now.
func (r *Restarts) Started(now time.Time) { r.starts = append(r.starts, now) }

// Reset starts the backoff again from InitialBackoff: the server stayed
// ready long enough.
func (r *Restarts) Reset() { r.backoff, r.attempt = r.p.InitialBackoff, 0 }

// Attempt is the number of failures since the backoff was last reset.
func (r *Restarts) Attempt() int { return r.attempt }

// Failed records a failure at now. It reports park when the last Period
// already saw Intensity starts (a crash loop costs at most Intensity starts
// per Period); otherwise wait is how long to wait before the next start.
func (r *Restarts) Failed(now time.Time) (wait time.Duration, park bool) {
	r.attempt++
	r.starts = slices.DeleteFunc(r.starts, func(t time.Time) bool { return now.Sub(t) >= r.p.Period })
	if len(r.starts) >= r.p.Intensity {
		return 0, true
	}
	wait = time.Duration(float64(r.backoff) * (0.8 + 0.4*r.p.Jitter()))
	r.backoff = min(2*r.backoff, r.p.MaxBackoff)
	return wait, false
}
