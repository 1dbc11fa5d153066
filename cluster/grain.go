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

	mu    sync.Mutex
	calls map[origin]context.CancelFunc // its CallTools in flight, by origin
}

func (g *serverGrain) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *pcluster.ClusterInit:
		g.id = msg.Identity.Identity
		g.h = g.m.activate(g.id)
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
		g.m.deactivate(g.id, g.h, &g.busy)
	}
}

// track keeps cancel as the call of o's until the returned function.
func (g *serverGrain) track(o origin, cancel context.CancelFunc) func() {
	g.mu.Lock()
	if g.calls == nil {
		g.calls = map[origin]context.CancelFunc{}
	}
	g.calls[o] = cancel
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		delete(g.calls, o)
		g.mu.Unlock()
	}
}

// cancel ends the call a Cancel names, if it still runs.
func (g *serverGrain) cancel(data []byte) {
	var o origin
	if json.Unmarshal(data, &o) != nil {
		return
	}
	g.mu.Lock()
	cancel := g.calls[o]
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
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
	timeout := defaultCallTimeout
	if req.TimeoutMS > 0 {
		timeout = time.Duration(req.TimeoutMS) * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var res any
	var err error
	switch msg.MessageTypeName {
	case typeTools:
		res = g.tools(h)
	case typeCallTool:
		var args any
		if len(req.Arguments) > 0 {
			args = req.Arguments
		}
		var opts []conduit.CallOption
		if req.Origin != nil {
			opts = append(opts, conduit.WithAssigns(map[string]any{originKey: req.Origin}))
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			defer cancel()
			defer g.track(*req.Origin, cancel)()
		}
		res, err = h.CallTool(ctx, g.id, req.Tool, args, opts...)
	case typeGetPrompt:
		res, err = h.GetPrompt(ctx, g.id, req.Name, req.PromptArguments)
	case typeReadResource:
		res, err = h.ReadResource(ctx, g.id, req.URI)
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
