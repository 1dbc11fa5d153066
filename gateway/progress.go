package gateway

import (
	"context"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
)

// progressRoutes relay an upstream call's progress to the downstream
// session that asked for it: the upstream call carries a token of the
// gateway's (unique across sessions), which maps back to the session and
// its own token.
type progressRoutes struct {
	mu     sync.Mutex
	n      uint64
	routes map[string]progressRoute
}

type progressRoute struct {
	ctx     context.Context // the downstream request's: its stream carries the progress
	session *mcp.ServerSession
	token   any
}

// open routes the progress of one call to session under token, on the
// stream of the downstream request whose ctx it is (a modern client's
// stateless request has no other); close forgets it. Its CallOption asks
// the upstream for progress under the gateway's token, key.
func (p *progressRoutes) open(ctx context.Context, session *mcp.ServerSession, token any) (opt conduit.CallOption, key string, close func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.routes == nil {
		p.routes = map[string]progressRoute{}
	}
	p.n++
	key = "gateway-" + strconv.FormatUint(p.n, 10)
	p.routes[key] = progressRoute{ctx: ctx, session: session, token: token}
	return conduit.WithProgressToken(key), key, func() {
		p.mu.Lock()
		delete(p.routes, key)
		p.mu.Unlock()
	}
}

// retarget sends the progress of key's call to the request of ctx on
// session, under token (a modern client's later round: the request open
// now); a token nil drops it until the next retarget. A route closed
// stays closed.
func (p *progressRoutes) retarget(key string, ctx context.Context, session *mcp.ServerSession, token any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.routes[key]; ok {
		p.routes[key] = progressRoute{ctx: ctx, session: session, token: token}
	}
}

// relay is the upstream clients' Progress hook.
func (p *progressRoutes) relay(ctx context.Context, _ conduit.NotificationContext, pr *conduit.Progress) {
	key, _ := pr.Token.(string)
	p.mu.Lock()
	r, ok := p.routes[key]
	p.mu.Unlock()
	if !ok || r.token == nil || r.ctx.Err() != nil {
		return // a call that has ended, or not the gateway's; or between a modern client's rounds
	}
	params := &mcp.ProgressNotificationParams{ProgressToken: r.token, Progress: pr.Progress, Message: pr.Message}
	if pr.Total != nil {
		params.Total = *pr.Total
	}
	_ = r.session.NotifyProgress(r.ctx, params)
}
