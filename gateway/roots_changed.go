//lint:file-ignore SA1019 roots are what is forwarded here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
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
// whose roots the servers' answering roots/list gets (invitedRoots). A
// server that asks during a call gets that call's session's roots, as
// always.
func (g *Gateway) rootsChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	if req.Session == nil || modern(req.Session) {
		return
	}
	n, ok := g.h.(rootsNotifier)
	if !ok {
		return // a cluster's servers: not forwarded (docs/gateway.md)
	}
	g.relay.mu.Lock()
	g.relay.rootsFrom = req.Session
	g.relay.mu.Unlock()
	if err := n.RootsChanged(context.WithoutCancel(ctx), ""); err != nil {
		g.logger.Warn("gateway: a session's roots/list_changed did not reach every server", "err", err)
	}
}

// invitedRoots answers a server's roots/list that follows a forwarded
// roots/list_changed (RequestContext.Invited) with the roots of the
// session that sent it, when it declared roots and is still open; the
// roots filter runs on the answer as on any other.
func (r *relays) invitedRoots(ctx context.Context) (*conduit.ListRootsResult, error) {
	r.mu.Lock()
	ss := r.rootsFrom
	r.mu.Unlock()
	if ss == nil {
		return nil, &messages.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (it belongs to no call of a client of the gateway)", messages.MethodListRoots)}
	}
	res, err := ss.ListRoots(ctx, &mcp.ListRootsParams{})
	if err != nil {
		return nil, upstreamError(err)
	}
	var out conduit.ListRootsResult
	return &out, remarshal(res, &out)
}
