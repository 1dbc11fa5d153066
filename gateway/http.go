package gateway

import (
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/internal/loopback"
)

// HTTPOptions configure the gateway's Streamable HTTP face.
type HTTPOptions struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN); others get 401.
	Token string
}

// Handler serves the gateway over Streamable HTTP, both eras on one
// endpoint: a request whose MCP-Protocol-Version is 2026-07-28 or later is
// served statelessly (server/discover, per-request _meta, input as
// input_required results); any other is served by sessions (initialize,
// Mcp-Session-Id, SSE streams, input as server→client requests).
//
// DNS-rebinding protection is on: a request that reached a loopback
// address with a Host that is not loopback is refused (the go-sdk
// handler's check), and so is one whose Origin is neither the Host it was
// sent to nor, for a loopback Host, a loopback origin (403).
func (g *Gateway) Handler(o HTTPOptions) http.Handler {
	get := func(*http.Request) *mcp.Server { return g.srv }
	// The idle timeout is the session actor's (Options.Sessions), not the
	// handler's: the go-sdk's Close waits for the session's requests.
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: g.logger})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: g.logger, Stateless: true, PropagateRequestCancellation: true})
	local := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodDelete && id != "" {
			// The session's calls are cancelled upstream first: the
			// go-sdk's DELETE waits for them to return.
			g.sessions.end(id, errSessionDeleted)
		}
		sessions.ServeHTTP(w, r)
	})
	if sm := g.sessionMembers(); sm != nil {
		sm.ServeSessions(local) // the other members' tunnels to the sessions held here
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Token != "" && !bearer(r, o.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="conduit-gateway"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Origin header %q", origin), http.StatusForbidden)
			return
		}
		if v := r.Header.Get("Mcp-Protocol-Version"); v >= modernVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		if g.tunnelled(w, r) { // a session another member holds (tunnel.go)
			return
		}
		local.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// originAllowed: the origin's host is the Host the request was sent to, or
// both are loopback.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, host) {
		return true
	}
	return loopback.Is(u.Hostname()) && loopback.Is(loopback.Host(host))
}

// CheckListen refuses to listen on addr, a host:port, anywhere but a
// loopback address unless a bearer token is required: a gateway without
// one is for this machine only.
func CheckListen(addr, token string) error {
	where, err := loopback.Beyond(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if where == "" || token != "" {
		return nil
	}
	return fmt.Errorf("refusing to listen on %s (%s) without a bearer token: set --token or CONDUIT_GATEWAY_TOKEN, or listen on 127.0.0.1", addr, where)
}
