//lint:file-ignore SA1019 the relay reads the per-request log level: logging is deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
)

// modern reports whether session's client takes input as input_required
// results.
func modern(session *mcp.ServerSession) bool {
	p := session.InitializeParams()
	return p != nil && p.ProtocolVersion >= modernVersion
}

// forwarded is one downstream request whose upstream request may ask for
// input (tools/call, prompts/get): what the relay needs of it.
type forwarded struct {
	session *mcp.ServerSession
	caps    *mcp.ClientCapabilities
	server  string
	turn    string // its key on a gated server: the tool's name, "prompt NAME"
	what    string // what its requestState names: tool "NAME", prompt "NAME"
	// A modern client's retry: its requestState and answers.
	state     string
	responses mcp.InputResponseMap
	progress  any    // the downstream progress token, or nil
	logLevel  string // a modern client's _meta logLevel, or ""
}

// upstreamRequest does the upstream request with opts (the relay's among
// them) and returns its result.
type upstreamRequest func(ctx context.Context, opts ...conduit.CallOption) (any, error)

// outcome is what the downstream request gets: the upstream's result (or
// error), or, for a modern client, an input round.
type outcome struct {
	res    any
	err    error
	inputs mcp.InputRequestMap // a round: with state
	state  string
}

// forward runs f upstream with its input relayed to f's client, and no
// other: a legacy session's as server→client requests on it while the
// request runs, a modern client's as input_required rounds, each resumed
// by the client's retry with the round's requestState. traced carries the
// downstream trace context.
func (g *Gateway) forward(ctx, traced context.Context, f forwarded, do upstreamRequest, opts ...conduit.CallOption) outcome {
	if !modern(f.session) {
		// The session's actor admits the request (its calls in flight)
		// and ends it with the session.
		s := g.sessions.of(f.session)
		if s == nil {
			return outcome{err: sessionError(errGatewayClosed)}
		}
		cctx, end, err := s.call(traced)
		if err != nil {
			return outcome{err: err}
		}
		defer end()
		d := &downstream{caps: f.caps, session: f.session, request: ctx, sess: s}
		if f.progress != nil {
			opt, _, done := g.prog.open(ctx, f.session, f.progress)
			defer done()
			opts = append(opts, opt)
		}
		res, err := g.run(cctx, f.server, f.turn, d, do, opts...)
		return outcome{res: res, err: sessionCause(cctx, err)}
	}
	if f.logLevel != "" {
		// The upstream's entries reach this request while it is open
		// (each round's), at its level and above.
		defer g.logs.open(ctx, f.server, f.session)()
	}
	if f.state != "" {
		pc, err := g.relay.resume(f.state, f.what, f.responses)
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return outcome{err: je} // -32021 (missingcap.go)
		}
		if err != nil {
			return outcome{err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}}
		}
		if pc.progress != "" {
			// This round's request carries the progress now.
			g.prog.retarget(pc.progress, ctx, f.session, f.progress)
		}
		return g.await(ctx, pc)
	}
	pc := g.relay.start(f.what)
	pc.gate = g.serial[f.server]
	// A modern client has no session: its call is one (decision 63).
	s := g.sessions.open("call-"+pc.id, nil)
	if s == nil {
		pc.cancel()
		return outcome{err: sessionError(errGatewayClosed)}
	}
	context.AfterFunc(pc.ctx, func() { s.close(errCallEnded) })
	cctx, end, err := s.call(pc.ctx)
	if err != nil {
		pc.cancel()
		return outcome{err: err}
	}
	d := &downstream{caps: f.caps, call: pc, sess: s}
	if f.progress != nil {
		// Each round's request carries the progress while it is open
		// (retarget); between rounds it is dropped. The route lives as
		// long as the upstream call.
		opt, key, done := g.prog.open(ctx, f.session, f.progress)
		context.AfterFunc(pc.ctx, done)
		pc.progress = key
		opts = append(opts, opt)
	}
	if f.logLevel != "" {
		// A modern upstream is asked at this request's level, or at the
		// legacy sessions' when that is more verbose: each listener drops
		// what is below its own.
		g.more.mu.Lock()
		level := g.more.up
		g.more.mu.Unlock()
		if level == "" || levelRank(f.logLevel) < levelRank(level) {
			level = f.logLevel
		}
		opts = append(opts, conduit.WithLogLevel(level))
	}
	go func() {
		res, err := g.run(continueTrace(cctx, traced), f.server, f.turn, d, do, opts...)
		err = sessionCause(cctx, err)
		end()
		pc.finish(res, err)
	}()
	return g.await(ctx, pc)
}

// run does one upstream request for a downstream client d, in its turn on
// a gated server: its input requests reach d, and no other client, through
// the request's assigns; the upstream sees what d declared.
func (g *Gateway) run(ctx context.Context, server, turn string, d *downstream, do upstreamRequest, opts ...conduit.CallOption) (any, error) {
	release, err := g.serial[server].acquire(ctx, turn)
	if err != nil {
		return nil, err
	}
	defer func() { release(d.asked.Load()) }()
	assigns := map[string]any{relayKey: d, conduit.AssignSession: d.sess.id}
	if d.call != nil {
		assigns[AssignParks] = true
	}
	return do(ctx, append(opts, conduit.WithAssigns(assigns), declaredAs(d.caps))...)
}

// await waits for pc's next input round (returned with a requestState that
// resumes pc) or its end. A downstream request that ends meanwhile cancels
// the upstream request.
func (g *Gateway) await(ctx context.Context, pc *pendingCall) outcome {
	select {
	case a := <-pc.asks:
		batch := pc.collect(a)
		if err := pc.missingErr(); err != nil {
			// Its upstream asked for a capability the client lacks
			// meanwhile: the call is over (cancelled upstream).
			for _, a := range batch {
				a.fail(errCallEnded)
			}
			return outcome{err: err}
		}
		irs := mcp.InputRequestMap{}
		ttl := time.Duration(0)
		for _, a := range batch {
			ir, err := inputRequest(a)
			if err != nil {
				a.reply <- reply{err: err}
				continue
			}
			irs[pc.hold(a)] = ir
			ttl = max(ttl, a.timeout)
		}
		if len(irs) == 0 {
			return g.await(ctx, pc)
		}
		state := g.relay.park(pc, ttl)
		pc.setUnpark(pc.gate.park(pc.cancel))
		if pc.ctx.Err() != nil { // ended meanwhile: nothing to preempt
			pc.setUnpark(nil)
		}
		return outcome{inputs: irs, state: state}
	case <-pc.done:
		if err := pc.missingErr(); err != nil {
			return outcome{err: err}
		}
		return outcome{res: pc.res, err: pc.err}
	case <-ctx.Done():
		pc.cancel()
		return outcome{err: ctx.Err()}
	}
}

func (g *Gateway) toolHandler(server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f := forwarded{session: req.Session, caps: req.ClientCapabilities(), server: server, turn: tool,
			what: fmt.Sprintf("tool %q", req.Params.Name), state: req.Params.RequestState, responses: req.Params.InputResponses,
			progress: req.Params.GetProgressToken(), logLevel: metaLogLevel(req.Params.Meta)}
		if f.state != "" && modern(req.Session) {
			if elsewhere, res, err := g.resumeElsewhere(ctx, req.Params); elsewhere {
				return res, err
			}
		}
		var opts []conduit.CallOption
		if rs := req.Params.InputResponses; len(rs) > 0 && f.state == "" && modern(req.Session) && g.cfg.Servers[server].Conduit.Era == conduit.EraModern {
			// Answers sent without a state of the gateway's (a client
			// that knows the tool's keys) go to a modern upstream as
			// they are, as they would going direct.
			responses := make(map[string]any, len(rs))
			for k, v := range rs {
				responses[k] = v
			}
			opts = append(opts, conduit.WithInputResponses(nil, responses))
		}
		var args any
		if len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		o := g.forward(ctx, downstreamTrace(ctx, req.Extra, req.Params.Meta), f, func(ctx context.Context, opts ...conduit.CallOption) (any, error) {
			return g.h.CallTool(ctx, server, tool, args, opts...)
		}, opts...)
		return toolOutcome(o)
	}
}

// toolOutcome is a tools/call's answer to its client: a round, or the
// upstream's result or error.
func toolOutcome(o outcome) (*mcp.CallToolResult, error) {
	if o.inputs != nil {
		return &mcp.CallToolResult{InputRequests: o.inputs, RequestState: o.state}, nil
	}
	if o.err != nil {
		return nil, downstreamError(o.err)
	}
	res, _ := o.res.(*conduit.CallToolResult)
	return toolResult(res, nil)
}

func (g *Gateway) promptHandler(server, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		f := forwarded{session: req.Session, caps: req.ClientCapabilities(), server: server, turn: "prompt " + name,
			what: fmt.Sprintf("prompt %q", req.Params.Name), state: req.Params.RequestState, responses: req.Params.InputResponses,
			progress: req.Params.GetProgressToken(), logLevel: metaLogLevel(req.Params.Meta)}
		o := g.forward(ctx, downstreamTrace(ctx, req.Extra, req.Params.Meta), f, func(ctx context.Context, opts ...conduit.CallOption) (any, error) {
			return g.h.GetPrompt(ctx, server, name, req.Params.Arguments, opts...)
		})
		if o.inputs != nil {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{}, InputRequests: o.inputs, RequestState: o.state}, nil
		}
		if o.err != nil {
			return nil, downstreamError(o.err)
		}
		var out mcp.GetPromptResult
		if err := remarshal(o.res, &out); err != nil {
			return nil, downstreamError(err)
		}
		return &out, nil
	}
}

func (g *Gateway) resourceHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		f := forwarded{session: req.Session, caps: req.ClientCapabilities(), server: server, turn: "resource " + uri,
			what: fmt.Sprintf("resource %q", uri), state: req.Params.RequestState, responses: req.Params.InputResponses,
			progress: req.Params.GetProgressToken(), logLevel: metaLogLevel(req.Params.Meta)}
		o := g.forward(ctx, downstreamTrace(ctx, req.Extra, req.Params.Meta), f, func(ctx context.Context, opts ...conduit.CallOption) (any, error) {
			return g.h.ReadResource(ctx, server, uri, opts...)
		})
		if o.inputs != nil {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}, InputRequests: o.inputs, RequestState: o.state}, nil
		}
		if o.err != nil {
			return nil, downstreamError(o.err)
		}
		var out mcp.ReadResourceResult
		if err := remarshal(o.res, &out); err != nil {
			return nil, downstreamError(err)
		}
		return &out, nil
	}
}

func toolResult(res *conduit.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		return nil, downstreamError(err)
	}
	if out, ok := plainResult(res); ok {
		return out, nil
	}
	var out mcp.CallToolResult
	if err := remarshal(res, &out); err != nil {
		return nil, downstreamError(err)
	}
	return &out, nil
}

// metaLogLevel is the log level a modern request asks for in its _meta, ""
// when none (a legacy session's is its logging/setLevel's).
func metaLogLevel(meta map[string]any) string {
	l, _ := meta[mcp.MetaKeyLogLevel].(string)
	return l
}
