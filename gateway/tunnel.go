package gateway

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionMembers make a legacy downstream session (Mcp-Session-Id) usable
// through any member of several serving the same endpoint: the session's
// id names the member holding it (its go-sdk session, its calls), and a
// request another member receives is handed to that one, which serves it
// exactly as if it had come there (docs/cluster.md, docs/decisions.md
// #70). The Members of Options may implement it; its methods are safe for
// concurrent use.
type SessionMembers interface {
	// NewSessionID is the id of a new legacy session held by this member:
	// it names this member.
	NewSessionID() string
	// SessionHolder is the member a session id names; "" when it names
	// none (an id of a gateway on its own) or this member.
	SessionHolder(id string) string
	// Tunnel serves r, a legacy request of a session member holds, by
	// handing the HTTP exchange to member and streaming its answer back
	// into w; it returns when the exchange ends (or r's client went, which
	// cancels it there).
	Tunnel(w http.ResponseWriter, r *http.Request, member string)
	// ServeSessions sets what serves here the legacy requests the other
	// members hand to this one: the gateway's own session handler.
	ServeSessions(h http.Handler)
}

// sessionMembers is g's Members as SessionMembers, when they are.
func (g *Gateway) sessionMembers() SessionMembers {
	sm, _ := g.members.(SessionMembers)
	return sm
}

// sessionIDs names this member in the ids of the legacy sessions the
// downstream server creates, when the gateway is a member.
func (g *Gateway) sessionIDs(so *mcp.ServerOptions) {
	if sm := g.sessionMembers(); sm != nil {
		so.GetSessionID = sm.NewSessionID
	}
}

// tunnelled serves r through the member holding its session when that is
// another member, and reports whether it did.
func (g *Gateway) tunnelled(w http.ResponseWriter, r *http.Request) bool {
	sm := g.sessionMembers()
	if sm == nil {
		return false
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return false
	}
	member := sm.SessionHolder(id)
	if member == "" {
		return false
	}
	sm.Tunnel(w, r, member)
	return true
}
