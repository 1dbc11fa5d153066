// Package gateway serves a host's servers (package host) as one MCP server:
// their tools and prompts under the catalog's names (SERVER__NAME, or the
// server's own with "prefix": false), their resources by URI. The
// downstream face is the go-sdk server (mcp.Server, its Streamable HTTP
// handler and stdio transport); what is Conduit's is the upstream side:
// supervision, the guards, both eras, and the relay of every input request
// of an upstream server to the downstream client whose call caused it
// (docs/gateway.md).
package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// Options configure a Gateway. The zero value is valid.
type Options struct {
	// Name and Version are the gateway's serverInfo ("conduit-gateway").
	Name, Version string
	// Logger receives the gateway's own logs and the host's; nil discards.
	Logger *slog.Logger
	// Host are the host's options. Their Client.Handlers' input callbacks
	// (Sampling, Elicitation, Roots) and Progress are replaced by the
	// relay: an upstream server's input and progress go to the downstream
	// client of its call, nowhere else. The other hooks are kept.
	Host host.Options
	// Sessions bound each downstream session (its calls in flight, its
	// input budget, its idle timeout). The zero value takes the defaults.
	Sessions SessionLimits
	// Upstream, when set, makes the servers the gateway serves instead of
	// host.New: it gets the configuration and the host options above (with
	// the relay's handlers). Package cluster's members use it.
	Upstream func(host.Config, host.Options) (Upstream, error)
	// Members, when set, makes the gateway one member of several serving
	// the same endpoint: a modern client's retry may reach any of them.
	Members Members
}

// Gateway is a host served as one MCP server. Its methods are safe for
// concurrent use.
type Gateway struct {
	h      Upstream
	cfg    host.Config
	srv    *mcp.Server
	logger *slog.Logger
	relay  *relays
	prog   progressRoutes
	logs   logRoutes // modern clients' requests that asked for entries

	members Members // nil for a gateway on its own
	// sessions supervises the downstream sessions, one actor each
	// (session.go).
	sessions *sessions

	// serial holds, per upstream server whose input requests the wire
	// cannot attribute (a legacy stdio server), the gate that runs a call
	// that may ask for input alone (docs/decisions.md #37).
	serial map[string]*gate

	mu        sync.Mutex
	tools     map[string]exposed // by exposed name
	prompts   map[string]exposed
	resources map[string]exposed // by URI
	refused   map[string]bool    // exposed names withheld for a collision, logged once
	more      extras             // templates, completions, subscriptions, logging (relay_lists.go)

	stop chan struct{}
	done chan struct{}

	refusedLines atomic.Int64 // stdio lines answered with an error (stdio.go)
}

// exposed is an item of the catalog under its downstream name.
type exposed struct {
	server, name string // the server, and the item's name there
	def          string // its definition as JSON: a change re-adds it
}

// relayKey is the assign under which a call carries its downstream relay
// to the input callbacks.
const relayKey = "conduit.gateway.relay"

// New starts a host on cfg (host.New) and serves its catalog. The servers
// start in the background; their tools appear as each becomes ready.
func New(cfg host.Config, opts Options) (*Gateway, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{
		cfg: cfg, logger: logger, serial: map[string]*gate{},
		tools: map[string]exposed{}, prompts: map[string]exposed{}, resources: map[string]exposed{}, refused: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	if g.members = opts.Members; g.members != nil {
		g.relay = newRelays(g.members.StateKey(), g.members.Self())
	} else {
		g.relay = newRelays(nil, "")
	}
	g.sessions = newSessions(logger, opts.Sessions)
	g.relay.stray = g.stray
	ho := opts.Host
	if ho.Client.Logger == nil {
		ho.Client.Logger = logger
	}
	if ho.Client.Handler != nil {
		hs, err := conduit.HandlersOf(ho.Client.Handler)
		if err != nil {
			return nil, err
		}
		ho.Client.Handler, ho.Client.Handlers = nil, hs
	}
	ho.Client.Handlers.Sampling = g.relay.sampling
	ho.Client.Handlers.Elicitation = g.relay.elicitation
	ho.Client.Handlers.ElicitationModes = []string{"form", "url"}
	ho.Client.Handlers.Roots = g.relay.roots
	ho.Client.Handlers.Progress = g.prog.relay
	g.relayHandlers(&ho.Client.Handlers)
	newUpstream := func(cfg host.Config, ho host.Options) (Upstream, error) { return host.New(cfg, ho) }
	if opts.Upstream != nil {
		newUpstream = opts.Upstream
	}
	h, err := newUpstream(cfg, ho)
	if err != nil {
		return nil, err
	}
	g.h = h
	if gating, ok := h.(Gating); !ok || !gating.GatesServers() {
		for name, s := range cfg.Servers {
			if Gated(s) {
				gt := newGate()
				gt.onPreempt = func(n int) {
					logger.Warn("gateway: a modern client's parked round held a gated server while another call waited; cancelled upstream",
						"server", name, "cancelled", n, "total", gt.preempted.Load())
				}
				g.serial[name] = gt
			}
		}
	}
	so := &mcp.ServerOptions{
		Logger:       logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	}
	g.serverOptions(so)
	g.sessionIDs(so)
	g.srv = mcp.NewServer(&mcp.Implementation{Name: cmp.Or(opts.Name, "conduit-gateway"), Version: cmp.Or(opts.Version, "dev")}, so)
	g.srv.AddReceivingMiddleware(g.setLevel, g.noteSessions)
	go g.follow()
	return g, nil
}

// Host is the gateway's host: its servers' status and events; nil when
// Options.Upstream made its servers.
func (g *Gateway) Host() *host.Host {
	h, _ := g.h.(*host.Host)
	return h
}

// Upstream is what the gateway serves: its Host, or what Options.Upstream
// made.
func (g *Gateway) Upstream() Upstream { return g.h }

// SessionStats are the counters of the downstream sessions: open,
// closed (and why), failed, and the calls and inputs their limits refused.
func (g *Gateway) SessionStats() SessionStats { return g.sessions.stats() }

// Server is the downstream MCP server, for a transport of the caller's
// (Server.Run, Server.Connect).
func (g *Gateway) Server() *mcp.Server { return g.srv }

// Close stops serving the catalog, closes every downstream session and
// stops every server.
func (g *Gateway) Close() error {
	select {
	case <-g.stop:
	default:
		close(g.stop)
	}
	g.relay.close() // a parked call's turn is what a sync may be waiting for
	<-g.done
	g.sessions.close() // their calls cancelled: the sessions' Close below waits for its requests
	var sessions []*mcp.ServerSession
	for ss := range g.srv.Sessions() {
		sessions = append(sessions, ss)
	}
	for _, ss := range sessions {
		_ = ss.Close()
	}
	return g.h.Close()
}

// follow syncs the downstream server with the catalog at each change.
func (g *Gateway) follow() {
	defer close(g.done)
	for {
		select {
		case <-g.stop:
			return
		case <-g.h.CatalogChanged():
			g.sync()
		}
	}
}

// Sync brings the downstream server's tools, prompts and resources up to
// date with the host's catalog now (the gateway does so by itself at each
// change of the catalog).
func (g *Gateway) Sync() { g.sync() }

func (g *Gateway) sync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	noPrefix := func(server string) bool { return g.cfg.Servers[server].Conduit.NoPrefix }
	// Tools.
	want := map[string][]exposed{}
	defs := map[string]*mcp.Tool{}
	for _, t := range g.h.Tools() {
		name := t.Name
		if noPrefix(t.Server) {
			name = t.ServerTool
		}
		var mt mcp.Tool
		if err := remarshal(t.Tool, &mt); err != nil || !objectSchema(mt.InputSchema) {
			g.logger.Warn("gateway: tool not served: its definition is not a tool with an object input schema", "server", t.Server, "tool", t.ServerTool)
			continue
		}
		mt.Name = name
		def, _ := json.Marshal(mt)
		want[name] = append(want[name], exposed{server: t.Server, name: t.ServerTool, def: string(def)})
		defs[name] = &mt
	}
	g.apply(g.tools, want, "tool", func(names ...string) { g.srv.RemoveTools(names...) }, func(name string, e exposed) error {
		return safely(func() { g.srv.AddTool(defs[name], g.toolHandler(e.server, e.name)) })
	})
	// Prompts and resources are asked of the servers now (not cached by
	// the host); the host's lock is not held meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), conduit.DefaultHandlerTimeout)
	defer cancel()
	// The listings are requests in flight on each server: on a server whose
	// calls run alone they wait for their turn, as a plain call does, so
	// that they never make a call's input unattributable.
	release, err := g.listTurn(ctx)
	if err != nil {
		g.logger.Warn("gateway: prompts and resources not listed again: a server's calls held it too long", "err", err)
		return
	}
	defer release()
	prompts, err := g.h.Prompts(ctx)
	if err != nil {
		g.logger.Warn("gateway: prompts/list failed on a server; its prompts are left out", "err", err)
	}
	wantP := map[string][]exposed{}
	pdefs := map[string]*mcp.Prompt{}
	for _, p := range prompts {
		name := p.Name
		if noPrefix(p.Server) {
			name = p.ServerPrompt
		}
		var mp mcp.Prompt
		if err := remarshal(p.Prompt, &mp); err != nil {
			continue
		}
		mp.Name = name
		def, _ := json.Marshal(mp)
		wantP[name] = append(wantP[name], exposed{server: p.Server, name: p.ServerPrompt, def: string(def)})
		pdefs[name] = &mp
	}
	g.apply(g.prompts, wantP, "prompt", func(names ...string) { g.srv.RemovePrompts(names...) }, func(name string, e exposed) error {
		return safely(func() { g.srv.AddPrompt(pdefs[name], g.promptHandler(e.server, e.name)) })
	})
	resources, err := g.h.Resources(ctx)
	if err != nil {
		g.logger.Warn("gateway: resources/list failed on a server; its resources are left out", "err", err)
	}
	wantR := map[string][]exposed{}
	rdefs := map[string]*mcp.Resource{}
	for _, r := range resources {
		var mr mcp.Resource
		if err := remarshal(r.Resource, &mr); err != nil || mr.URI == "" {
			continue
		}
		def, _ := json.Marshal(mr)
		wantR[mr.URI] = append(wantR[mr.URI], exposed{server: r.Server, name: mr.URI, def: string(def)})
		rdefs[mr.URI] = &mr
	}
	g.apply(g.resources, wantR, "resource", func(uris ...string) { g.srv.RemoveResources(uris...) }, func(uri string, e exposed) error {
		return safely(func() { g.srv.AddResource(rdefs[uri], g.resourceHandler(e.server)) })
	})
	g.syncTemplates(ctx)
}

// apply makes have (the exposed items of one kind) what want says: items
// gone are removed, new or changed ones added. A name that two servers
// expose is served by neither, and logged once: the gateway never picks.
// Called with mu held.
func (g *Gateway) apply(have map[string]exposed, want map[string][]exposed, kind string, remove func(...string), add func(string, exposed) error) {
	var gone []string
	for name, e := range have {
		if w := want[name]; len(w) != 1 || w[0] != e {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		remove(gone...)
		for _, name := range gone {
			delete(have, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		key := kind + " " + name
		if len(w) > 1 {
			if !g.refused[key] {
				g.refused[key] = true
				servers := make([]string, len(w))
				for i, e := range w {
					servers[i] = e.server
				}
				g.logger.Error(fmt.Sprintf("gateway: %s %q is exposed by several servers; it is served by none", kind, name), "servers", servers)
			}
			continue
		}
		delete(g.refused, key)
		if _, ok := have[name]; ok {
			continue
		}
		if err := add(name, w[0]); err != nil {
			g.logger.Warn(fmt.Sprintf("gateway: %s not served", kind), "server", w[0].server, "name", name, "err", err)
			continue
		}
		have[name] = w[0]
	}
}

// safely runs fn, turning a panic (the go-sdk server panics on a
// definition it cannot serve) into an error: nothing a server lists may
// bring the gateway down.
func safely(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

// objectSchema reports whether s is a JSON object schema of type "object".
func objectSchema(s any) bool {
	m, ok := s.(map[string]any)
	return ok && m["type"] == "object"
}

// remarshal converts in to out through JSON.
func remarshal(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// downstreamError is the error a downstream request gets for err, an
// upstream failure: the server's own JSON-RPC error as it is, anything
// else -32603 with what happened.
func downstreamError(err error) error {
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.RPC != nil {
		return &jsonrpc.Error{Code: int64(ce.RPC.Code), Message: ce.RPC.Message, Data: ce.RPC.Data}
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}
