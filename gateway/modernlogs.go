//lint:file-ignore SA1019 the gateway relays logging, deprecated in 2026-07-28 (SEP-2577) but not gone

package gateway

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logRoutes hold the modern clients' requests open on each upstream server
// that asked for log entries (their _meta logLevel): a modern client has no
// session to send entries on, only the stream of a request it has open.
type logRoutes struct {
	mu       sync.Mutex
	byServer map[string]map[*logRoute]struct{}
}

// logRoute is one downstream request's stream: its ctx carries its level.
type logRoute struct {
	ctx     context.Context
	session *mcp.ServerSession
}

// open routes server's entries to the request of ctx on session until
// the returned close.
func (l *logRoutes) open(ctx context.Context, server string, session *mcp.ServerSession) (close func()) {
	r := &logRoute{ctx: ctx, session: session}
	l.mu.Lock()
	if l.byServer == nil {
		l.byServer = map[string]map[*logRoute]struct{}{}
	}
	if l.byServer[server] == nil {
		l.byServer[server] = map[*logRoute]struct{}{}
	}
	l.byServer[server][r] = struct{}{}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.byServer[server], r)
		if len(l.byServer[server]) == 0 {
			delete(l.byServer, server)
		}
		l.mu.Unlock()
	}
}

// send gives p to every request open on server; each drops what is below
// its level (the go-sdk reads it from the request's ctx).
func (l *logRoutes) send(server string, p *mcp.LoggingMessageParams) {
	l.mu.Lock()
	routes := make([]*logRoute, 0, len(l.byServer[server]))
	for r := range l.byServer[server] {
		routes = append(routes, r)
	}
	l.mu.Unlock()
	for _, r := range routes {
		_ = r.session.Log(r.ctx, p)
	}
}
