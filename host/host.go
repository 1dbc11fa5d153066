package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/restart"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// State is where a server is in its life under the host: the supervision
// tree's states (restart.State), and Stopped.
type State = restart.State

// States of a server (see restart.State for each).
const (
	StateStarting   = restart.Starting
	StateReady      = restart.Ready
	StateRestarting = restart.Restarting
	StateParked     = restart.Parked
	// StateNeedsSignIn: the server wants `conduit login` (see docs/auth.md).
	StateNeedsSignIn = restart.NeedsSignIn
	StateStopped     = restart.Stopped
)

// DefaultSeparator joins a server's name and its tool's name in the
// catalog.
const DefaultSeparator = "__"

// Options configure a Host. The zero value is valid.
type Options struct {
	// Client is the base of every server's conduit.Options: the handler set
	// (each server's input requests reach it with the server's name as
	// ServerID), Name, Logger, Audit, defaults. A server's "conduit"
	// settings override the fields they name.
	Client conduit.Options
	// Separator joins server and tool names in the catalog ("__").
	Separator string
	// Transport builds a server's transport; nil builds a
	// *transport.Command or a *transport.HTTP from its configuration. It is
	// called with the host's lock held: it must not block or call the
	// Host. A *transport.Command without a Logger gets one that keeps its
	// last stderr lines for Status.
	Transport func(name string, s Server) (transport.Transport, error)
	// MaxMessageBytes bounds a message from a server (a stdio line, an
	// HTTP body or SSE event) on the transports the Host builds; 0 keeps
	// the transports' default (64 MiB).
	MaxMessageBytes int
	// Jitter returns a number in [0, 1) that spreads each backoff over
	// ±20 %; nil draws it from math/rand/v2. Supervisors call it
	// concurrently.
	Jitter func() float64
	// ServerOptions, when set, completes the options of each server's
	// clients, after its settings: for a hook that needs the server's
	// name (the admin listener's metrics: middleware, an Audit that
	// calls the one before). Called with the host's lock held: it must
	// not block or call the Host.
	ServerOptions func(name string, o conduit.Options) conduit.Options
	// MaxVariants bounds the connections a legacy server runs for the
	// capability sets of calls made WithCapabilities, beside its main one
	// (DefaultMaxVariants, 4, for 0; negative: none, every call goes to
	// the main connection); VariantIdle closes one without a call for
	// that long (DefaultVariantIdle, 5 min, for 0 or less). See variants.go.
	MaxVariants int
	VariantIdle time.Duration
}

// Status is a snapshot of one server.
type Status struct {
	Server string
	State  State
	// Since is when it entered State.
	Since time.Time
	// PID is its process id while it runs, when its transport connection
	// reports one (a Pid() int method, as a stdio server's does); 0
	// otherwise.
	PID int
	// Restarts counts its restarts since its supervisor started: at the
	// host's start, at Restart, or when its configuration changed.
	Restarts int
	// Attempt counts its failures since its backoff was last reset.
	Attempt int
	// NextRetry is when a restarting server tries again.
	NextRetry time.Time
	// Err is its last failure; Stderr the last lines of its stderr (stdio).
	Err    error
	Stderr []string
	// Tools is the number of its tools in the catalog (ready only).
	Tools int
	// ToolsErr, while set, says why its tools in the catalog may be out of
	// date: its last tools/list, after a notifications/tools/list_changed,
	// failed, and the catalog keeps the tools listed before. The next
	// listing that succeeds clears it.
	ToolsErr error
	// Calls counts the tool calls sent to it through the host.
	Calls int64
	// Stats are the counters of its current connection (ready only), with
	// those of its variants since it started.
	Stats conduit.Stats
	// Variants are its connections for other capability sets (a legacy
	// server's, variants.go); VariantsRefused counts the calls refused
	// for want of one (ErrTooManyVariants).
	Variants        []Variant
	VariantsRefused int64
}

// Event is a state change of one server, with its counters at that
// moment (Tools, Calls, Stats); or, with ToolsChanged, a change of its
// tools in the catalog while it stays ready.
type Event struct {
	Time time.Time
	// ToolsChanged says that the event is a refresh of the server's tools
	// (after a list change) that changed the catalog: their names, or
	// ToolsErr. State is unchanged; Time is when the listing came back.
	ToolsChanged bool
	Status
}

// Tool is a tool in the host's catalog.
type Tool struct {
	// Tool is the tool as its server lists it, but with Name namespaced:
	// the server's name, the separator, the tool's name.
	conduit.Tool
	// Server is the server offering it; ServerTool its name there.
	Server     string `json:"server"`
	ServerTool string `json:"serverTool"`
}

// Errors a call to a server can wrap, besides the server's own.
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("host: unknown server")
	// ErrParked: the server is parked.
	ErrParked = errors.New("host: server parked")
	// ErrNotReady: the caller asked not to wait (NoWait) and the server is
	// not ready.
	ErrNotReady = errors.New("host: server not ready")
	// ErrStopped: the server is stopped.
	ErrStopped = errors.New("host: server stopped")
)

// Host runs many MCP servers, one supervisor each. Its methods are safe
// for concurrent use.
//
// Concurrency: each server has one supervisor actor, a child of the host
// supervisor actor (restart.Tree, in an actor system of the Host's own);
// only the goroutines it owns connect, watch and close that server's
// clients. It publishes what changes under mu, which is only ever held
// briefly (never across a dial, a call or a Close). So a server that hangs
// or crash-loops blocks only its own supervisor. Callers read the
// published state under mu and wait on the server's changed channel,
// closed and replaced at each change.
type Host struct {
	opts Options
	tree *restart.Tree
	wg   sync.WaitGroup // the supervisors' helpers (tools/list, ping)

	mu      sync.Mutex
	closed  bool
	servers map[string]*entry
	// retiring holds, per name, when the last supervisor of a server
	// removed or disabled is done: one started again under that name waits
	// for it, so that two processes of one server never overlap.
	retiring map[string]<-chan struct{}
	subs     map[*subscriber]struct{}
	catalog  chan struct{} // one slot: the catalog may have changed (CatalogChanged)
}

// entry is one configured server; it outlives its supervisors. Guarded by
// Host.mu, except calls.
type entry struct {
	cfg     Server
	sup     *server // nil when stopped
	status  Status
	client  *conduit.Client // while ready
	tools   []conduit.Tool  // while ready
	changed chan struct{}
	calls   atomic.Int64
	vs      *variants // a server's variants (variants.go)
	v       *variant  // set when the entry is a variant's
}

// New starts a host running the servers of cfg. Each starts at once, in
// the background; Status, Subscribe and the calls follow them.
func New(cfg Config, opts Options) (*Host, error) {
	if opts.Separator == "" {
		opts.Separator = DefaultSeparator
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	var err error
	if opts.Client, err = withHandlers(opts.Client); err != nil {
		return nil, err
	}
	h := &Host{opts: opts, tree: restart.NewTree(opts.Client.Logger), servers: map[string]*entry{}, retiring: map[string]<-chan struct{}{}, subs: map[*subscriber]struct{}{}, catalog: make(chan struct{}, 1)}
	h.Apply(cfg)
	return h, nil
}

// Apply changes the configuration: servers added are started, removed
// ones stopped, changed ones restarted; an unchanged server keeps its
// connection (and process). It returns at once.
func (h *Host) Apply(cfg Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		if _, ok := cfg.Servers[name]; !ok {
			e := h.servers[name]
			if e.sup != nil {
				h.retiring[name] = e.sup.actor.Done()
				e.sup.stop()
			}
			h.dropVariants(name, e, "the server was removed")
			delete(h.servers, name)
			h.emit(Status{Server: name, State: StateStopped, Since: time.Now(), Calls: e.calls.Load()})
			close(e.changed)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		e := h.servers[name]
		switch {
		case e == nil:
			e = &entry{cfg: s, changed: make(chan struct{})}
			h.servers[name] = e
			h.launch(name, e, nil)
		case !reflect.DeepEqual(e.cfg, s):
			e.cfg = s
			h.relaunch(name, e)
		case e.status.State == StateParked:
			h.relaunch(name, e) // a reload revives it
		}
	}
}

// Restart starts a server again now, whatever its state (a parked one
// included), with a fresh restart history.
func (h *Host) Restart(name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.servers[name]
	if e == nil || h.closed {
		return fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	h.relaunch(name, e)
	return nil
}

// relaunch replaces e's supervisor: the new one starts once the old one
// has closed its connection. Called with mu held.
func (h *Host) relaunch(name string, e *entry) {
	var prev <-chan struct{}
	if e.sup != nil {
		prev = e.sup.actor.Done()
		e.sup.stop()
	}
	h.launch(name, e, prev)
}

// launch starts a supervisor for e (or marks it stopped when disabled),
// once prev, or the last supervisor of a server of that name, is done.
// Called with mu held.
func (h *Host) launch(name string, e *entry, prev <-chan struct{}) {
	if prev == nil {
		prev = h.retiring[name]
	}
	delete(h.retiring, name)
	h.dropVariants(name, e, "the server restarts")
	e.sup, e.client, e.tools = nil, nil, nil
	// Starting nothing now, the server keeps the wait for its last
	// process, for the supervisor a later change starts.
	retire := func() {
		if prev != nil {
			h.retiring[name] = prev
		}
	}
	if e.cfg.Conduit.Disabled {
		retire()
		h.set(name, e, Status{State: StateStopped})
		return
	}
	s, err := h.newServer(name, e.cfg)
	if err != nil {
		retire()
		h.set(name, e, Status{State: StateParked, Err: err})
		return
	}
	e.sup = s
	h.set(name, e, Status{State: StateStarting})
	s.actor = h.tree.Start(s, restart.ServerSpec{Name: name, Policy: s.policy, Jitter: h.opts.Jitter, After: prev})
}

// update applies change to the entry of s, if s is still its supervisor;
// a stale supervisor (replaced or removed) changes nothing.
func (h *Host) update(s *server, change func(e *entry)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.servers[s.name]
	if s.variant != nil {
		e = s.variant
	}
	if e == nil || e.sup != s || s.stopped {
		return
	}
	change(e)
	h.catalogChanged()
	close(e.changed)
	e.changed = make(chan struct{})
}

// set gives e a new state, publishing it. Called with mu held.
func (h *Host) set(name string, e *entry, st Status) {
	st.Server, st.Since = name, time.Now()
	e.status = st
	if e.v != nil {
		h.variantChanged(e)
		return
	}
	h.emit(h.snapshot(e))
	h.catalogChanged()
	close(e.changed)
	e.changed = make(chan struct{})
}

// Status returns a snapshot of every server, by name.
func (h *Host) Status() []Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Status, 0, len(h.servers))
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		out = append(out, h.snapshot(h.servers[name]))
	}
	return out
}

// snapshot is e's status with its live counters. Called with mu held.
func (h *Host) snapshot(e *entry) Status {
	st := e.status
	st.Stderr = slices.Clone(st.Stderr)
	st.Calls = e.calls.Load()
	if e.client != nil {
		st.Tools = len(e.tools)
		st.Stats = e.client.Stats()
	}
	if e.vs != nil {
		st.Variants, st.VariantsRefused = variantStatus(e), e.vs.refused
		st.Stats = st.Stats.Add(variantStats(e))
	}
	return st
}

// Tools returns the catalog: the tools of every ready server, namespaced,
// sorted by server, then by the server's order.
func (h *Host) Tools() []Tool {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Tool
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		e := h.servers[name]
		if e.client == nil {
			continue
		}
		for _, t := range append(slices.Clip(e.tools), variantTools(e)...) {
			nt := Tool{Tool: t, Server: name, ServerTool: t.Name}
			nt.Name = name + h.opts.Separator + t.Name
			out = append(out, nt)
		}
	}
	return out
}

// Resolve finds a namespaced tool name in the catalog and returns its
// server and its name there. ok is false when no tool has that name, or
// when several do (server "a" with a tool "b__c", server "a__b" with a tool
// "c"): call those by server and tool.
func (h *Host) Resolve(name string) (server, tool string, ok bool) {
	for _, t := range h.Tools() {
		if t.Name == name {
			if ok {
				return "", "", false
			}
			server, tool, ok = t.Server, t.ServerTool, true
		}
	}
	return server, tool, ok
}

type noWaitKey struct{}

// NoWait returns a context under which a call to a server that is not
// ready fails at once (ErrNotReady) instead of waiting for it.
func NoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

// CallTool calls tool on server. A server starting or restarting is waited
// for within ctx (unless NoWait); a parked or stopped one fails at once. An
// unknown or disabled server is KindUsage, one stopped by a removal or the
// host's Close KindClosed. A call in flight when its server dies fails at
// once with KindTransport, saying how the server ended and when it
// restarts.
func (h *Host) CallTool(ctx context.Context, server, tool string, args any, opts ...conduit.CallOption) (*conduit.CallToolResult, error) {
	const method = "tools/call"
	calls, e, c, done, err := h.route(ctx, server, method, tool, opts)
	if err != nil {
		return nil, err
	}
	defer done()
	calls.calls.Add(1)
	res, err := c.CallTool(ctx, tool, args, opts...)
	if err != nil {
		return nil, h.explain(ctx, server, e, c, method, err)
	}
	return res, nil
}

// ReadResource reads uri on server, waiting for it as CallTool does.
func (h *Host) ReadResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) (*conduit.ReadResourceResult, error) {
	const method = "resources/read"
	_, e, c, done, err := h.route(ctx, server, method, "", opts)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := c.ReadResource(ctx, uri, opts...)
	if err != nil {
		return nil, h.explain(ctx, server, e, c, method, err)
	}
	return res, nil
}

// RootsChanged tells servers that the roots of the host's Roots handler
// have changed (conduit.Client.RootsChanged): server names one, "" every
// server that is ready. A server not ready has nothing to be told (it asks
// for the roots anew once it starts), so it is skipped, without waiting
// for it; an unknown server is KindUsage (ErrUnknownServer). With "", the
// errors of the servers that failed are joined, in the order of their
// names.
func (h *Host) RootsChanged(ctx context.Context, server string) error {
	h.mu.Lock()
	clients := map[string][]*conduit.Client{} // a server's, then its variants' that declared roots
	for name, e := range h.servers {
		if (server == "" || name == server) && e.status.State == StateReady && e.client != nil {
			clients[name] = append([]*conduit.Client{e.client}, rootsVariants(e)...)
		}
	}
	_, known := h.servers[server]
	h.mu.Unlock()
	if server != "" && !known {
		return &conduit.Error{Kind: conduit.KindUsage, Method: "notifications/roots/list_changed", Message: fmt.Sprintf("no server %q", server), Err: ErrUnknownServer}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		for _, c := range clients[name] {
			if err := c.RootsChanged(ctx); err != nil {
				errs = append(errs, fmt.Errorf("server %q: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// ready waits until server is ready and returns its client.
func (h *Host) ready(ctx context.Context, server, method string) (*entry, *conduit.Client, error) {
	for {
		h.mu.Lock()
		e := h.servers[server]
		if e == nil {
			h.mu.Unlock()
			return nil, nil, &conduit.Error{Kind: conduit.KindUsage, Method: method, Message: fmt.Sprintf("no server %q", server), Err: ErrUnknownServer}
		}
		st, c, changed := e.status, e.client, e.changed
		disabled := e.cfg.Conduit.Disabled && !h.closed
		h.mu.Unlock()
		switch st.State {
		case StateReady:
			return e, c, nil
		case StateParked:
			return nil, nil, &conduit.Error{Kind: conduit.KindTransport, Method: method, Message: fmt.Sprintf("server %q is %s", server, describe(st)), Err: &stateError{ErrParked, st.Err}}
		case StateStopped:
			if disabled { // the caller's mistake: nothing was ever started
				return nil, nil, &conduit.Error{Kind: conduit.KindUsage, Method: method, Message: fmt.Sprintf("server %q is disabled in the configuration", server), Err: ErrStopped}
			}
			// Removed from the configuration, or the host closed: its
			// client was closed.
			return nil, nil, &conduit.Error{Kind: conduit.KindClosed, Method: method, Message: fmt.Sprintf("server %q is stopped", server), Err: ErrStopped}
		}
		if ctx.Value(noWaitKey{}) != nil {
			return nil, nil, &conduit.Error{Kind: conduit.KindTransport, Method: method, Message: fmt.Sprintf("server %q is %s", server, describe(st)), Err: &stateError{ErrNotReady, st.Err}}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e := messages.ContextEnded(ctx, method) // timeout or cancelled, as a call's
			e.Message = fmt.Sprintf("server %q was not ready in time: %s", server, describe(st))
			return nil, nil, e
		}
	}
}

// lostGrace bounds how long a failed call waits to learn whether its
// client ended (the client ends just after failing its calls).
const lostGrace = time.Second

// explain turns the failure of a call on client c into one that says the
// server exited and when it restarts, when that is what happened.
func (h *Host) explain(ctx context.Context, server string, e *entry, c *conduit.Client, method string, err error) error {
	var ce *conduit.Error
	if !errors.As(err, &ce) || !errors.Is(err, conduit.ErrConnectionEnded) {
		return err // the server answered, or only this request failed
	}
	grace := time.NewTimer(lostGrace)
	defer grace.Stop()
	select {
	case <-c.Done():
	case <-ctx.Done():
		return err
	case <-grace.C:
		return err
	}
	// Wait for the supervisor to decide what comes next.
	for {
		h.mu.Lock()
		cur, st, changed := h.servers[server], e.status, e.changed
		if e.v != nil && cur == e.v.main && cur.vs != nil && cur.vs.by[e.v.key] == e {
			cur = e // a variant still running
		}
		moved := cur != e || e.client != c
		h.mu.Unlock()
		if moved {
			how := "lost its connection"
			var exit *transport.ServerExitError
			if errors.As(err, &exit) {
				how = fmt.Sprintf("exited (%s)", exit.State)
			}
			msg := fmt.Sprintf("server %q %s", server, how)
			if e.v != nil {
				msg = fmt.Sprintf("server %q's connection declaring %s %s", server, setText(e.v.caps), how)
			}
			if cur == e {
				msg += "; " + describe(st)
			}
			return &conduit.Error{Kind: conduit.KindTransport, Method: method, Message: msg, Err: ce.Err, ConnectionEnded: true}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return err
		case <-grace.C:
			return err
		}
	}
}

// describe says what a server is doing, for an error message.
func describe(st Status) string {
	switch st.State {
	case StateRestarting:
		return fmt.Sprintf("restarting in %s (attempt %d)", time.Until(st.NextRetry).Round(time.Millisecond), st.Attempt)
	case StateParked:
		return "parked after " + RestartsText(st.Restarts)
	}
	return string(st.State)
}

// RestartsText says n restarts in words: "1 restart", "2 restarts".
func RestartsText(n int) string {
	if n == 1 {
		return "1 restart"
	}
	return fmt.Sprintf("%d restarts", n)
}

// stateError is why a call could not reach a server: a sentinel
// (ErrParked, ErrNotReady) for errors.Is, and the server's last failure,
// which it reads as.
type stateError struct {
	sentinel, last error
}

func (e *stateError) Error() string {
	if e.last == nil {
		return e.sentinel.Error()
	}
	return e.last.Error()
}

func (e *stateError) Unwrap() []error { return []error{e.sentinel, e.last} }

// Close stops every server and waits until all are stopped. Subscriptions
// end after the last event.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		h.tree.Close()
		h.wg.Wait()
		return nil
	}
	h.closed = true
	for _, e := range h.servers {
		if e.sup != nil {
			e.sup.stopped = true
		}
		if e.vs != nil {
			for _, ve := range e.vs.by {
				ve.sup.stopped = true
			}
		}
	}
	h.mu.Unlock()
	h.tree.Close() // stops every supervisor, retired ones included
	h.wg.Wait()
	h.mu.Lock()
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		e := h.servers[name]
		h.dropVariants(name, e, "the host closes")
		if e.status.State != StateStopped {
			e.sup, e.client, e.tools = nil, nil, nil
			h.set(name, e, Status{State: StateStopped, Restarts: e.status.Restarts})
		}
	}
	ended := make([]*subscriber, 0, len(h.subs))
	for s := range h.subs {
		s.end()
		delete(h.subs, s)
		ended = append(ended, s)
	}
	h.mu.Unlock()
	// The stopped events reach every subscriber before Close returns: one
	// that cancels next loses none (the forwarder drops only on cancel).
	for _, s := range ended {
		<-s.done
	}
	return nil
}

// server is one supervised server: the work its supervisor actor (an
// restart.Tree child) has done. The actor calls Connect and Serve in a
// goroutine it owns, and Report from its Receive.
type server struct {
	h       *Host
	name    string
	policy  RestartPolicy
	ping    PingPolicy
	start   time.Duration // the start's bound (0: DefaultStartTimeout)
	t       transport.Transport
	opts    conduit.Options
	tail    *stderrTail   // nil when the transport keeps no stderr
	refresh chan struct{} // a tools/list_changed arrived
	actor   *restart.Supervised
	stopped bool   // set under Host.mu when it is stopped: it publishes nothing more
	variant *entry // the variant it runs (variants.go); nil for a server's main connection
}

func (h *Host) newServer(name string, cfg Server) (*server, error) {
	s := &server{
		h: h, name: name,
		policy:  cfg.Conduit.Restart,
		ping:    cfg.Conduit.Ping,
		start:   cfg.Conduit.StartTimeout,
		refresh: make(chan struct{}, 1),
	}
	if s.ping.Interval == 0 && cfg.URL != "" {
		s.ping.Interval = DefaultRemotePing
	}
	if s.ping.Interval > 0 && s.ping.Failures <= 0 {
		s.ping.Failures = DefaultPingFailures
	}
	logger := h.opts.Client.Logger.With("server", name)
	var err error
	if h.opts.Transport != nil {
		s.t, err = h.opts.Transport(name, cfg)
	} else {
		s.t, err = defaultTransport(cfg, logger, h.opts.MaxMessageBytes), nil
	}
	if err != nil {
		return nil, err
	}
	if cmd, ok := s.t.(*transport.Command); ok && cmd.Logger == nil {
		// Keep the last stderr lines for Status; they also reach logger, as
		// conduit.Connect would send them there.
		withTail := *cmd
		s.tail = &stderrTail{}
		withTail.Logger = slog.New(&tailHandler{next: logger.Handler(), tail: s.tail})
		s.t = &withTail
	}
	s.opts, err = clientOptions(h.opts.Client, name, cfg.Conduit, logger, s.refresh)
	if err != nil {
		return nil, err
	}
	if h.opts.ServerOptions != nil {
		s.opts = h.opts.ServerOptions(name, s.opts)
	}
	if s.opts.System == nil {
		// The server's connection actors live in the tree's system,
		// beside the actor that supervises them.
		s.opts.System = h.tree.System()
	}
	// The ping policy is the client's keep-alive: one implementation of
	// the rule. "off" (a negative interval) sends none; without a policy
	// (a stdio server's default) Options.Client's keep-alive stands.
	switch {
	case s.ping.Interval < 0:
		s.opts.KeepAlive = 0
	case s.ping.Interval > 0:
		s.opts.KeepAlive, s.opts.KeepAliveFailures = s.ping.Interval, s.ping.Failures
	}
	return s, nil
}

// defaultTransport builds the transport cfg describes, with a message
// limit of maxBytes (0: the transport's default).
func defaultTransport(cfg Server, logger *slog.Logger, maxBytes int) transport.Transport {
	if cfg.URL != "" {
		header := http.Header{}
		for k, v := range cfg.Headers {
			header.Set(k, v)
		}
		if cfg.SSE {
			return &transport.SSE{URL: cfg.URL, Header: header, Logger: logger, MaxEventBytes: maxBytes}
		}
		t := &transport.HTTP{URL: cfg.URL, Header: header, Logger: logger, MaxBodyBytes: maxBytes, MaxEventBytes: maxBytes, SSEFallback: true}
		o := cfg.Conduit.OAuth.OAuthConfig() // the stored tokens (conduit login), refreshed
		o.Store = oauth.DefaultStore()
		oauth.Attach(t, o)
		return t
	}
	return &transport.Command{Path: cfg.Command, Args: cfg.Args, Env: serverEnv(cfg, os.Environ()), Dir: cfg.Cwd, MaxMessageBytes: maxBytes}
}

// InheritedEnv are the variables of the host's environment a stdio server
// gets without Settings.InheritEnv: those a program needs to run (find
// programs, a home, a user, a terminal), the TypeScript SDK's default set.
var InheritedEnv = inheritedEnv(runtime.GOOS)

func inheritedEnv(goos string) []string {
	if goos == "windows" {
		return []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE", "PROGRAMFILES"}
	}
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
}

// serverEnv is the environment of cfg's process, from environ (the host's):
// InheritedEnv of it, or all of it with InheritEnv, then cfg.Env.
func serverEnv(cfg Server, environ []string) []string {
	env := []string{} // not nil: os/exec gives a nil Env the whole environment
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if cfg.Conduit.InheritEnv || slices.Contains(InheritedEnv, k) {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		env = append(env, k+"="+cfg.Env[k])
	}
	return env
}

// withHandlers makes o's handlers a handler set (Handlers, from Handler
// when that is set) that the server's settings can complete, with a
// logger.
func withHandlers(o conduit.Options) (conduit.Options, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Handler != nil {
		h, err := conduit.HandlersOf(o.Handler)
		if err != nil {
			return o, err
		}
		o.Handler, o.Handlers = nil, h
	}
	return o, nil
}

// Connection returns what connecting to the server name of cfg takes
// outside a Host, for a one-off client or a load generator: its transport
// (for a stdio server, each Connect starts a new process) and the client
// options, base with the server's settings and its name as ServerID, as
// the Host's own clients get them. It supervises nothing. The error is
// ErrUnknownServer for a name cfg does not hold.
func (cfg Config) Connection(name string, base conduit.Options) (transport.Transport, conduit.Options, error) {
	server, ok := cfg.Servers[name]
	if !ok {
		return nil, conduit.Options{}, fmt.Errorf("%w %q", ErrUnknownServer, name)
	}
	base, err := withHandlers(base)
	if err != nil {
		return nil, conduit.Options{}, err
	}
	logger := base.Logger.With("server", name)
	o, err := serverOptions(base, name, server.Conduit, logger)
	if err != nil {
		return nil, conduit.Options{}, err
	}
	return defaultTransport(server, logger, 0), o, nil
}

// clientOptions are the options of one server's clients under a Host:
// serverOptions, and a ToolsChanged hook that asks for a fresh tools/list
// on tools/list_changed.
func clientOptions(base conduit.Options, name string, set Settings, logger *slog.Logger, refresh chan<- struct{}) (conduit.Options, error) {
	o, err := serverOptions(base, name, set, logger)
	if err != nil {
		return o, err
	}
	// The typed hook: in the modern era setting it opens the server's
	// subscriptions/listen stream, so a modern server's catalog refreshes
	// as a legacy one's does. A hook of the base options still runs (the
	// Notification hook, which no longer sees the method, in its stead).
	next, note := o.Handlers.ToolsChanged, o.Handlers.Notification
	o.Handlers.ToolsChanged = func(ctx context.Context, nc conduit.NotificationContext, ch *conduit.ToolsChange) {
		select {
		case refresh <- struct{}{}:
		default: // one is pending already
		}
		switch {
		case next != nil:
			next(ctx, nc, ch)
		case note != nil:
			note(ctx, nc, &conduit.Notification{Method: messages.MethodToolsListChanged})
		}
	}
	return o, nil
}

// serverOptions are the options of one server's clients: base, with the
// server's name as ServerID and its settings.
func serverOptions(base conduit.Options, name string, set Settings, logger *slog.Logger) (conduit.Options, error) {
	o := base
	o.ServerID, o.Logger = name, logger
	if set.Era != "" {
		o.Era = set.Era
	}
	if set.ProtocolVersion != "" {
		o.ProtocolVersion = set.ProtocolVersion
	}
	o.Timeout = cmp.Or(set.Timeout, o.Timeout)
	o.MaxTotalTimeout = cmp.Or(set.MaxTotalTimeout, o.MaxTotalTimeout)
	o.HandlerTimeout = cmp.Or(set.HandlerTimeout, o.HandlerTimeout)
	o.MaxServerRequests = cmp.Or(set.MaxServerRequests, o.MaxServerRequests)
	if set.Roots != nil {
		roots, err := rootsOf(set.Roots)
		if err != nil {
			return conduit.Options{}, err
		}
		o.Handlers.Roots = func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: slices.Clone(roots)}, nil
		}
	}
	return o, nil
}

// stop stops s's supervisor; its state is no longer published. Called with
// Host.mu held.
func (s *server) stop() {
	s.stopped = true
	s.actor.Stop()
}

// Report publishes a state of the server, with the stderr tail; a ready
// one's session is its client.
func (s *server) Report(r restart.Report) {
	st := Status{State: r.State, Restarts: r.Restarts, Attempt: r.Attempt, NextRetry: r.NextRetry, Err: r.Err, Stderr: s.tail.lines()}
	var c *conduit.Client
	var tools []conduit.Tool
	if ss, ok := r.Session.(*session); ok {
		st.PID, c, tools = ss.pid, ss.c, ss.tools
	}
	s.h.update(s, func(e *entry) {
		e.client, e.tools = c, tools // before set: its event counts them
		s.h.set(s.name, e, st)
	})
}

// session is one ready connection of a server.
type session struct {
	s     *server
	c     *conduit.Client
	pid   int
	tools []conduit.Tool // the first tools/list
}

// Connect connects and lists the tools; the server is then ready.
func (s *server) Connect(ctx context.Context) (restart.ServerSession, error) {
	limit := cmp.Or(s.start, DefaultStartTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("did not finish its handshake and first tools/list within %s (startTimeout)", limit))
	defer cancel()
	pt := &pidTransport{Transport: s.t}
	c, err := conduit.Connect(ctx, pt, s.opts)
	if err != nil {
		return nil, startErr(ctx, err)
	}
	s.variantLevel(ctx, c)
	var tools []conduit.Tool
	if s.variant == nil { // a variant serves calls; the catalog is the main's
		if tools, err = listTools(ctx, c); err != nil {
			_ = c.Close()
			return nil, startErr(ctx, err)
		}
	}
	return &session{s: s, c: c, pid: int(pt.pid.Load()), tools: tools}, nil
}

// startErr is err, or, when the start's deadline is what ended it, that.
func startErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// Close closes the session's client.
func (ss *session) Close() error { return ss.c.Close() }

// Serve watches the ready server until its client ends (its error) or ctx
// ends, refreshing its tools on tools/list_changed. Its ping policy is the
// client's keep-alive (newServer): a server that misses it ends the client.
func (ss *session) Serve(ctx context.Context) error {
	s, c := ss.s, ss.c
	var listed chan listing // non-nil while a tools/list runs
	again := false          // another list_changed came during it
	list := func() chan listing {
		return helper(s.h, func() listing {
			if !hasCapability(c.ServerCapabilities(), "tools") {
				return listing{} // no tools to list
			}
			tools, err := c.ListTools(ctx)
			if err != nil {
				s.opts.Logger.Warn("tools/list after list_changed failed; the catalog keeps the tools listed before", "err", err)
			}
			return listing{tools, err}
		})
	}
	for {
		select {
		case <-c.Done():
			// The client's keep-alive (Options.KeepAlive, from the
			// ping policy) ends it; the host says why as it always has.
			var ka *conduit.KeepAliveError
			if err := c.Err(); !errors.As(err, &ka) {
				return err
			}
			return ka
		case <-ctx.Done():
			return ctx.Err()
		case <-s.refresh:
			if listed != nil {
				again = true
				break
			}
			listed = list()
		case l := <-listed:
			listed = nil
			s.h.update(s, func(e *entry) {
				if e.client != c {
					return
				}
				// An empty list is a listing too: only a failed one keeps
				// the old tools.
				changed := (e.status.ToolsErr == nil) != (l.err == nil)
				if e.status.ToolsErr = l.err; l.err == nil {
					changed = changed || !sameNames(e.tools, l.tools)
					e.tools = l.tools
				}
				if changed && e.v != nil {
					s.h.emitTools(e.v.main) // a variant's tools are its server's
				} else if changed {
					s.h.emitTools(e)
				}
			})
			if again {
				again = false
				listed = list()
			}
		}
	}
}

// sameNames reports whether a and b list the same tool names in the same
// order: what the catalog shows of them.
func sameNames(a, b []conduit.Tool) bool {
	return slices.EqualFunc(a, b, func(x, y conduit.Tool) bool { return x.Name == y.Name })
}

// listing is the outcome of a tools/list.
type listing struct {
	tools []conduit.Tool
	err   error
}

// helper runs fn in a goroutine the host waits for, and delivers its
// result on the returned channel (buffered: the helper never blocks).
func helper[T any](h *Host, fn func() T) chan T {
	ch := make(chan T, 1)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		ch <- fn()
	}()
	return ch
}

// listTools lists c's tools; a server without the tools capability has
// none, and one that refuses tools/list (an RPC error) is served without.
func listTools(ctx context.Context, c *conduit.Client) ([]conduit.Tool, error) {
	if !hasCapability(c.ServerCapabilities(), "tools") {
		return nil, nil
	}
	tools, err := c.ListTools(ctx)
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.Kind == conduit.KindRPC {
		return nil, nil
	}
	return tools, err
}

// pidTransport records the process id of the connections it opens, when
// they report one.
type pidTransport struct {
	transport.Transport
	pid atomic.Int64
}

func (t *pidTransport) Connect(ctx context.Context) (transport.Conn, error) {
	conn, err := t.Transport.Connect(ctx)
	if p, ok := conn.(interface{ Pid() int }); ok && err == nil {
		t.pid.Store(int64(p.Pid()))
	}
	return conn, err
}
