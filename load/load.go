// Package load drives an MCP server with many concurrent tool calls through
// Conduit clients, answering the server's input requests (sampling,
// elicitation, roots, modern input_required rounds) on the way, and
// measures throughput, latency and what the input guards did. The conduit
// CLI's load command wires its flags to Run; a Go benchmark can call Run
// the same way.
//
//	rep, err := load.Run(ctx, load.Config{
//		Transport:   &transport.Command{Path: "my-server"},
//		Options:     conduit.Options{Handlers: handlers},
//		Sessions:    4,
//		Concurrency: 8,
//		Calls:       2000,
//		Mix:         []load.Call{{Tool: "search", Args: json.RawMessage(`{"q": "{{n}}"}`)}},
//	})
package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// Config is the shape of a load. Calls or Duration (or both: the first
// reached ends the load) is required.
type Config struct {
	// Transport reaches the server; each session Connects it once. A
	// *transport.Command starts one server process per session: a stdio
	// server speaks to one client, so sessions cannot share a process.
	Transport transport.Transport
	// Options configure every session's client. Their handlers answer the
	// input requests; Run wraps them to measure the time they take, and
	// wraps Audit to count the outcomes (the given Audit is still called).
	Options conduit.Options
	// Sessions is the number of clients (1 when zero), each its own
	// connection and session.
	Sessions int
	// Concurrency is the number of callers per session (1 when zero).
	Concurrency int
	// Calls is the number of counted calls in all, over every session.
	Calls int
	// Duration is how long calls are started after the warm-up.
	Duration time.Duration
	// Rate, when positive, starts calls at this many per second in all,
	// whether or not earlier calls have ended (open loop); a call waits for
	// a free caller when all are busy, and its latency runs from when it
	// should have been sent. Zero: each caller sends its next call when the
	// last ends (closed loop).
	Rate float64
	// Warmup runs the load this long before counting anything.
	Warmup time.Duration
	// Stages, when set, ramp the load linearly from target to target, as
	// k6's ramping executors do: the rate (open loop, in place of Rate),
	// or with RampCallers the callers of each session (closed loop, in
	// place of Concurrency, which becomes the highest target). The stages
	// start with the load: the warm-up is their first part, and they set
	// the duration (Duration must be zero; Calls may still end the load
	// sooner).
	Stages      []Stage
	RampCallers bool
	// Mix are the tools called, each picked by its weight.
	Mix []Call
	// UnlimitedInput lifts the input budget and the cap on server requests
	// at once (Options.InputRateLimit, InputBurst, MaxServerRequests) for
	// the run; otherwise Options' limits apply and the report shows them
	// bite (busy, rate_limited).
	UnlimitedInput bool
	// Progress, when set, is called about every ProgressInterval (500 ms
	// when zero) from one goroutine, and once at the end.
	Progress         func(Progress)
	ProgressInterval time.Duration
}

// unlimitedServerRequests is MaxServerRequests under UnlimitedInput: far
// more than any load's calls in flight can ask at once.
const unlimitedServerRequests = 1 << 20

// ErrConfig reports a Config that cannot run.
var ErrConfig = errors.New("load: config")

func (cfg *Config) check() error {
	switch {
	case cfg.Transport == nil:
		return fmt.Errorf("%w: no Transport", ErrConfig)
	case cfg.Calls <= 0 && cfg.Duration <= 0 && len(cfg.Stages) == 0:
		return fmt.Errorf("%w: give Calls, Duration or Stages", ErrConfig)
	case cfg.Calls < 0 || cfg.Duration < 0 || cfg.Warmup < 0 || cfg.Sessions < 0 || cfg.Concurrency < 0:
		return fmt.Errorf("%w: negative Calls, Duration, Warmup, Sessions or Concurrency", ErrConfig)
	case cfg.Rate < 0 || math.IsInf(cfg.Rate, 0) || math.IsNaN(cfg.Rate):
		return fmt.Errorf("%w: Rate %g", ErrConfig, cfg.Rate)
	case len(cfg.Stages) == 0 && cfg.RampCallers:
		return fmt.Errorf("%w: RampCallers without Stages", ErrConfig)
	case len(cfg.Stages) == 0:
		return nil
	case cfg.Rate > 0 || cfg.Duration > 0:
		return fmt.Errorf("%w: Stages set the rate and the duration: give Stages or Rate and Duration", ErrConfig)
	case ramp(cfg.Stages).total() <= cfg.Warmup:
		return fmt.Errorf("%w: the stages (%s) end before the warm-up (%s)", ErrConfig, ramp(cfg.Stages).total(), cfg.Warmup)
	}
	if err := checkStages(cfg.Stages); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// Run connects the sessions, runs the load, closes the sessions and
// reports. It fails before any call when a session cannot connect, or the
// config is wrong. Calls that fail are counted in the report, not returned.
// When ctx ends, calls in flight are cancelled and the report says
// Interrupted.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Sessions, cfg.Concurrency = max(cfg.Sessions, 1), max(cfg.Concurrency, 1)
	stages := ramp(cfg.Stages)
	if len(stages) > 0 {
		cfg.Duration = stages.total() - cfg.Warmup
		if cfg.RampCallers {
			cfg.Concurrency = max(1, int(math.Ceil(stages.peak())))
		}
	}
	m, err := newMix(cfg.Mix)
	if err != nil {
		return nil, err
	}
	in := newInputMeter()
	opts, err := instrument(cfg, in)
	if err != nil {
		return nil, err
	}
	procs := watchProcesses(cfg.Transport, opts.Logger)

	clients, err := connectAll(ctx, procs.transport, opts, cfg.Sessions)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	in.countFrom(start.Add(cfg.Warmup))
	expected := cfg.Duration
	if expected == 0 && cfg.Rate > 0 {
		expected = time.Duration(float64(cfg.Calls) / cfg.Rate * float64(time.Second))
	}
	rec := newRecorder(start.Add(cfg.Warmup), expected)
	r := &runner{cfg: cfg, mix: m, rec: rec, start: start, measureFrom: start.Add(cfg.Warmup), stages: stages}
	if cfg.Duration > 0 {
		r.deadline = r.measureFrom.Add(cfg.Duration)
	}

	stopProgress := r.reportProgress()
	r.drive(ctx, clients)
	stopProgress()

	rep := &Report{
		Shape: Shape{Sessions: cfg.Sessions, Concurrency: cfg.Concurrency, Calls: cfg.Calls, Duration: Millis(cfg.Duration),
			Rate: cfg.Rate, Warmup: Millis(cfg.Warmup), Mix: cfg.Mix, UnlimitedInput: cfg.UnlimitedInput, Mode: "closed loop"},
		LatencyFrom: "send time (closed loop: each caller sends when its last call ends)",
		Interrupted: ctx.Err() != nil,
	}
	if r.openLoop() {
		rep.Shape.Mode = "open loop"
		rep.LatencyFrom = "intended send time (open loop: corrected for coordinated omission)"
	}
	rec.fill(rep)
	if len(stages) > 0 {
		unit := "calls/s"
		if cfg.RampCallers {
			unit = "callers per session"
		}
		rep.Stages = stages.report(cfg.Warmup, unit)
		for i := range rep.Timeline {
			_, rep.Timeline[i].Stage = stages.at(cfg.Warmup + time.Duration(rep.Timeline[i].At)*time.Second)
		}
	}
	// Peak RSS and counters before closing: a closed process has no
	// /proc entry, a closed client's counters are final anyway.
	rep.Servers = procs.peaks()
	for _, c := range clients {
		rep.Stats = rep.Stats.Add(c.Stats())
	}
	rep.RateLimited = rep.Stats.RateLimited
	closeAll(clients)
	in.fill(rep)
	return rep, nil
}

// connectAll connects n clients at once; if one fails, those connected are
// closed and the first error returned.
func connectAll(ctx context.Context, t transport.Transport, opts conduit.Options, n int) ([]*conduit.Client, error) {
	clients := make([]*conduit.Client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { clients[i], errs[i] = conduit.Connect(ctx, t, opts) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("load: connect: %w", err)
		}
	}
	return clients, nil
}

func closeAll(clients []*conduit.Client) {
	var wg sync.WaitGroup
	for _, c := range clients {
		if c != nil {
			wg.Go(func() { _ = c.Close() })
		}
	}
	wg.Wait()
}

// instrument returns the options every session uses: the handlers timed,
// the audit counted, the input limits lifted when asked.
func instrument(cfg Config, in *inputMeter) (conduit.Options, error) {
	opts := cfg.Options
	h, err := handlerSet(opts)
	if err != nil {
		return opts, err
	}
	opts.Handler, opts.Handlers = nil, in.wrap(h)
	user := opts.Audit
	opts.Audit = func(r conduit.AuditRecord) {
		in.audit(r)
		if user != nil {
			user(r)
		}
	}
	if cfg.UnlimitedInput {
		opts.InputRateLimit, opts.InputBurst = rate.Inf, 0
		opts.MaxServerRequests = unlimitedServerRequests
	}
	return opts, nil
}

// handlerSet is the handler set opts configure.
func handlerSet(opts conduit.Options) (conduit.Handlers, error) {
	if opts.Handler == nil {
		return opts.Handlers, nil
	}
	return conduit.HandlersOf(opts.Handler)
}

// runner runs the callers of one load.
type runner struct {
	cfg                Config
	mix                *mix
	rec                *recorder
	start, measureFrom time.Time
	deadline           time.Time // zero without Duration
	stages             ramp
	seq                atomic.Int64 // numbers every call, for the args' "{{n}}"
	tickets            atomic.Int64 // counted calls started
}

// job is one call to make: when it should have been sent (open loop; zero
// in closed loop) and whether it counts.
type job struct {
	intended time.Time
	counted  bool
}

// openLoop reports whether calls are started at a rate.
func (r *runner) openLoop() bool {
	return r.cfg.Rate > 0 || len(r.stages) > 0 && !r.cfg.RampCallers
}

// drive runs every caller until the load is done or ctx ends.
func (r *runner) drive(ctx context.Context, clients []*conduit.Client) {
	var jobs chan job
	var wg sync.WaitGroup
	if r.openLoop() {
		jobs = make(chan job)
	}
	for _, c := range clients {
		for k := range r.cfg.Concurrency {
			wg.Go(func() {
				if jobs != nil {
					for j := range jobs {
						r.call(ctx, c, j)
					}
					return
				}
				for {
					if !r.awaitTurn(ctx, k) {
						return
					}
					j, ok := r.next(ctx, time.Now())
					if !ok {
						return
					}
					r.call(ctx, c, j)
				}
			})
		}
	}
	if jobs != nil {
		r.schedule(ctx, jobs)
		close(jobs)
	}
	wg.Wait()
}

// rampPoll is how often a caller of a ramp (RampCallers) that is not
// among the active ones looks again.
const rampPoll = 100 * time.Millisecond

// awaitTurn waits, in a ramp of callers, until caller k of its session is
// among the active ones; false when ctx ends or the ramp is over.
func (r *runner) awaitTurn(ctx context.Context, k int) bool {
	if !r.cfg.RampCallers {
		return true
	}
	for {
		now := time.Now()
		if !r.deadline.IsZero() && !now.Before(r.deadline) {
			return false
		}
		if target, _ := r.stages.at(now.Sub(r.start)); float64(k) < math.Ceil(target-1e-9) {
			return true
		}
		t := time.NewTimer(rampPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// sendAt is the intended send time of the i-th call of an open loop.
func (r *runner) sendAt(i int64) (time.Time, bool) {
	if len(r.stages) > 0 {
		d, ok := r.stages.sendTime(float64(i))
		return r.start.Add(d), ok
	}
	return r.start.Add(time.Duration(float64(i) * float64(time.Second) / r.cfg.Rate)), true
}

// next decides whether a call sent at now is made, and if it counts.
func (r *runner) next(ctx context.Context, now time.Time) (job, bool) {
	if ctx.Err() != nil || !r.deadline.IsZero() && !now.Before(r.deadline) {
		return job{}, false
	}
	if now.Before(r.measureFrom) {
		return job{}, true
	}
	if n := r.tickets.Add(1); r.cfg.Calls > 0 && n > int64(r.cfg.Calls) {
		return job{}, false
	}
	return job{counted: true}, true
}

// schedule hands out calls at the rate, each stamped with when it should
// be sent. It blocks while every caller is busy; the calls it hands out
// late keep their intended time, so their wait shows in the latency.
func (r *runner) schedule(ctx context.Context, jobs chan<- job) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := int64(0); ; i++ {
		at, ok := r.sendAt(i)
		if !ok {
			return
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		j, ok := r.next(ctx, at)
		if !ok {
			return
		}
		j.intended = at
		select {
		case jobs <- j:
		case <-ctx.Done():
			return
		}
	}
}

// assignKey is the assigns key under which a call carries its inputTimer,
// for the handlers to add their time to.
const assignKey = "conduit/load.call"

// call makes one call and records it if it counts.
func (r *runner) call(ctx context.Context, c *conduit.Client, j job) {
	i := r.mix.pick()
	tool := r.mix.calls[i].Tool
	args := r.mix.args(i, r.seq.Add(1)-1)
	timer := &inputTimer{}
	sent := time.Now()
	res, err := c.CallTool(ctx, tool, args, conduit.WithAssigns(map[string]any{assignKey: timer}))
	end := time.Now()
	if !j.counted {
		return
	}
	from := sent
	if !j.intended.IsZero() {
		from = j.intended
	}
	took := end.Sub(sent)
	input := timer.total()
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.Kind == conduit.KindTimeout && ce.Active > 0 {
		took, input = ce.Active, ce.Paused
	}
	input = min(input, took)
	outcome, message := outcomeOf(res, err), ""
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// The run was interrupted (its context ended, by a deadline or
		// not): the call did not time out on its own.
		outcome = string(conduit.KindCancelled)
	}
	if outcome != OutcomeOK {
		message = messageOf(res, err)
	}
	r.rec.record(result{tool: tool, outcome: outcome, message: message, latency: end.Sub(from), active: took - input, input: input, end: end})
}

// reportProgress calls cfg.Progress every interval until the returned stop
// is called, which reports once more and waits.
func (r *runner) reportProgress() (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	every := r.cfg.ProgressInterval
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				r.cfg.Progress(r.progress(now))
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		p := r.progress(time.Now())
		p.Final = true
		r.cfg.Progress(p)
	}
}

// progress is the recorder's progress with what the runner knows: the
// length of the measured phase and the stage.
func (r *runner) progress(now time.Time) Progress {
	p := r.rec.progress(now)
	p.Total = r.cfg.Duration
	if len(r.stages) > 0 {
		_, p.Stage = r.stages.at(now.Sub(r.start))
	}
	return p
}
