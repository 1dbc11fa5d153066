// Package restart supervises a host's MCP servers: one supervisor actor
// per server under one host supervisor actor (Tree), each following a
// restart policy (Policy) whose numbers are a plain history (Restarts):
// backoff, jitter, intensity, parking, revival. Package host is its user;
// the connection runtime of each server lives in package actors.
package restart

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/actors"
)

// The supervision tree of a host of many servers: one host supervisor
// actor, and under it one server supervisor actor per server. A server
// actor is a state machine, starting → ready → restarting(attempt, next
// retry) → … or parked, until it is stopped; its restart numbers are a
// Restarts. It never blocks: connecting, watching and closing a
// server run in one goroutine per start that the actor owns, reporting by
// message; backoff and reset timers are time.AfterFunc callbacks that send
// the actor a tick with the generation they were armed in, so a stale tick
// (or a late result after a restart or a stop) is ignored.

// State is where a server is in its life under supervision (host.State is
// this type).
type State string

// States of a server.
const (
	// Starting: its process is being started, or its connection opened,
	// and the handshake and first tools/list are under way.
	Starting State = "starting"
	// Ready: it answers calls.
	Ready State = "ready"
	// Restarting: it failed and waits for its next try (Report.NextRetry).
	Restarting State = "restarting"
	// Parked: it failed more often than its policy allows. It stays
	// stopped, with its last error, until its Revive has passed or it is
	// started again by hand or by a change of its configuration.
	Parked State = "parked"
	// NeedsSignIn: the server wants an OAuth sign-in that nobody has done
	// (run `conduit login` for it; Report.Err says). It is tried again
	// every SignInRetry without using its restart budget, so a sign-in
	// made meanwhile starts it without a restart of the host.
	NeedsSignIn State = "needs sign-in"
	// Stopped: not supervised: disabled, removed, or its host closed. The
	// owner of the tree says so; a supervisor never reports it.
	Stopped State = "stopped"
)

// Supervisee is the work a server supervisor actor has done, by its owner
// (the host's per-server value): start the server, and publish its state.
type Supervisee interface {
	// Connect starts the server and readies it (handshake, first tools
	// list). It blocks: the actor calls it in a goroutine it owns, with a
	// ctx that ends when the actor stops or restarts.
	Connect(ctx context.Context) (ServerSession, error)
	// Report publishes a new state. The actor calls it from its Receive: it
	// must return promptly (hold a lock briefly, never dial or wait).
	Report(Report)
}

// ServerSession is one live connection of a server.
type ServerSession interface {
	// Serve watches the session until it ends (the error says why) or ctx
	// ends (any error). Then it is closed.
	Serve(ctx context.Context) error
	Close() error
}

// Report is a state of a server.
type Report struct {
	State State
	// Restarts counts restarts since the supervisor started; Attempt the
	// failures since its backoff was last reset.
	Restarts, Attempt int
	NextRetry         time.Time // restarting, and parked when it revives
	Err               error     // the last failure (restarting, parked)
	Session           ServerSession
}

// ServerSpec is how a server is supervised.
type ServerSpec struct {
	// Name names the server in the logs.
	Name string
	// Policy is its restart policy (zero fields take their defaults).
	Policy Policy
	// Jitter returns a number in [0, 1); it is called from the actor.
	Jitter func() float64
	// After, when not nil, is closed when whatever ran this server before
	// is done: the first start waits for it, so that two processes of one
	// server never overlap.
	After <-chan struct{}
}

// Tree is a running host supervisor actor, in an actor system of its own.
// Its methods are safe for concurrent use.
type Tree struct {
	sys   *actor.ActorSystem
	pid   *actor.PID
	wg    sync.WaitGroup // the server actors' goroutines
	close sync.Once
}

// Supervised is one server under a Tree.
type Supervised struct {
	tree *Tree
	done chan struct{}
}

// NewTree starts a host supervisor actor in a new actor system whose own
// logs, and the panics of server supervisors, go to logger.
func NewTree(logger *slog.Logger) *Tree {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := &Tree{sys: actors.NewSystem(logger)}
	h := &hostActor{logger: logger, names: map[*actor.PID]string{}, pids: map[*Supervised]*actor.PID{}}
	t.pid = t.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return h }))
	return t
}

// System is the tree's actor system: a host puts its servers' connection
// actors (conduit.Options.System) in it, under the same roof as their
// supervisors.
func (t *Tree) System() *actor.ActorSystem { return t.sys }

// Start supervises srv under spec, at once, in the background.
func (t *Tree) Start(srv Supervisee, spec ServerSpec) *Supervised {
	s := &Supervised{tree: t, done: make(chan struct{})}
	a := &serverActor{
		srv: srv, spec: spec, prev: spec.After, wg: &t.wg, done: s.done,
		restarts: NewRestarts(spec.Policy, spec.Jitter),
	}
	t.sys.Root.Send(t.pid, &spawnServer{s: s, a: a})
	return s
}

// Stop stops the server's supervisor, which closes its session. It returns
// at once; Done is closed once all is closed.
func (s *Supervised) Stop() { s.tree.sys.Root.Send(s.tree.pid, &stopServer{s: s}) }

// Done is closed when the server's supervisor has stopped and its goroutine
// has returned.
func (s *Supervised) Done() <-chan struct{} { return s.done }

// Close stops every server supervisor, then the host supervisor, and waits
// until all their goroutines have returned.
func (t *Tree) Close() {
	t.close.Do(func() {
		_ = t.sys.Root.StopFuture(t.pid).Wait()
	})
	t.wg.Wait()
}

// quiet marks the tree's own messages: one sent to an actor already
// stopped is expected (a late tick or result), not worth a dead-letter log.
type quiet struct{}

func (quiet) IgnoreDeadLetterLogging() {}

// Host supervisor ← its owner.
type (
	spawnServer struct {
		quiet
		s *Supervised
		a *serverActor
	}
	stopServer struct {
		quiet
		s *Supervised
	}
)

// hostActor is the host supervisor: it spawns and stops the server
// supervisors, and restarts one that panics.
type hostActor struct {
	logger *slog.Logger
	names  map[*actor.PID]string
	pids   map[*Supervised]*actor.PID
}

func (h *hostActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnServer:
		a := m.a
		pid := ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return a }))
		h.names[pid], h.pids[m.s] = a.spec.Name, pid
	case *stopServer:
		if pid := h.pids[m.s]; pid != nil {
			delete(h.pids, m.s)
			delete(h.names, pid)
			ctx.Stop(pid)
		}
	}
}

// HandleFailure restarts a server supervisor that panicked, the same actor
// value: it counts the panic as its server's failure and restarts the
// server with backoff (serverActor.Receive). The library's default would
// restart it with no backoff and drop the failure silently.
func (h *hostActor) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	h.logger.Error("server supervisor panicked; restarting its server", "server", h.names[child], "panic", reason)
	sup.RestartChildren(child)
}

// Server supervisor ← its goroutine and timers.
type (
	connected struct {
		quiet
		gen     int
		session ServerSession
	}
	ended struct {
		quiet
		gen int
		err error
	}
	retryTick struct {
		quiet
		gen int
		// revive: the retry of a parked server, with a fresh history.
		revive bool
	}
	resetTick struct {
		quiet
		gen int
	}
)

// serverActor supervises one server. Its producer returns the same value
// at a restart, so that its history (restarts, backoff, intensity) carries
// over a panic.
type serverActor struct {
	srv      Supervisee
	spec     ServerSpec
	restarts *Restarts
	wg       *sync.WaitGroup
	done     chan struct{} // closed once stopped and its goroutine returned

	gen      int                // bumped at each start and each change of state
	count    int                // restarts since it started
	cancel   context.CancelFunc // ends the running start; nil when none
	prev     <-chan struct{}    // closed when the last start's goroutine returned
	timer    *time.Timer
	panicked any // the panic that restarted it, until handled
}

func (a *serverActor) Receive(ctx actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			a.panicked = r
			panic(r) // for the host supervisor's HandleFailure
		}
	}()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if p := a.panicked; p != nil {
			a.panicked = nil
			a.fail(ctx, fmt.Errorf("server supervisor panicked: %v", p))
			return
		}
		a.start(ctx)
	case *actor.Restarting, *actor.Stopping:
		a.halt()
	case *actor.Stopped:
		prev, done := a.prev, a.done
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			if prev != nil {
				<-prev
			}
			close(done)
		}()
	case *connected:
		if m.gen != a.gen {
			return
		}
		a.arm(ctx, a.restarts.Policy().ResetAfter, func(gen int) any { return &resetTick{gen: gen} })
		a.srv.Report(Report{State: Ready, Restarts: a.count, Session: m.session})
	case *ended:
		if m.gen != a.gen {
			return
		}
		a.fail(ctx, m.err)
	case *retryTick:
		if m.gen != a.gen {
			return
		}
		if m.revive {
			a.restarts.Reset()
		}
		a.count++
		a.srv.Report(Report{State: Starting, Restarts: a.count})
		a.start(ctx)
	case *resetTick:
		if m.gen == a.gen {
			a.restarts.Reset()
		}
	}
}

// start runs one start of the server in a goroutine: connect, report,
// serve, close. It waits for the previous start's goroutine first.
func (a *serverActor) start(ctx actor.Context) {
	a.gen++
	gen, prev, done := a.gen, a.prev, make(chan struct{})
	a.prev = done
	a.restarts.Started(time.Now())
	run, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	sys, self := ctx.ActorSystem(), ctx.Self()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(done)
		if prev != nil {
			// Even a start cancelled meanwhile waits: its done must mean
			// that everything before it is done too, as Done promises to
			// the supervisor that replaces this one.
			<-prev
		}
		if run.Err() != nil {
			return
		}
		s, err := a.srv.Connect(run)
		if err != nil {
			sys.Root.Send(self, &ended{gen: gen, err: err})
			return
		}
		sys.Root.Send(self, &connected{gen: gen, session: s})
		err = s.Serve(run)
		_ = s.Close()
		sys.Root.Send(self, &ended{gen: gen, err: err})
	}()
}

// SignInRetry is how often a server in NeedsSignIn is tried again.
const SignInRetry = 15 * time.Second

// signInNeeded reports whether err says the server needs a sign-in (an
// error in its chain with a NeedsSignIn method that says so: transport's
// HTTPStatusError, oauth's Error).
func signInNeeded(err error) bool {
	var ns interface{ NeedsSignIn() bool }
	return errors.As(err, &ns) && ns.NeedsSignIn()
}

// fail handles a failure: restart after a backoff, or park; a server that
// needs sign-in waits for it, outside its restart budget.
func (a *serverActor) fail(ctx actor.Context, err error) {
	a.halt()
	now := time.Now()
	if signInNeeded(err) {
		a.arm(ctx, SignInRetry, func(gen int) any { return &retryTick{gen: gen} })
		a.srv.Report(Report{State: NeedsSignIn, Restarts: a.count, NextRetry: now.Add(SignInRetry), Err: err})
		return
	}
	wait, park := a.restarts.Failed(now)
	if park {
		r := Report{State: Parked, Restarts: a.count, Attempt: a.restarts.Attempt(), Err: err}
		if revive := a.restarts.Policy().Revive; revive > 0 {
			r.NextRetry = now.Add(revive)
			a.arm(ctx, revive, func(gen int) any { return &retryTick{gen: gen, revive: true} })
		}
		a.srv.Report(r)
		return
	}
	a.arm(ctx, wait, func(gen int) any { return &retryTick{gen: gen} })
	a.srv.Report(Report{State: Restarting, Restarts: a.count, Attempt: a.restarts.Attempt(), NextRetry: now.Add(wait), Err: err})
}

// halt ends the running start and the timer, and makes their late
// messages stale.
func (a *serverActor) halt() {
	a.gen++
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
}

// arm sets the actor's timer to send it tick(gen) after d.
func (a *serverActor) arm(ctx actor.Context, d time.Duration, tick func(gen int) any) {
	if a.timer != nil {
		a.timer.Stop()
	}
	sys, self, msg := ctx.ActorSystem(), ctx.Self(), tick(a.gen)
	a.timer = time.AfterFunc(d, func() { sys.Root.Send(self, msg) })
}
