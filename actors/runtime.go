// Package actors runs one MCP connection on supervised actors: the
// connection actor (which keeps the call tracker as its state and
// supervises one request child per legacy server request) and the
// notification mailbox. Every input
// request, a legacy server request or a modern MRTR or task input, takes
// the one input pipeline of input.go. The Runtime is the only thing the
// public package sees; no actor type or PID leaves here.
//
// The root package conduit runs connections on it; package restart (a
// host's supervision tree) uses only NewSystem, so that a host's server
// supervisors and its servers' connection actors share one actor system.
// Package host does not import it.
package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
	"github.com/conduitmcp/conduit/transport"
)

// Config configures a Runtime. Zero limits take the defaults.
type Config struct {
	Conn     transport.Conn
	Handlers messages.Handlers
	Declared era.Declared
	Guards   *guards.Pipeline
	Name     string
	ServerID string
	Assigns  map[string]any
	// HandlerTimeout, when set, overrides the per-kind defaults (5 min for
	// elicitation, 60 s otherwise).
	HandlerTimeout    time.Duration
	MaxServerRequests int        // 0 means 8
	LogRate           rate.Limit // 0 or less means 50/s
	LogBurst          int        // 0 means 100
	Logger            *slog.Logger
	Audit             func(messages.AuditRecord)
	// Origin is the server's origin when the transport reports one.
	Origin string
	// System, when set, hosts the actors; otherwise DefaultSystem does.
	System *actor.ActorSystem
	// FlushTimeout bounds how long Close waits for queued writes (0: 2 s).
	FlushTimeout time.Duration
	// MaxInboundBytes bounds the bytes of server messages read and not yet
	// handled by the actors; past it the reader waits (0:
	// DefaultMaxInboundBytes).
	MaxInboundBytes int
	// MaxWaitingNotificationBytes bounds the bytes of notifications and
	// log entries waiting for their callback; past it newer ones are
	// dropped and counted (0: DefaultMaxWaitingNotificationBytes).
	MaxWaitingNotificationBytes int
	// MaxWriteQueueBytes bounds the bytes queued for the server and not yet
	// written (0: DefaultMaxWriteQueueBytes); past it the connection ends
	// with a *messages.WriteQueueOverflowError.
	MaxWriteQueueBytes int
	// OnChange, when set, is told each list change the server sends that
	// passes (modern: on the listen stream), on the connection actor: it
	// must not block.
	OnChange func(method string)
	// Tracer, when set, records each input request as a span, a child of
	// its call's (trace.go).
	Tracer trace.Tracer
}

func (c *Config) handlerTimeout(method string) time.Duration {
	switch {
	case c.HandlerTimeout > 0:
		return c.HandlerTimeout
	case method == messages.MethodElicit:
		return DefaultElicitationTimeout
	}
	return DefaultHandlerTimeout
}

// shared is the state every actor of one connection reads; its fields are
// set before any actor starts and never reassigned (session and the
// counters change, atomically).
type shared struct {
	ctx context.Context // parent of every handler's ctx; cancelled at close; carries no values
	// session is what was negotiated: the one copy, read by the actors
	// and, through the Runtime, by the client.
	session   atomic.Pointer[session]
	auditMu   sync.Mutex // the hook is called from several actors: one at a time
	abandoned supervisor.Gauge
	// activity is the counters, the task pollers and the issued URL
	// elicitations: nil until the first count, watch or elicitation needs
	// them (decision 75; their 152 bytes were in every connection's
	// runtime, and a connection at rest has counted nothing).
	activity atomic.Pointer[activity]
	// rt is the runtime, whose Notify sends a notification to the server
	// (a pointer into the same allocation: a method value cost an object),
	// and whose cfg holds the handlers, guards, logger, audit hook and
	// tracer every actor reads (one copy: the accessors below).
	rt *Runtime
	// budget bounds the bytes the reader has handed over and the actors
	// have not finished with.
	budget inboundBudget
	// calls maps the id of each call in flight with a valid span context
	// to it, while tracing (trace.go): made by the first call traced, nil
	// before (decision 74: the global provider gives every connection a
	// tracer, most never trace a call).
	calls atomic.Pointer[sync.Map]
}

func (s *shared) handlers() *messages.Handlers { return &s.rt.cfg.Handlers }
func (s *shared) guards() *guards.Pipeline     { return s.rt.cfg.Guards }
func (s *shared) logger() *slog.Logger         { return s.rt.cfg.Logger }
func (s *shared) tracer() trace.Tracer         { return s.rt.cfg.Tracer }

// session is a negotiated protocol version and its era. negotiated is
// false until the handshake has set them (SetSession): the defaults stand
// in meanwhile.
type session struct {
	version    string
	era        messages.Era
	negotiated bool
}

// discardLogger is the Logger of every runtime whose Config has none.
var discardLogger = slog.New(slog.DiscardHandler)

// unnegotiated is every connection's session until its handshake.
var unnegotiated = &session{version: era.LegacyVersions[0], era: messages.EraLegacy}

// knownSessions are the sessions of the revisions Conduit speaks, made
// once and shared by every connection that negotiates one (never changed).
var knownSessions = func() []*session {
	var out []*session
	for _, e := range []messages.Era{messages.EraLegacy, messages.EraModern} {
		for _, v := range append(slices.Clone(era.LegacyVersions), era.ModernVersions...) {
			out = append(out, &session{version: v, era: e, negotiated: true})
		}
	}
	return out
}()

// negotiated is the session of version and e: a shared one when Conduit
// speaks version, else one of its own.
func negotiated(version string, e messages.Era) *session {
	for _, s := range knownSessions {
		if s.version == version && s.era == e {
			return s
		}
	}
	return &session{version: version, era: e, negotiated: true}
}

// activity is what a connection keeps once something has happened on it
// beyond the handshake (shared.activity).
type activity struct {
	counters  counters
	taskWatch taskWatch // the pollers of tasks, woken by notifications/tasks/status
	// elicitations are the URL elicitations awaiting their completion.
	elicitations issuedElicitations
}

// active is the connection's activity, made by the first caller that
// needs it: any goroutine may call it, and a compare-and-swap gives every
// caller the same one.
func (s *shared) active() *activity {
	if a := s.activity.Load(); a != nil {
		return a
	}
	s.activity.CompareAndSwap(nil, new(activity))
	return s.activity.Load()
}

// count is the connection's counters (active).
func (s *shared) count() *counters { return &s.active().counters }

type counters struct {
	serverRequests, busy, rateLimited, refused, notificationsDropped, notificationsDiscarded, logsDropped, malformed, unknownResponses, notificationPanics, writeQueueOverflows, unsubscribed, roundsCapped atomic.Int64
}

// refusedBy counts a guard's refusal of an input request in Stats: over
// the budget (RateLimited) or by another rule (Refused).
func (s *shared) refusedBy(r *guards.Refusal) {
	if r.Outcome == guards.OutcomeRateLimited {
		s.count().rateLimited.Add(1)
	} else {
		s.count().refused.Add(1)
	}
}

// audit calls the audit hook with the error filled in. A panicking hook is
// logged, never allowed to take an actor down.
func (s *shared) audit(rec messages.AuditRecord, rpcErr *messages.RPCError) {
	if s.rt.cfg.Audit == nil {
		return
	}
	if rpcErr != nil {
		code := rpcErr.Code
		rec.Code, rec.Message = &code, rpcErr.Message
	}
	s.auditMu.Lock()
	defer s.auditMu.Unlock()
	defer func() {
		if v := recover(); v != nil {
			s.logger().Error("audit hook panicked", "panic", fmt.Sprint(v))
		}
	}()
	s.rt.cfg.Audit(rec)
}

// lifecycle is how the actors ask the runtime to tear the connection down.
type lifecycle struct {
	once    sync.Once
	stopped atomic.Bool // set by stop
	err     error       // why; read once stopped is set
	// rt's teardown is started by the first stop, in a goroutine of its
	// own: no goroutine is parked waiting for the end of a connection.
	rt *Runtime
	// notifications is the mailbox's queue, nil until a notification
	// needs it: set by the connection actor, read by the teardown after
	// that actor stopped.
	notifications *notifQueue
}

func (l *lifecycle) stop(err error) {
	l.once.Do(func() {
		l.err = err
		l.stopped.Store(true)
		go l.rt.teardown()
	})
}

// closedErr is the error a call gets once the connection is ending.
func (l *lifecycle) closedErr(method string) error {
	var e *messages.Error
	if errors.As(l.err, &e) {
		cp := *e
		cp.Method, cp.ConnectionEnded = method, true
		return &cp
	}
	return &messages.Error{Kind: messages.KindClosed, Method: method, Message: "client closed", Err: l.err, ConnectionEnded: true}
}

// Runtime is one running connection.
type Runtime struct {
	cfg     Config
	pid     *actor.PID
	m       *runtimeMem // what holds it: its lifecycle, shared, writer
	cancel  context.CancelFunc
	reading sync.WaitGroup // the reader goroutine
	done    chan struct{}  // closed when teardown has finished
	nextID  atomic.Int64

	// mu guards what follows: listener, which keeps the
	// subscriptions/listen stream (Listen; the teardown waits for its
	// goroutine, listener.exited, once listenClosed is set: no listener
	// starts after that), and after, AfterDone's, until the teardown takes
	// it (finished). One lock for both: neither is on a request's path.
	mu           sync.Mutex
	listener     *listener
	listenClosed bool
	finished     bool
	after        func()
}

// Defaults of the zero Config, the one place each is written (package
// conduit re-exports DefaultMaxServerRequests; its Options take the rest
// through Config).
const (
	// DefaultMaxServerRequests caps the input requests handled at once.
	DefaultMaxServerRequests = 8
	// DefaultLogRate and DefaultLogBurst limit the server's log entries.
	DefaultLogRate  rate.Limit = 50
	DefaultLogBurst int        = 100
	// DefaultFlushTimeout bounds how long Close waits for queued writes.
	DefaultFlushTimeout = 2 * time.Second
)

// Start spawns the actors for cfg.Conn and starts reading from it.
func Start(cfg Config) *Runtime {
	if cfg.MaxServerRequests <= 0 {
		cfg.MaxServerRequests = DefaultMaxServerRequests
	}
	if cfg.LogRate <= 0 {
		cfg.LogRate = DefaultLogRate
	}
	if cfg.LogBurst <= 0 {
		cfg.LogBurst = DefaultLogBurst
	}
	if cfg.Logger == nil {
		cfg.Logger = discardLogger
	}
	if cfg.Guards == nil {
		cfg.Guards = guards.New(guards.Config{})
	}
	if cfg.FlushTimeout <= 0 {
		cfg.FlushTimeout = DefaultFlushTimeout
	}
	if cfg.MaxInboundBytes <= 0 {
		cfg.MaxInboundBytes = DefaultMaxInboundBytes
	}
	if cfg.MaxWaitingNotificationBytes <= 0 {
		cfg.MaxWaitingNotificationBytes = DefaultMaxWaitingNotificationBytes
	}
	if cfg.MaxWriteQueueBytes <= 0 {
		cfg.MaxWriteQueueBytes = DefaultMaxWriteQueueBytes
	}
	if cfg.System == nil {
		cfg.System = DefaultSystem()
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := new(runtimeMem)
	sh := &m.sh
	*sh = shared{ctx: ctx}
	sh.budget.init(cfg.MaxInboundBytes)
	rt := &m.rt
	*rt = Runtime{
		cfg: cfg, cancel: cancel, m: m,
		done: make(chan struct{}),
	}
	rt.m.life.rt = rt
	sh.rt = rt
	// Until negotiation says otherwise, a server request is legacy.
	rt.m.sh.session.Store(unnegotiated)
	conn := &m.conn
	*conn = connection{cfg: &rt.cfg, shared: sh, life: &m.life, slots: supervisor.Cap{Max: cfg.MaxServerRequests}}
	// The writer needs the PID for its error report, the actor needs the
	// writer: the error path reads rt.pid, set before any write.
	m.w = writer{conn: cfg.Conn, limit: cfg.MaxWriteQueueBytes, onErr: rt.writerFailed}
	conn.writer = &m.w
	conn.dispatch = newDispatcher()
	spawnMu.Lock()
	spawning = conn
	rt.pid = cfg.System.Root.Spawn(connProps)
	spawning = nil
	spawnMu.Unlock()
	rt.reading.Add(1)
	go rt.read()
	return rt
}

// writerFailed is the writer's error report to the connection actor.
func (rt *Runtime) writerFailed(err error) { rt.post(&writerFailed{err: err}) }

// post sends m to the connection actor.
func (rt *Runtime) post(m any) { rt.cfg.System.Root.Send(rt.pid, m) }

// runtimeMem is what one connection's runtime holds for its life, in one
// allocation (decision 60): five objects cost their size classes' rounding,
// and each shared its spans with the handshake's garbage, so that after a
// collection the heap in use per idle connection was a fifth above the
// bytes live. Its 1 016 bytes and the 8-byte header the allocator gives an
// object over 512 bytes with pointers fill a size class (1 024) exactly:
// one word more in any of the five moves it to the next (1 152;
// TestRuntimeMemFitsItsSizeClass). So nothing in it is a copy of another
// part (decision 80: shared reads the Config through rt). The call
// tracker and shared's activity are not part of it: a busy connection
// takes one from trackers, and makes the other with its first count
// (decision 75). The Runtime reaches the other four through m, one
// pointer rather than one each.
type runtimeMem struct {
	rt   Runtime
	sh   shared
	life lifecycle
	conn connection
	w    writer
}

// connProps is the Props of every connection actor, made once (decision
// 60; one per connection cost 240 bytes each, kept by its actor context):
// its producers hand out spawning, the connection being spawned, and its
// mailbox, part of it. Spawn calls both before it returns, on the
// goroutine that holds spawnMu; a connection actor is never restarted
// (topLevel resumes it), so they are never called later.
var (
	spawnMu   sync.Mutex
	spawning  *connection
	connProps = actor.PropsFromProducer(func() actor.Actor { return spawning },
		actor.WithGuardian(topLevel), actor.WithMailbox(func() actor.Mailbox {
			spawning.queue.init().first = true
			return &spawning.queue
		}))
)

// connQueue is the connection actor's mailbox: a msgQueue inside the
// connection, run on the connection's dispatcher (connProps names none;
// Spawn registers it while spawning is the connection).
type connQueue struct{ msgQueue }

func (q *connQueue) RegisterHandlers(invoker actor.MessageInvoker, _ actor.Dispatcher) {
	q.msgQueue.RegisterHandlers(invoker, spawning.dispatch)
}

// read is the reader goroutine: it only moves messages to the actor, so
// that its stack stays the smallest the runtime gives (decoding here grew
// every idle connection's stack to 4 KB). Each message holds its bytes of
// the inbound budget until the actors are done with it: past the budget
// the reader waits, and the server's writes with it. The teardown ends it
// by closing the transport, which must unblock Read (its ctx has no Done
// channel to cost an idle connection), and the budget.
func (rt *Runtime) read() {
	defer rt.reading.Done()
	for {
		msg, err := rt.cfg.Conn.Read(context.Background())
		if err != nil {
			rt.post(&readerDone{err: err})
			return
		}
		size := int64(len(msg.Data))
		if !rt.m.sh.budget.acquire(size) {
			return // the teardown is under way
		}
		rt.post(&inbound{msg: msg, size: size})
	}
}

// teardown runs once the connection ends (Close, transport failure or an
// internal failure: lifecycle.stop starts it) and releases everything:
// pending calls fail, handler contexts are cancelled, queued writes are
// flushed (bounded), the transport is closed, and every goroutine and
// actor is waited for, except a callback that ignores its ctx: that one is
// abandoned (counted), so a callback may call Close itself.
func (rt *Runtime) teardown() {
	done := make(chan struct{})
	rt.post(&closeRequest{err: rt.m.life.err, done: done})
	<-done
	rt.cancel()
	rt.mu.Lock()
	rt.listenClosed = true
	l := rt.listener
	rt.mu.Unlock()
	if l != nil {
		<-l.exited // it ends with the ctx, its stream with the connection
	}
	flushed := rt.m.w.close()
	if !rt.m.w.stuck() { // else the server reads nothing: no use waiting
		flush := time.NewTimer(rt.cfg.FlushTimeout)
		select {
		case <-flushed:
		case <-flush.C:
		}
		flush.Stop()
	}
	_ = rt.cfg.Conn.Close()
	rt.m.sh.budget.close()
	<-flushed
	rt.reading.Wait()
	// Every notification the reader delivered is queued for the connection
	// now: it hands each to the mailbox, then stops it.
	stopped := make(chan struct{})
	rt.post(&stopMailbox{done: stopped})
	<-stopped
	_ = rt.cfg.System.Root.PoisonFuture(rt.pid).Wait()
	if q := rt.m.life.notifications; q != nil {
		if q.gate.Close() {
			rt.cfg.Logger.Info("notification callback still running at close: abandoned")
		} else {
			<-q.exited
		}
	}
	close(rt.done)
	rt.mu.Lock()
	f := rt.after
	rt.after, rt.finished = nil, true
	rt.mu.Unlock()
	if f != nil {
		f()
	}
}

// Done is closed once the connection has ended and everything is released.
func (rt *Runtime) Done() <-chan struct{} { return rt.done }

// AfterDone arranges for f to be called once Done is closed, without a
// goroutine waiting for that meanwhile: f runs last in the teardown's
// goroutine, so it should not block. If the runtime is already done, f
// runs at once in a goroutine of its own. The runtime keeps one f: a later
// call replaces an earlier one not yet called.
func (rt *Runtime) AfterDone(f func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.finished {
		go f()
		return
	}
	rt.after = f
}

// Err says why the connection ended; nil before Done is closed.
func (rt *Runtime) Err() error {
	select {
	case <-rt.done:
		return rt.m.life.err
	default:
		return nil
	}
}

// Close ends the connection and waits for everything to be released.
func (rt *Runtime) Close() error {
	return rt.CloseWith(&messages.Error{Kind: messages.KindClosed, Message: "client closed"})
}

// CloseWith is Close with err as the reason (Err, and the error of every
// call in flight and after), unless the connection was already ending.
func (rt *Runtime) CloseWith(err error) error {
	rt.m.life.stop(err)
	<-rt.done
	return nil
}

// CallOptions are the per-call settings.
type CallOptions struct {
	Timeout         time.Duration
	MaxTotalTimeout time.Duration
	Assigns         map[string]any
	// Header goes on each request of the call, when the connection
	// takes headers per request (transport.RequestHeaders).
	Header http.Header
}

// requestHeader gives the connection the header of the request id, and
// returns what forgets it once the request is over.
func (rt *Runtime) requestHeader(id messages.ID, h http.Header) func() {
	rh, ok := rt.cfg.Conn.(transport.RequestHeaders)
	if h == nil || !ok {
		return func() {}
	}
	rh.SetRequestHeader(id, h)
	return func() { rh.SetRequestHeader(id, nil) }
}

// begin gives a call without assigns the client's, and refuses it once
// the connection is ending.
func (rt *Runtime) begin(method string, opts *CallOptions) error {
	if opts.Assigns == nil {
		opts.Assigns = rt.cfg.Assigns
	}
	if rt.m.life.stopped.Load() {
		return rt.m.life.closedErr(method)
	}
	return nil
}

// Call sends a request and waits for its answer, the call's deadline, the
// caller's ctx, or the end of the connection.
// params is the encoded params object, or nil for none.
func (rt *Runtime) Call(ctx context.Context, method string, raw json.RawMessage, opts CallOptions) (json.RawMessage, error) {
	if err := rt.begin(method, &opts); err != nil {
		return nil, err
	}
	id := messages.IntID(rt.nextID.Add(1))
	m, err := newCall(id, method, raw)
	if err != nil {
		return nil, err
	}
	m.timeout, m.maxTotal, m.assigns = opts.Timeout, opts.MaxTotalTimeout, opts.Assigns
	defer rt.requestHeader(id, opts.Header)()
	if rt.m.sh.traceCall(ctx, id) {
		defer rt.m.sh.untraceCall(id)
	}
	reply := m.reply
	rt.post(m)
	select {
	case out := <-reply:
		return rt.outcome(ctx, out)
	case <-ctx.Done():
		rt.post(&cancelCall{id: id, reason: "cancelled by the caller"})
		return nil, messages.ContextEnded(ctx, method)
	case <-rt.done:
		select {
		case out := <-reply:
			return out.result, out.err
		default:
			return nil, rt.m.life.closedErr(method)
		}
	}
}

// outcome returns a call's answer once the notifications and log entries
// the server sent before it have been handed to their callbacks (each
// callback returned, or the entry was dropped or discarded), so that a
// caller that closes the client on return loses none of them. The wait
// ends early, with the answer, when ctx ends or the connection has ended.
// A call made with the ctx of one of this connection's notification
// callbacks does not wait: the notifications behind that callback wait
// for it.
func (rt *Runtime) outcome(ctx context.Context, out callOutcome) (json.RawMessage, error) {
	if out.notified != nil && ctx.Value(callbackOf{}) != &rt.m.sh {
		select {
		case <-out.notified:
		case <-ctx.Done():
		case <-rt.done:
		}
	}
	return out.result, out.err
}

// newCall encodes the request of a call, on the caller's goroutine: the
// connection actor, which every call and message of the connection goes
// through, only registers it and queues the bytes.
func newCall(id messages.ID, method string, params json.RawMessage) (*callRequest, error) {
	return newCallEncoded(id, method, params, (*messages.Frame).Encode)
}

// newCallEncoded is newCall with the frame written by encode.
func newCallEncoded(id messages.ID, method string, params json.RawMessage, encode func(*messages.Frame) ([]byte, error)) (*callRequest, error) {
	f := messages.Frame{JSONRPC: messages.Version, ID: id, Method: method, Params: params}
	data, err := encode(&f)
	if err != nil {
		return nil, &messages.Error{Kind: messages.KindProtocol, Method: method, Err: err}
	}
	return &callRequest{id: id, method: method, data: data, reply: make(chan callOutcome, 1)}, nil
}

// Notify sends a notification to the server.
func (rt *Runtime) Notify(method string, params any) error {
	done := make(chan error, 1)
	rt.post(&notifyRequest{method: method, params: params, done: done})
	select {
	case err := <-done:
		return err
	case <-rt.done:
		return rt.m.life.closedErr(method)
	}
}

// SetSession records the negotiated version and era, and tells a
// transport that frames by session (transport.Session). The Runtime holds
// the one copy: the actors read it, so do Version and Era.
func (rt *Runtime) SetSession(version string, e messages.Era) {
	rt.m.sh.session.Store(negotiated(version, e))
	if ts, ok := rt.cfg.Conn.(transport.Session); ok {
		ts.SetSession(version, e)
	}
}

// Config is the runtime's Config, its defaults filled in.
func (rt *Runtime) Config() Config { return rt.cfg }

// Conn is the transport connection the runtime reads and writes.
func (rt *Runtime) Conn() transport.Conn { return rt.cfg.Conn }

// Handlers are the runtime's handlers (Config.Handlers): read them here
// rather than keep a copy.
func (rt *Runtime) Handlers() *messages.Handlers { return &rt.cfg.Handlers }

// Version is the negotiated protocol version.
func (rt *Runtime) Version() string { return rt.m.sh.session.Load().version }

// Era is the negotiated era.
func (rt *Runtime) Era() messages.Era { return rt.m.sh.session.Load().era }

// Stats returns a snapshot of the counters.
func (rt *Runtime) Stats() messages.Stats {
	c := &counters{} // nothing counted yet
	if a := rt.m.sh.activity.Load(); a != nil {
		c = &a.counters
	}
	return messages.Stats{
		ServerRequests:            c.serverRequests.Load(),
		Busy:                      c.busy.Load(),
		RateLimited:               c.rateLimited.Load(),
		Refused:                   c.refused.Load(),
		AbandonedHandlers:         rt.m.sh.abandoned.Load(),
		NotificationsDropped:      c.notificationsDropped.Load(),
		NotificationsDiscarded:    c.notificationsDiscarded.Load(),
		LogsDropped:               c.logsDropped.Load(),
		Malformed:                 c.malformed.Load(),
		UnknownResponses:          c.unknownResponses.Load(),
		NotificationHandlerPanics: c.notificationPanics.Load(),
		RootsWithheld:             rt.cfg.Guards.RootsWithheld(),
		WriteQueueOverflows:       c.writeQueueOverflows.Load(),
		Unsubscribed:              c.unsubscribed.Load(),
		RoundsCapped:              c.roundsCapped.Load(),
	}
}
