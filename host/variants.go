package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/restart"
)

// A legacy server learns its client's capabilities once, at initialize.
// A call made on behalf of another client (conduit.WithCapabilities, as
// the gateway makes each) should reach a server told that client's
// capabilities, not the host's: the host runs, per legacy server, a
// connection per capability set its callers declare (a variant), beside
// the server's main one (docs/decisions.md #78).

// Defaults of the variants (Options.MaxVariants, Options.VariantIdle).
const (
	// DefaultMaxVariants bounds the variants of one server: a process (or
	// session) each, beside its main connection.
	DefaultMaxVariants = 4
	// DefaultVariantIdle closes a variant that has had no call for that
	// long.
	DefaultVariantIdle = 5 * time.Minute
)

// ErrTooManyVariants: a legacy server already runs Options.MaxVariants
// variants, each with a call in flight, and the call's capability set
// would need another.
var ErrTooManyVariants = errors.New("host: too many capability sets")

// Variant is one variant of a server, in its Status.
type Variant struct {
	// Capabilities are those its initialize declared (conduit.Capabilities
	// paths, roots.listChanged left out); empty: none.
	Capabilities []string
	State        State
	Since        time.Time
	// PID, Restarts, Err: as a server's (Status).
	PID      int
	Restarts int
	Err      error
	// Calls counts the calls it served; InFlight those it serves now.
	Calls    int64
	InFlight int
}

// variants are the variants of one server's main entry. Guarded by
// Host.mu.
type variants struct {
	by map[string]*entry // by key (the capability names, space separated)
	// sets memoizes what a call's names come to on this server: the key of
	// the capabilities its client would declare with them.
	sets map[string]string
	// refused counts the calls refused at the cap (ErrTooManyVariants).
	refused int64
	// past are the counters of the variants closed since the main
	// connection started; level is the log level it was last set to.
	past  conduit.Stats
	level string
}

// variant is what a variant's entry has beside a server's. Guarded by
// Host.mu.
type variant struct {
	main     *entry
	key      string
	caps     []string
	inflight int
	used     time.Time   // when its last call returned
	idle     *time.Timer // armed while inflight is 0
	gen      int         // the idle timer's: a timer of an older one does nothing
}

// variantsOf is e's variants, made on first need. Called with mu held.
func (e *entry) variantsOf() *variants {
	if e.vs == nil {
		e.vs = &variants{by: map[string]*entry{}, sets: map[string]string{}}
	}
	return e.vs
}

// keyOf is what the names of a call come to on server s: the capabilities
// its client declares when told to declare only those (conduit's rule,
// conduit.Capabilities; never more than the main connection declares, when
// the host's client options narrow it themselves), as a key; nil names,
// the main connection's. Called with mu held.
func (s *server) keyOf(vs *variants, names []string) (string, []string, error) {
	asked := "*" // the main connection's
	if names != nil {
		asked = "=" + strings.Join(names, " ")
	}
	if k, ok := vs.sets[asked]; ok {
		return k, strings.Fields(k), nil
	}
	o := s.opts
	var own []string // what the main connection declares, when narrowed itself
	if names != nil {
		if o.DeclareOnly != nil {
			_, own, _ = s.keyOf(vs, nil)
		}
		o.DeclareOnly = names
	}
	caps, err := conduit.Capabilities(o)
	if err != nil {
		return "", nil, err
	}
	told := []string{} // not nil: none declares none (DeclareOnly)
	for _, c := range caps {
		if c.Advertised && c.Name != "roots.listChanged" && (own == nil || slices.Contains(own, c.Name)) {
			told = append(told, c.Name)
		}
	}
	k := strings.Join(told, " ")
	vs.sets[asked] = k // at most the 2^6 sets WithCapabilities names, and the main's
	return k, told, nil
}

// route is the connection a call with opts goes to: server's main one,
// once ready; or, for a server whose main connection speaks the legacy era
// and a call made WithCapabilities whose set its main connection does not
// declare, the variant declaring that set, started on first need and
// waited for within ctx (NoWait or not: its start is part of the call).
// done ends the call's hold on its variant. calls is the main entry (its
// Calls count every call of the server).
func (h *Host) route(ctx context.Context, server, method, tool string, opts []conduit.CallOption) (calls, e *entry, c *conduit.Client, done func(), err error) {
	e, c, err = h.ready(ctx, server, method)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// Without WithCapabilities (names nil: the main's set) a call still
	// goes where its tool is listed (toolConn).
	names, ok := conduit.CapabilitiesOf(opts...)
	if !ok && tool == "" || h.opts.MaxVariants < 0 || c.Era() != conduit.EraLegacy {
		return e, e, c, func() {}, nil
	}
	h.mu.Lock()
	ve, err := h.variantFor(server, method, tool, e, names)
	h.mu.Unlock()
	if err != nil || ve == nil {
		return e, e, c, func() {}, err
	}
	done = func() { h.release(ve) }
	if c, err = h.readyVariant(ctx, server, method, ve); err != nil {
		done()
		return nil, nil, nil, nil, err
	}
	return e, ve, c, done, nil
}

// variantFor is the variant of main for names, nil when the main
// connection declares that set; one is started when none runs, past the
// cap in the stead of the variant idle longest. The call holds it
// (inflight) until release. A call of a tool (tool not "") that the
// connection for names would not list but another of the server's does
// goes to that one (toolConn). Called with mu held.
func (h *Host) variantFor(server, method, tool string, main *entry, names []string) (*entry, error) {
	if h.closed || main.sup == nil || h.servers[server] != main {
		return nil, nil // the caller's client fails the call as it ends
	}
	vs := main.variantsOf()
	own, _, err := main.sup.keyOf(vs, nil)
	if err != nil {
		return nil, err
	}
	key, caps, err := main.sup.keyOf(vs, names)
	if err != nil {
		return nil, err
	}
	if key = toolConn(vs, main, own, key, tool); key == own {
		return nil, nil
	}
	ve := vs.by[key]
	if ve == nil {
		if max := h.maxVariants(); len(vs.by) >= max {
			victim := h.idlest(vs)
			if victim == nil {
				vs.refused++
				h.opts.Client.Logger.Warn("host: a call's capability set needs a connection of its own and every one the server may run is busy; refused",
					"server", server, "capabilities", setText(caps), "max", max, "refused", vs.refused)
				return nil, &conduit.Error{Kind: conduit.KindRefused, Method: method, Message: fmt.Sprintf(
					"server %q already runs %d connections for other capability sets, each with a call in flight (at most %d: host option MaxVariants); none is left for %s",
					server, len(vs.by), max, setText(caps)), Err: ErrTooManyVariants}
			}
			h.dropVariant(server, victim, "to make room for "+setText(caps))
		}
		if ve, err = h.launchVariant(server, main, key, caps); err != nil {
			return nil, err
		}
		vs.by[key] = ve
	}
	ve.v.inflight++
	ve.calls.Add(1)
	if ve.v.idle != nil {
		ve.v.idle.Stop()
		ve.v.idle = nil
	}
	return ve, nil
}

// maxVariants is Options.MaxVariants with its default.
func (h *Host) maxVariants() int {
	if h.opts.MaxVariants == 0 {
		return DefaultMaxVariants
	}
	return h.opts.MaxVariants
}

// idlest is the variant of vs without a call in flight whose last call
// returned first; nil when each has one. Called with mu held.
func (h *Host) idlest(vs *variants) *entry {
	var out *entry
	for _, k := range slices.Sorted(maps.Keys(vs.by)) {
		ve := vs.by[k]
		if ve.v.inflight == 0 && (out == nil || ve.v.used.Before(out.v.used)) {
			out = ve
		}
	}
	return out
}

// launchVariant starts the variant of main declaring caps, supervised as
// its main connection is (the same transport settings, restart policy and
// start timeout), pinned to the legacy era its main connection speaks.
// Called with mu held.
func (h *Host) launchVariant(server string, main *entry, key string, caps []string) (*entry, error) {
	s, err := h.newServer(server, main.cfg)
	if err != nil {
		return nil, err
	}
	s.opts.DeclareOnly = caps
	s.opts.Era = conduit.EraLegacy
	ve := &entry{cfg: main.cfg, sup: s, changed: make(chan struct{}), v: &variant{main: main, key: key, caps: caps}}
	s.variant = ve
	ve.status = Status{Server: server, State: StateStarting, Since: time.Now()}
	h.opts.Client.Logger.Info("host: starting a connection for a capability set", "server", server, "capabilities", setText(caps))
	s.actor = h.tree.Start(s, restart.ServerSpec{Name: server + " (" + setText(caps) + ")", Policy: s.policy, Jitter: h.opts.Jitter})
	return ve, nil
}

// release ends a call's hold on ve; the last arms its idle close.
func (h *Host) release(ve *entry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := ve.v
	v.inflight--
	v.used = time.Now()
	if v.inflight > 0 || ve.sup == nil {
		return
	}
	v.gen++
	gen := v.gen
	idle := h.opts.VariantIdle
	if idle <= 0 {
		idle = DefaultVariantIdle
	}
	v.idle = time.AfterFunc(idle, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.closed || v.gen != gen || v.inflight > 0 || v.main.vs == nil || v.main.vs.by[v.key] != ve {
			return
		}
		h.dropVariant(ve.status.Server, ve, fmt.Sprintf("idle for %s", idle))
	})
}

// dropVariant stops ve and forgets it; why is logged. Called with mu
// held.
func (h *Host) dropVariant(server string, ve *entry, why string) {
	v := ve.v
	if v.main.vs != nil && v.main.vs.by[v.key] == ve {
		delete(v.main.vs.by, v.key)
	}
	if v.idle != nil {
		v.idle.Stop()
		v.idle = nil
	}
	if ve.sup != nil {
		if !ve.sup.stopped {
			ve.sup.stop()
		}
		h.opts.Client.Logger.Info("host: closing a capability set's connection", "server", server, "capabilities", setText(v.caps), "why", why)
	}
	if ve.client != nil && v.main.vs != nil {
		v.main.vs.past = v.main.vs.past.Add(ve.client.Stats())
	}
	if len(ve.tools) > 0 {
		h.catalogChanged() // the tools it alone listed are gone
	}
	ve.sup, ve.client, ve.tools = nil, nil, nil
	ve.status = Status{Server: server, State: StateStopped, Since: time.Now(), Restarts: ve.status.Restarts}
	close(ve.changed)
	ve.changed = make(chan struct{})
}

// dropVariants stops every variant of e (its configuration changed, it
// restarts, it is removed, or the host closes). Called with mu held.
func (h *Host) dropVariants(name string, e *entry, why string) {
	if e.vs == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(e.vs.by)) {
		h.dropVariant(name, e.vs.by[k], why)
	}
	// The sets are memoized for a supervisor: the next may have other
	// settings.
	// The counters of the closed ones are of the connection that ends.
	e.vs = &variants{by: map[string]*entry{}, sets: map[string]string{}, refused: e.vs.refused}
}

// readyVariant waits until ve is ready and returns its client.
func (h *Host) readyVariant(ctx context.Context, server, method string, ve *entry) (*conduit.Client, error) {
	for {
		h.mu.Lock()
		st, c, changed := ve.status, ve.client, ve.changed
		h.mu.Unlock()
		what := fmt.Sprintf("server %q's connection declaring %s", server, setText(ve.v.caps))
		switch st.State {
		case StateReady:
			return c, nil
		case StateParked:
			return nil, &conduit.Error{Kind: conduit.KindTransport, Method: method, Message: what + " is " + describe(st), Err: &stateError{ErrParked, st.Err}}
		case StateStopped:
			return nil, &conduit.Error{Kind: conduit.KindClosed, Method: method, Message: what + " is stopped", Err: ErrStopped}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			e := messages.ContextEnded(ctx, method)
			e.Message = fmt.Sprintf("%s was not ready in time: %s", what, describe(st))
			return nil, e
		}
	}
}

// variantStatus is what Status shows of e's variants, by key. Called with
// mu held.
func variantStatus(e *entry) []Variant {
	if e.vs == nil || len(e.vs.by) == 0 {
		return nil
	}
	out := make([]Variant, 0, len(e.vs.by))
	for _, k := range slices.Sorted(maps.Keys(e.vs.by)) {
		ve := e.vs.by[k]
		out = append(out, Variant{Capabilities: slices.Clone(ve.v.caps), State: ve.status.State, Since: ve.status.Since,
			PID: ve.status.PID, Restarts: ve.status.Restarts, Err: ve.status.Err, Calls: ve.calls.Load(), InFlight: ve.v.inflight})
	}
	return out
}

// setText names a capability set for a message: "sampling, roots", or
// "no capabilities".
func setText(caps []string) string {
	if len(caps) == 0 {
		return "no capabilities"
	}
	return strings.Join(caps, ", ")
}

// rootsVariants are the clients of e's ready variants that declared roots:
// they are told of a change of the roots as the main one is. Called with
// mu held.
func rootsVariants(e *entry) []*conduit.Client {
	if e.vs == nil {
		return nil
	}
	var out []*conduit.Client
	for _, k := range slices.Sorted(maps.Keys(e.vs.by)) {
		ve := e.vs.by[k]
		if ve.status.State == StateReady && ve.client != nil && slices.Contains(ve.v.caps, "roots") {
			out = append(out, ve.client)
		}
	}
	return out
}

// variantChanged publishes a variant's new state: to the calls waiting
// for it, and, when it is ready, failed or parked, to the logs (a
// variant's states are no events: those are the server's). Called with
// mu held.
func (h *Host) variantChanged(ve *entry) {
	st := ve.status
	attrs := []any{"server", st.Server, "capabilities", setText(ve.v.caps)}
	switch st.State {
	case StateReady:
		h.opts.Client.Logger.Info("host: a capability set's connection is ready", append(attrs, "pid", st.PID)...)
	case StateRestarting, StateParked:
		h.opts.Client.Logger.Warn("host: a capability set's connection failed", append(attrs, "state", string(st.State), "err", st.Err)...)
	}
	close(ve.changed)
	ve.changed = make(chan struct{})
}

// toolConn is the key of the connection of the server a call of tool goes
// to: key's, unless it would not list tool while another connection of
// the server does (a tool a variant's own tools/list_changed added: a
// stdio variant is a process of its own, so only it has the tool the
// catalog lists): then the main's (own) if it lists tool, else the first
// running variant that does. A variant not running yet would start with
// the tools the main lists. Called with mu held.
func toolConn(vs *variants, main *entry, own, key, tool string) string {
	want := main
	if ve := vs.by[key]; key != own && ve != nil {
		want = ve
	}
	if tool == "" || lists(main, want, tool) {
		return key
	}
	if lists(main, main, tool) {
		return own
	}
	for _, k := range slices.Sorted(maps.Keys(vs.by)) {
		if ve := vs.by[k]; ve.client != nil && lists(main, ve, tool) {
			return k
		}
	}
	return key
}

// lists reports whether e, main or one of its variants, lists tool: a
// variant that has not listed its own tools (none changed since it
// started) has the main's. Called with mu held.
func lists(main, e *entry, tool string) bool {
	tools := e.tools
	if e != main && tools == nil {
		tools = main.tools
	}
	return slices.ContainsFunc(tools, func(t conduit.Tool) bool { return t.Name == tool })
}

// variantTools are the tools e's ready variants list and its main
// connection does not: a stdio variant is a process of its own, so a tool
// that changes its server's tools changes that process's (its
// tools/list_changed lists them; variants list nothing until then). Each
// is served under the server's name; a call to it reaches the connection
// of its caller's set. Called with mu held.
func variantTools(e *entry) []conduit.Tool {
	if e.vs == nil {
		return nil
	}
	var out []conduit.Tool
	seen := map[string]bool{}
	for _, t := range e.tools {
		seen[t.Name] = true
	}
	for _, k := range slices.Sorted(maps.Keys(e.vs.by)) {
		ve := e.vs.by[k]
		if ve.client == nil {
			continue
		}
		for _, t := range ve.tools {
			if !seen[t.Name] {
				seen[t.Name] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// variantStats are the counters of e's variants: the running ones', and
// those closed since its main connection started. Called with mu held.
func variantStats(e *entry) conduit.Stats {
	st := e.vs.past
	for _, ve := range e.vs.by {
		if ve.client != nil {
			st = st.Add(ve.client.Stats())
		}
	}
	return st
}

// variantsLevel sets server's variants to level, as its main connection
// was (SetLogLevel), and keeps it for those that start later: a call's
// log entries come from the connection that serves it. A variant that
// fails is logged; the main connection's answer is the call's.
func (h *Host) variantsLevel(ctx context.Context, server, level string) {
	h.mu.Lock()
	e := h.servers[server]
	var clients []*conduit.Client
	if e != nil {
		vs := e.variantsOf()
		vs.level = level
		for _, k := range slices.Sorted(maps.Keys(vs.by)) {
			if c := vs.by[k].client; c != nil {
				clients = append(clients, c)
			}
		}
	}
	h.mu.Unlock()
	for _, c := range clients {
		if err := c.SetLogLevel(ctx, level); err != nil {
			h.opts.Client.Logger.Warn("host: logging/setLevel on a capability set's connection failed", "server", server, "err", err)
		}
	}
}

// variantLevel sets a variant's fresh client c to the level its server
// was last set to, if any.
func (s *server) variantLevel(ctx context.Context, c *conduit.Client) {
	if s.variant == nil {
		return
	}
	s.h.mu.Lock()
	level := ""
	if vs := s.variant.v.main.vs; vs != nil {
		level = vs.level
	}
	s.h.mu.Unlock()
	if level == "" {
		return
	}
	if err := c.SetLogLevel(ctx, level); err != nil {
		s.opts.Logger.Warn("host: logging/setLevel on a capability set's connection failed", "err", err)
	}
}
