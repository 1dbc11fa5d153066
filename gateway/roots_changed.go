//lint:file-ignore SA1019 roots are what is forwarded here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/messages"
)

// rootsNotifier is an Upstream that can tell its servers the roots
// changed (a *host.Host).
type rootsNotifier interface {
	RootsChanged(ctx context.Context, server string) error
}

// rootsChanged forwards a legacy session's notifications/roots/list_changed
// to every upstream server (Client.RootsChanged: legacy servers get the
// notification, modern ones need none), and keeps the session as the one
// whose roots the servers' answering roots/list gets (invitedBy). A
// server that asks during a call gets that call's session's roots, as
// always.
func (g *Gateway) rootsChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	ss := req.Session
	if ss == nil || modern(ss) {
		return
	}
	if p := ss.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil {
		return // it declared no roots: it has none to tell
	}
	n, ok := g.h.(rootsNotifier)
	if !ok {
		return // a cluster's servers: not forwarded (docs/gateway.md)
	}
	s := g.sessions.of(ss)
	if s == nil {
		return
	}
	// Each forward is one of the session's inputs: a session that floods
	// list_changed is held to its input budget, as its inputs are.
	fctx, done := context.WithCancel(context.WithoutCancel(ctx))
	defer done()
	if err := s.input(fctx, "", messages.MethodRootsListChanged); err != nil {
		g.logger.Warn("gateway: a session's roots/list_changed was not forwarded", "session", s.id, "err", err, "refused", g.sessions.stats().InputsRefused)
		return
	}
	// Each connection told may answer: a server's main one, and each of
	// its variants that declared roots (decision 78).
	told := map[string]int{}
	for _, st := range g.h.Status() {
		for _, v := range st.Variants {
			if v.State == host.StateReady && slices.Contains(v.Capabilities, "roots") {
				told[st.Server]++
			}
		}
	}
	r := g.relay
	r.mu.Lock()
	r.rootsFrom = ss
	if r.invited == nil {
		r.invited = map[string]int{}
	}
	for name := range g.cfg.Servers {
		r.invited[name] = 1 + told[name]
	}
	r.mu.Unlock()
	s.rootsNoted.Do(func() {
		context.AfterFunc(s.ctx, func() {
			r.mu.Lock()
			if r.rootsFrom == ss {
				r.rootsFrom = nil
			}
			r.mu.Unlock()
		})
	})
	if err := n.RootsChanged(fctx, ""); err != nil {
		g.logger.Warn("gateway: a session's roots/list_changed did not reach every server", "err", err)
	}
}

// invitedBy is the session whose roots server's roots/list gets when it
// comes outside any call as the first since one of the server's
// connections was told of a legacy session's roots/list_changed (the
// server answering it): the last such session. Nil otherwise (the request is refused as belonging to no
// call). Conduit's client marks the same roots/list as invited for its
// input budget (guards.Input.Invited).
func (r *relays) invitedBy(server string) *mcp.ServerSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.invited[server] == 0 {
		return nil
	}
	if r.invited[server]--; r.invited[server] == 0 {
		delete(r.invited, server)
	}
	return r.rootsFrom
}

// sessionRoots asks a legacy session for its roots; the roots filter runs
// on the answer as on any other.
func sessionRoots(ctx context.Context, ss *mcp.ServerSession) (*conduit.ListRootsResult, error) {
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		return nil, upstreamError(err)
	}
	var out conduit.ListRootsResult
	return &out, remarshal(res, &out)
}
