package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// Defaults of SessionLimits.
const (
	// DefaultSessionCalls bounds the tool calls of one downstream session
	// in flight at once.
	DefaultSessionCalls = 16
	// DefaultSessionIdle closes a legacy HTTP session that has had no call
	// in flight and no request for that long.
	DefaultSessionIdle = 30 * time.Minute
)

// SessionLimits bound what one downstream session may do. The zero value
// takes the defaults. A session is a legacy client's (its Mcp-Session-Id,
// or the one stdio client), or a modern client's call: a modern client has
// no session, so each of its calls is one (docs/decisions.md #63).
type SessionLimits struct {
	// MaxCalls bounds the session's calls in flight at once (tools/call,
	// prompts/get, resources/read: the requests whose upstream may ask for
	// input; DefaultSessionCalls); past it one is refused with -32000.
	MaxCalls int
	// InputRateLimit and InputBurst budget the input requests relayed to
	// the session, as a server's input budget does (10/s, bursts of 20,
	// guards.DefaultInputRate and DefaultInputBurst; rate.Inf lifts it):
	// past it an input is refused upstream as rate limited.
	InputRateLimit rate.Limit
	InputBurst     int
	// IdleTimeout closes a legacy HTTP session with no call in flight and
	// no request for that long (DefaultSessionIdle; negative: never). A
	// stdio session and a modern call have no idle timeout.
	IdleTimeout time.Duration
}

func (l SessionLimits) withDefaults() SessionLimits {
	if l.MaxCalls <= 0 {
		l.MaxCalls = DefaultSessionCalls
	}
	if l.InputRateLimit <= 0 {
		l.InputRateLimit = guards.DefaultInputRate
	}
	if l.InputBurst <= 0 {
		l.InputBurst = guards.DefaultInputBurst
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultSessionIdle
	}
	return l
}

// SessionStats are the gateway's counters of its downstream sessions.
type SessionStats struct {
	// Open is how many sessions have an actor now.
	Open int
	// Opened counts the session actors started (a session whose actor
	// failed gets a new one at its next request).
	Opened int64
	// Deleted, Idle and Disconnected count the sessions closed by their
	// client's DELETE, by the idle timeout, and by the end of their
	// connection (stdio) or request (a modern call).
	Deleted, Idle, Disconnected int64
	// Failed counts the session actors that panicked: their calls failed
	// with -32603 and were cancelled upstream.
	Failed int64
	// CallsRefused counts the calls refused over SessionLimits.MaxCalls.
	CallsRefused int64
	// InputsRefused counts the input requests refused upstream over a
	// session's input budget.
	InputsRefused int64
}

// ClosedBy is Deleted, Idle, Disconnected and Failed by reason: deleted,
// idle, disconnected, failed (the admin listener's label values).
func (s SessionStats) ClosedBy() map[string]int64 {
	return map[string]int64{"deleted": s.Deleted, "idle": s.Idle, "disconnected": s.Disconnected, "failed": s.Failed}
}

// RefusedBy is CallsRefused and InputsRefused by limit: calls, inputs.
func (s SessionStats) RefusedBy() map[string]int64 {
	return map[string]int64{"calls": s.CallsRefused, "inputs": s.InputsRefused}
}

// Why a session ended: the cause its calls' ctx is cancelled with.
var (
	errSessionDeleted      = errors.New("the downstream session was deleted (HTTP DELETE)")
	errSessionIdle         = errors.New("the downstream session was closed: idle timeout")
	errSessionDisconnected = errors.New("the downstream session disconnected")
	errSessionFailed       = errors.New("the gateway's actor of the downstream session failed")
	errGatewayClosed       = errors.New("the gateway is closing")
	// errCallEnded ends a modern call's session: its call ended.
	errCallEnded = errors.New("the call ended")
)

// sessions is the supervisor of the downstream sessions: one actor each,
// children of one supervisor actor, found by the session's identity.
type sessions struct {
	sys    *actor.ActorSystem
	sup    *actor.PID
	limits SessionLimits
	logger *slog.Logger

	mu     sync.Mutex
	byID   map[string]*session
	closed bool

	opened, deleted, idle, disconnected, failed, callsRefused, inputsRefused atomic.Int64
}

// session is the handle of one session's actor, used by the goroutines
// that serve its requests: they ask the actor by message and wait for its
// answer or the session's end, never holding it up.
type session struct {
	id  string
	reg *sessions
	pid *actor.PID
	ss  *mcp.ServerSession // a legacy session's; nil for a modern call
	// ctx ends when the session ends (its cause says why): every call of
	// the session runs under it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	ready  chan struct{} // closed once pid is set
	ended  atomic.Bool
	// rootsNoted: the gateway forgets the session's roots when it ends
	// (roots_changed.go), registered once.
	rootsNoted sync.Once
}

func newSessions(logger *slog.Logger, limits SessionLimits) *sessions {
	r := &sessions{sys: actors.NewSystem(logger), limits: limits.withDefaults(), logger: logger, byID: map[string]*session{}}
	r.sup = r.sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return &sessionSupervisor{reg: r, children: map[string]*session{}} }))
	return r
}

// of is the session of ss (a legacy client's), its actor started at its
// first request; it notes the request (the idle timeout's clock). Nil
// once the gateway is closing.
func (r *sessions) of(ss *mcp.ServerSession) *session {
	id := ss.ID()
	if id == "" {
		id = "stdio"
	}
	s := r.open(id, ss)
	if s != nil {
		r.sys.Root.Send(s.pid, touched{})
	}
	return s
}

// open returns the session id, starting its actor if it has none. The
// supervisor spawns it at once; no lock is held meanwhile (its failure
// handling takes the registry's).
func (r *sessions) open(id string, ss *mcp.ServerSession) *session {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	s := r.byID[id]
	if s == nil {
		s = &session{id: id, reg: r, ss: ss, ready: make(chan struct{})}
		s.ctx, s.cancel = context.WithCancelCause(context.Background())
		r.byID[id] = s
		r.opened.Add(1)
		r.sys.Root.Send(r.sup, &spawnSession{s: s})
	}
	r.mu.Unlock()
	<-s.ready
	return s
}

// forget removes s from the registry, when it is still the one under its
// id.
func (r *sessions) forget(s *session) {
	r.mu.Lock()
	if r.byID[s.id] == s {
		delete(r.byID, s.id)
	}
	r.mu.Unlock()
}

// end closes session id, if it has an actor: its calls are cancelled
// upstream with cause, and the actor stops. It reports whether it had one.
func (r *sessions) end(id string, cause error) bool {
	r.mu.Lock()
	s := r.byID[id]
	r.mu.Unlock()
	if s == nil {
		return false
	}
	s.close(cause)
	return true
}

// close ends s for cause, once, and stops its actor: by a message of its
// own, which is dropped silently if the actor is gone meanwhile (a Stop
// would be logged as a dead letter).
func (s *session) close(cause error) {
	if s.finish(cause) {
		<-s.ready // spawned at once; end may come from another goroutine than open's
		s.reg.sys.Root.Send(s.pid, stopSelf{})
	}
}

// finish ends s for cause (its calls cancelled with it) and forgets it; it
// reports false when s had ended already.
func (s *session) finish(cause error) bool {
	if !s.ended.CompareAndSwap(false, true) {
		return false
	}
	s.reg.forget(s)
	s.reg.count(cause)
	s.cancel(cause)
	return true
}

func (r *sessions) count(cause error) {
	switch cause {
	case errSessionDeleted:
		r.deleted.Add(1)
	case errSessionIdle:
		r.idle.Add(1)
	case errSessionDisconnected:
		r.disconnected.Add(1)
	case errSessionFailed:
		r.failed.Add(1)
	}
}

// stats is a snapshot of the counters.
func (r *sessions) stats() SessionStats {
	r.mu.Lock()
	open := len(r.byID)
	r.mu.Unlock()
	return SessionStats{Open: open, Opened: r.opened.Load(), Deleted: r.deleted.Load(), Idle: r.idle.Load(),
		Disconnected: r.disconnected.Load(), Failed: r.failed.Load(), CallsRefused: r.callsRefused.Load(), InputsRefused: r.inputsRefused.Load()}
}

// close ends every session (their calls cancelled upstream) and stops the
// supervisor.
func (r *sessions) close() {
	r.mu.Lock()
	r.closed = true
	all := make([]*session, 0, len(r.byID))
	for _, s := range r.byID {
		all = append(all, s)
	}
	r.mu.Unlock()
	for _, s := range all {
		s.finish(errGatewayClosed) // stopped with their supervisor
	}
	_ = r.sys.Root.StopFuture(r.sup).Wait()
}

// call admits one tool call of the session: its ctx (parent's, ended too
// by the session's end, with its cause) and the end to call when it
// returns. A session at its MaxCalls refuses it with -32000.
func (s *session) call(parent context.Context) (context.Context, func(), error) {
	reply := make(chan error, 1)
	s.reg.sys.Root.Send(s.pid, &callStart{reply: reply})
	select {
	case err := <-reply:
		if err != nil {
			return nil, nil, err
		}
	case <-s.ctx.Done(): // the actor answers at once, unless it is gone
		return nil, nil, sessionError(context.Cause(s.ctx))
	}
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })
	return ctx, func() {
		stop()
		cancel(nil)
		s.reg.sys.Root.Send(s.pid, callEnd{})
	}, nil
}

// input admits one input request of server relayed to the session, and
// keeps it pending until ctx (the input handler's) ends. Over the
// session's input budget it is refused as the guards refuse a server's
// input over its budget.
func (s *session) input(ctx context.Context, server, method string) error {
	reply := make(chan bool, 1)
	s.reg.sys.Root.Send(s.pid, &inputStart{server: server, method: method, reply: reply})
	select {
	case ok := <-reply:
		if !ok {
			s.reg.inputsRefused.Add(1)
			return guards.RateLimited(method, 0).Err
		}
	case <-s.ctx.Done():
		return sessionError(context.Cause(s.ctx))
	}
	context.AfterFunc(ctx, func() { s.reg.sys.Root.Send(s.pid, inputEnd{}) })
	return nil
}

// sessionError is the error a downstream call gets when its session ended
// under it: -32603, saying why.
func sessionError(cause error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("Internal error: %v; its calls were cancelled", cause)}
}

// The supervisor actor.

type sessionSupervisor struct {
	reg      *sessions
	children map[string]*session // by PID id
}

type spawnSession struct{ s *session }

func (a *sessionSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *spawnSession:
		s := m.s
		s.pid = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &sessionActor{s: s, limits: a.reg.limits, limiter: newLimiter(a.reg.limits)}
		}))
		a.children[s.pid.Id] = s
		close(s.ready)
	case *actor.Terminated:
		delete(a.children, m.Who.Id)
	}
}

// HandleFailure is the strategy for the session actors: one that panicked
// is stopped, never restarted (its calls' state is gone), its calls fail
// with -32603 and are cancelled upstream; the session's next request
// starts a new actor. The other sessions never notice.
func (a *sessionSupervisor) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	s := a.children[child.Id]
	if s != nil {
		a.reg.logger.Error("gateway: a downstream session's actor panicked; its calls fail with -32603", "session", s.id, "panic", fmt.Sprint(reason))
		s.finish(errSessionFailed)
	}
	sup.StopChildren(child) // suspended: it takes no message of its own
}

// The session actor: it owns the session's calls in flight, its pending
// input requests and its limits. It never blocks: the calls run in the
// goroutines that serve their requests, which ask it by message.
type sessionActor struct {
	s       *session
	limits  SessionLimits
	limiter *rate.Limiter // nil: no input budget

	calls  int
	inputs int
	last   time.Time   // the last request, or the end of the last call
	timer  *time.Timer // the idle timeout's, while armed
	gen    uint64      // of the timer's arming: a stale tick is ignored
	closed bool
}

func newLimiter(l SessionLimits) *rate.Limiter {
	if l.InputRateLimit == rate.Inf {
		return nil
	}
	return rate.NewLimiter(l.InputRateLimit, l.InputBurst)
}

// Messages of the session actor; a late one (its session ended) is
// dropped silently.
type (
	callStart struct{ reply chan error }
	callEnd   struct{}
	touched   struct{}
	// inputStart asks for an input's admission: true when admitted.
	inputStart struct {
		server, method string
		reply          chan bool
	}
	inputEnd  struct{}
	idleFired struct{ gen uint64 }
	stopSelf  struct{}
	// inspect runs on the actor's goroutine, with its state (status, tests).
	inspect func(*sessionActor)
)

func (callStart) IgnoreDeadLetterLogging()  {}
func (callEnd) IgnoreDeadLetterLogging()    {}
func (touched) IgnoreDeadLetterLogging()    {}
func (inputStart) IgnoreDeadLetterLogging() {}
func (inputEnd) IgnoreDeadLetterLogging()   {}
func (idleFired) IgnoreDeadLetterLogging()  {}
func (inspect) IgnoreDeadLetterLogging()    {}
func (stopSelf) IgnoreDeadLetterLogging()   {}

func (a *sessionActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.last = time.Now()
		a.arm(ctx)
	case *actor.Stopping:
		if a.timer != nil {
			a.timer.Stop()
		}
	case *callStart:
		if a.calls >= a.limits.MaxCalls {
			a.s.reg.callsRefused.Add(1)
			m.reply <- &jsonrpc.Error{Code: messages.CodeBusy, Message: fmt.Sprintf("Server busy: the session has %d calls in flight, its limit", a.calls)}
			return
		}
		a.calls++
		m.reply <- nil
	case callEnd:
		if a.calls > 0 {
			a.calls--
		}
		a.last = time.Now()
	case touched:
		a.last = time.Now()
	case *inputStart:
		if a.limiter != nil && !a.limiter.Allow() {
			m.reply <- false
			return
		}
		a.inputs++
		m.reply <- true
	case inputEnd:
		if a.inputs > 0 {
			a.inputs--
		}
	case idleFired:
		if m.gen != a.gen {
			return
		}
		a.timer = nil
		if a.calls == 0 && a.inputs == 0 && time.Since(a.last) >= a.limits.IdleTimeout {
			a.closeIdle()
			return
		}
		a.arm(ctx)
	case inspect:
		m(a)
	case stopSelf:
		ctx.Stop(ctx.Self())
	}
}

// arm starts the idle timeout's timer for what remains of it, for a legacy
// HTTP session.
func (a *sessionActor) arm(ctx actor.Context) {
	if a.s.ss == nil || a.s.ss.ID() == "" || a.limits.IdleTimeout < 0 || a.closed {
		return
	}
	wait := a.limits.IdleTimeout - time.Since(a.last)
	if a.calls > 0 || a.inputs > 0 || wait <= 0 {
		wait = a.limits.IdleTimeout
	}
	a.gen++
	gen, self, sys := a.gen, ctx.Self(), ctx.ActorSystem()
	a.timer = time.AfterFunc(wait, func() { sys.Root.Send(self, idleFired{gen: gen}) })
}

// closeIdle closes the session: the go-sdk session's Close waits for its
// requests, so it runs beside the actor.
func (a *sessionActor) closeIdle() {
	a.closed = true
	a.s.reg.logger.Info("gateway: downstream session closed: idle", "session", a.s.id, "idle", a.limits.IdleTimeout)
	a.s.close(errSessionIdle)
	go func() { _ = a.s.ss.Close() }()
}

// sessionCause is err, the error of a request that ran under ctx, or,
// when the request's session ended under it, the session's error.
func sessionCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); err != nil && sessionEnded(cause) {
		return sessionError(cause)
	}
	return err
}

// sessionEnded reports whether cause (a call ctx's) is the end of its
// session, not of its request.
func sessionEnded(cause error) bool {
	switch cause {
	case errSessionDeleted, errSessionIdle, errSessionDisconnected, errSessionFailed, errGatewayClosed:
		return true
	}
	return false
}

// noteSessions is the downstream server's receiving middleware: every
// request of a legacy session reaches its session actor (started at the
// first), the idle timeout's clock. A modern client's requests have no
// session.
func (g *Gateway) noteSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && !modernSession(ss) {
			g.sessions.of(ss)
		}
		return next(ctx, method, req)
	}
}

// modernSession reports whether ss is a modern client's (per-request)
// session.
func modernSession(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= modernVersion
}
