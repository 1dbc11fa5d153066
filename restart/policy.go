package restart

import (
	"slices"
	"time"
)

// Policy is when a failed server is started again, the one restart policy
// of a host's servers (host.RestartPolicy is this type): a zero field takes
// its default (WithDefaults).
type Policy struct {
	// InitialBackoff is the wait before the first restart (0.5 s); each
	// further one doubles it, up to MaxBackoff (30 s). Each wait is
	// jittered by ±20 %.
	InitialBackoff, MaxBackoff time.Duration
	// Intensity is the most starts (the first one included) within any
	// Period (5 in 60 s): a failure when the last Period saw Intensity
	// starts parks the server.
	Intensity int
	Period    time.Duration
	// ResetAfter is how long a server must stay ready for its backoff to
	// start again from InitialBackoff (60 s).
	ResetAfter time.Duration
	// Revive is how long a parked server waits before it is started again
	// with a fresh restart history (5 min), so that the outage of a remote
	// service heals by itself; a negative Revive ("never" in a host's
	// file) leaves it parked until it is restarted by hand or its
	// configuration changes.
	Revive time.Duration
}

// The defaults of a Policy's fields.
const (
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	DefaultIntensity      = 5
	DefaultPeriod         = 60 * time.Second
	DefaultResetAfter     = 60 * time.Second
	DefaultRevive         = 5 * time.Minute
)

// WithDefaults fills p's zero fields; a MaxBackoff below InitialBackoff is
// raised to it.
func (p Policy) WithDefaults() Policy {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&p.InitialBackoff, DefaultInitialBackoff)
	set(&p.MaxBackoff, DefaultMaxBackoff)
	set(&p.Period, DefaultPeriod)
	set(&p.ResetAfter, DefaultResetAfter)
	if p.Revive == 0 {
		p.Revive = DefaultRevive
	}
	if p.Intensity <= 0 {
		p.Intensity = DefaultIntensity
	}
	p.MaxBackoff = max(p.MaxBackoff, p.InitialBackoff)
	return p
}

// Restarts is the restart history of one server under a Policy: plain
// state, no timers, so that the numbers are testable without actors. The
// zero value is not usable: use NewRestarts. It is not safe for concurrent
// use: its owner (one actor) calls it.
type Restarts struct {
	p       Policy
	jitter  func() float64
	backoff time.Duration
	attempt int         // failures since the backoff was last reset
	starts  []time.Time // the starts within the last Period
}

// NewRestarts returns a fresh history under p (WithDefaults); jitter
// returns a number in [0, 1) that spreads each wait.
func NewRestarts(p Policy, jitter func() float64) *Restarts {
	p = p.WithDefaults()
	return &Restarts{p: p, jitter: jitter, backoff: p.InitialBackoff}
}

// Policy is the policy the history follows, its defaults filled.
func (r *Restarts) Policy() Policy { return r.p }

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
	wait = time.Duration(float64(r.backoff) * (0.8 + 0.4*r.jitter()))
	r.backoff = min(2*r.backoff, r.p.MaxBackoff)
	return wait, false
}
