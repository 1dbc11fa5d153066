package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
)

// Kind is the grain kind of an upstream server; a grain's identity is the
// server's name in the configuration every member shares.
const Kind = "mcp-server"

// defaultCallTimeout bounds a request whose caller set no deadline.
const defaultCallTimeout = 5 * time.Minute

// serverGrain is the activation of one server on the member that holds it:
// a one-server host.Host (its supervisor, restart policy and guards), made
// at activation and closed when the grain stops (it moved, or the member
// stops). Requests run beside the actor, each in its own goroutine, and
// answer the caller's future directly: a call that waits on its server
// never holds up the grain (docs/cluster.md).
type serverGrain struct {
	m    *Member
	id   string
	h    *host.Host
	busy atomic.Int64 // its requests in flight
	// gate runs a call of a legacy stdio server that may ask for input
	// alone, whichever member took it (docs/decisions.md #37); nil for
	// other servers.
	gate *gateway.Gate

	mu    sync.Mutex
	calls map[string]*grainCall // its calls in flight that name an origin, by the origin's call id
}

// grainCall is a call in flight on a grain that names its origin: what
// its input callbacks and its progress need to reach it, and what ends it.
type grainCall struct {
	origin origin
	gate   *gateway.Gate
	parks  bool // its client is modern: its rounds park (request.Parks)
	asked  atomic.Bool
	cancel context.CancelCauseFunc
}

func (g *serverGrain) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		g.id = msg.Identity.Identity
		g.h = g.m.activate(g.id)
		if s, ok := g.m.cfg.Servers[g.id]; ok && gateway.Gated(s) {
			g.gate = gateway.NewGate(func(n int) {
				g.m.logger.Warn("cluster: a modern client's parked round held a gated server while another call waited; cancelled upstream",
					"server", g.id, "cancelled", n, "total", g.gate.Preempted())
			}, func(turn string, waiting int64) {
				g.m.logger.Info("cluster: a call waits for its server's gate (a call that may ask for input runs alone)",
					"server", g.id, "turn", turn, "waiting", waiting)
			})
		}
		g.m.register(g)
	case *pcluster.GrainRequest:
		if msg.MessageTypeName == typeCancel {
			g.cancel(msg.MessageData)
			return
		}
		sender := ctx.Sender()
		if sender == nil {
			return
		}
		h, root := g.h, ctx.ActorSystem().Root
		g.busy.Add(1)
		g.m.busy.Add(1)
		go func() {
			var resp *pcluster.GrainResponse
			defer g.m.busy.Add(-1)
			defer g.busy.Add(-1)
			defer func() {
				if r := recover(); r != nil {
					g.m.logger.Error("cluster: a grain request panicked", "server", g.id, "panic", r, "stack", string(debug.Stack()))
					resp = encodeError(fmt.Errorf("cluster: the request panicked on member %s: %v", g.m.Address(), r))
				}
				root.Send(sender, resp)
			}()
			resp = g.serve(h, msg)
		}()
	case *actor.Stopped:
		g.m.unregister(g)
		g.m.deactivate(g.id, g.h, &g.busy)
	}
}

// track keeps gc as a call in flight until the returned function.
func (g *serverGrain) track(gc *grainCall) func() {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[string]*grainCall{}
	}
	g.calls[gc.origin.Call] = gc
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		if g.calls[gc.origin.Call] == gc {
			delete(g.calls, gc.origin.Call)
		}
		g.mu.Unlock()
	}
}

// call is the call in flight of the origin's call id, or nil.
func (g *serverGrain) call(id string) *grainCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[id]
}

// cancel ends the call a Cancel names, if it still runs.
func (g *serverGrain) cancel(data []byte) {
	var o origin
	if json.Unmarshal(data, &o) != nil {
		return
	}
	if gc := g.call(o.Call); gc != nil && gc.origin == o {
		gc.cancel(context.Canceled)
	}
}

// orphan ends the calls in flight (or waiting at the gate) that the member
// at addr made: it was lost, and nobody waits for their answers. It
// returns how many.
func (g *serverGrain) orphan(addr string, cause error) int {
	g.mu.Lock()
	var lost []*grainCall
	for _, gc := range g.calls {
		if gc.origin.Member == addr {
			lost = append(lost, gc)
		}
	}
	g.mu.Unlock()
	for _, gc := range lost {
		gc.cancel(cause)
	}
	return len(lost)
}

// turn takes the request's turn at the server's gate: a tool call, a
// prompt or a resource read is a call that may ask for input (alone until
// its key is known plain); the other requests that reach the server take a
// plain turn; the keep-alive's Tools none.
func (g *serverGrain) turn(ctx context.Context, typeName string, req request, gc *grainCall) (release func(), err error) {
	if g.gate == nil || typeName == typeTools {
		return func() {}, nil
	}
	var key string
	switch typeName {
	case typeCallTool:
		key = req.Tool
	case typeGetPrompt:
		key = "prompt " + req.Name
	case typeReadResource:
		key = "resource " + req.URI
	default:
		return g.gate.Plain(ctx)
	}
	done, err := g.gate.Acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	// A call that names no origin cannot say whether it asked: it never
	// becomes plain.
	return func() { done(gc == nil || gc.asked.Load()) }, nil
}

// serve runs one request on the server's host and encodes its answer.
func (g *serverGrain) serve(h *host.Host, msg *pcluster.GrainRequest) *pcluster.GrainResponse {
	if h == nil {
		return encodeError(fmt.Errorf("cluster: server %q is not configured on member %s", g.id, g.m.Address()))
	}
	var req request
	if err := json.Unmarshal(msg.MessageData, &req); err != nil {
		return encodeError(fmt.Errorf("cluster: undecodable %s request: %w", msg.MessageTypeName, err))
	}
	if !g.m.drainLog.admit(req.ID) {
		return &pcluster.GrainResponse{MessageTypeName: typeNotRun, MessageData: []byte("null")}
	}
	timeout := defaultCallTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var opts []conduit.CallOption
	var gc *grainCall
	if req.Origin != nil {
		// Its input requests and progress go to its origin; a Cancel, or
		// the loss of its origin's member, ends it (at the gate too).
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		gc = &grainCall{origin: *req.Origin, gate: g.gate, parks: req.Parks, cancel: cancel}
		defer g.track(gc)()
		opts = append(opts, conduit.WithAssigns(map[string]any{originKey: req.Origin, callKey: gc}))
		if req.Progress {
			opts = append(opts, conduit.WithProgressToken(progressPrefix+req.Origin.Call))
		}
	}
	opts = append(opts, req.declared()...)
	release, err := g.turn(ctx, msg.MessageTypeName, req, gc)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return encodeError(err)
	}
	defer release()
	var res any
	switch msg.MessageTypeName {
	case typeTools:
		res = g.tools(h)
	case typeCallTool:
		var args any
		if len(req.Arguments) > 0 {
			args = req.Arguments
		}
		res, err = h.CallTool(ctx, g.id, req.Tool, args, opts...)
	case typeGetPrompt:
		res, err = h.GetPrompt(ctx, g.id, req.Name, req.PromptArguments, opts...)
	case typeReadResource:
		res, err = h.ReadResource(ctx, g.id, req.URI, opts...)
	case typePrompts:
		res, err = h.Prompts(ctx)
	case typeResources:
		res, err = h.Resources(ctx)
	case typeResourceTemplates:
		res, err = h.ResourceTemplates(ctx)
	case typeComplete:
		if req.Complete == nil {
			err = fmt.Errorf("cluster: complete request without params")
			break
		}
		res, err = h.Complete(ctx, g.id, *req.Complete)
	case typeSubscribe:
		err = h.SubscribeResource(ctx, g.id, req.URI)
	case typeUnsubscribe:
		err = h.UnsubscribeResource(ctx, g.id, req.URI)
	case typeSetLogLevel:
		err = h.SetLogLevel(host.NoWait(ctx), g.id, req.Level)
	default:
		err = fmt.Errorf("cluster: unknown request %q (this member speaks conduit.cluster.v1)", msg.MessageTypeName)
	}
	if err != nil {
		return encodeError(err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return encodeError(err)
	}
	return &pcluster.GrainResponse{MessageTypeName: typeResult, MessageData: data}
}

func (g *serverGrain) tools(h *host.Host) toolsReply {
	out := toolsReply{Member: g.m.Address()}
	for _, st := range h.Status() {
		out.Status = wireStatus{State: st.State, Since: st.Since, PID: st.PID, Restarts: st.Restarts, Attempt: st.Attempt, Tools: st.Tools, Calls: st.Calls}
		if st.Err != nil {
			out.Status.Err = st.Err.Error()
		}
	}
	for _, t := range h.Tools() {
		def, err := json.Marshal(t.Tool)
		if err != nil {
			continue
		}
		out.Tools = append(out.Tools, wireTool{Server: t.Server, ServerTool: t.ServerTool, Tool: def})
	}
	return out
}

// register keeps g as the activation of its server on this member (its
// gate, its calls), until unregister.
func (m *Member) register(g *serverGrain) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grains == nil {
		m.grains = map[string]*serverGrain{}
	}
	m.grains[g.id] = g
}

func (m *Member) unregister(g *serverGrain) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.grains[g.id] == g {
		delete(m.grains, g.id)
	}
}

// grain is the activation of server on this member, or nil.
func (m *Member) grain(server string) *serverGrain {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.grains[server]
}

// orphan ends the calls that the member at addr (name, said as in errors)
// made to the grains here, and are in flight or wait at a gate: it was
// lost, so their answers have nowhere to go, and a call holding a gate
// would hold it until its deadline. Each is counted (Orphaned) and logged.
func (m *Member) orphan(addr, name, why string) {
	m.mu.Lock()
	grains := make([]*serverGrain, 0, len(m.grains))
	for _, g := range m.grains {
		grains = append(grains, g)
	}
	m.mu.Unlock()
	cause := &conduit.Error{Kind: conduit.KindTransport, ConnectionEnded: true,
		Message: fmt.Sprintf("cluster member %s whose client made the call was lost: %s", name, why)}
	for _, g := range grains {
		if n := g.orphan(addr, cause); n > 0 {
			m.Orphaned.Add(int64(n))
			m.logger.Warn("cluster: the member that made calls of a server here was lost; its calls are cancelled",
				"server", g.id, "member", name, "why", why, "calls", n, "total", m.Orphaned.Load())
		}
	}
}

// madeCalls reports whether the member at addr has calls in flight on the
// grains here.
func (m *Member) madeCalls(addr string) bool {
	m.mu.Lock()
	grains := make([]*serverGrain, 0, len(m.grains))
	for _, g := range m.grains {
		grains = append(grains, g)
	}
	m.mu.Unlock()
	for _, g := range grains {
		g.mu.Lock()
		for _, gc := range g.calls {
			if gc.origin.Member == addr {
				g.mu.Unlock()
				return true
			}
		}
		g.mu.Unlock()
	}
	return false
}

// declared is the call option that makes the call declare here what its
// client declared at its origin; none when the call was not narrowed.
func (r request) declared() []conduit.CallOption {
	if r.Capabilities == nil {
		return nil
	}
	return []conduit.CallOption{conduit.WithCapabilities(*r.Capabilities...)}
}
