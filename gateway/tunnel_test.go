package gateway

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// sessionPeers are Members that also hand legacy sessions over: ids
// named SELF.RANDOM, and a request for another's session served by that
// gateway's session handler in this process (the cluster carries it
// between processes).
type sessionPeers struct {
	peers
	all *sync.Map // member → http.Handler, every gateway's session handler

	mu       sync.Mutex
	tunnels  map[string]int // member → requests handed to it
	requests []string       // method of each
}

func (p *sessionPeers) NewSessionID() string { return p.self + "." + rand.Text() }
func (p *sessionPeers) SessionHolder(id string) string {
	if member, _, ok := strings.Cut(id, "."); ok && member != p.self {
		return member
	}
	return ""
}
func (p *sessionPeers) ServeSessions(h http.Handler) { p.all.Store(p.self, h) }
func (p *sessionPeers) Tunnel(w http.ResponseWriter, r *http.Request, member string) {
	p.mu.Lock()
	p.tunnels[member]++
	p.requests = append(p.requests, r.Method)
	p.mu.Unlock()
	h, ok := p.all.Load(member)
	if !ok {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	h.(http.Handler).ServeHTTP(w, r)
}

// firstTo sends a client's initialize to one URL and everything after it
// to another.
type firstTo struct {
	first, rest *url.URL
	sent        int
}

func (f *firstTo) RoundTrip(r *http.Request) (*http.Response, error) {
	to := f.rest
	if f.sent == 0 {
		to = f.first
	}
	f.sent++
	r2 := r.Clone(r.Context())
	r2.URL.Host, r2.Host = to.Host, to.Host
	return http.DefaultTransport.RoundTrip(r2)
}

// A member's legacy session ids name it; a request of a session another
// member holds is handed to that member (SessionMembers.Tunnel) and served
// there by its session handler, as if sent there: a session initialized
// through A serves its calls and its DELETE through B.
func TestGatewaySessionsHandedToTheirMember(t *testing.T) {
	cfg := host.Config{Servers: map[string]host.Server{"e": {Command: everything(t), Conduit: host.Settings{Era: conduit.EraLegacy}}}}
	all := &sync.Map{}
	a := &sessionPeers{peers: peers{self: "a"}, all: all, tunnels: map[string]int{}}
	b := &sessionPeers{peers: peers{self: "b"}, all: all, tunnels: map[string]int{}}
	_, urlA := serveWith(t, cfg, Options{Members: a})
	_, urlB := serveWith(t, cfg, Options{Members: b})
	ua, _ := url.Parse(urlA)
	ub, _ := url.Parse(urlB)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urlA + "/mcp", HTTPClient: &http.Client{Transport: &firstTo{first: ua, rest: ub}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(cs.ID(), "a."), "the id names its member: %s", cs.ID())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "e__test_simple_text", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, "This is a simple text response for testing.", res.Content[0].(*mcp.TextContent).Text)
	require.NoError(t, cs.Close())
	assert.Equal(t, map[string]int{"a": 3}, b.tunnels, "initialized, tools/call, DELETE")
	assert.Equal(t, []string{"POST", "POST", "DELETE"}, b.requests)
	assert.Empty(t, a.tunnels)

	// The session is gone where it lived.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, urlB+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
