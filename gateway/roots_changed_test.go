//lint:file-ignore SA1019 roots are what is forwarded here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// rootsAsker is a legacy upstream (go-sdk, Streamable HTTP) that asks for
// the roots on each notifications/roots/list_changed of each of its
// sessions and tells seen what it got; its tool "noop" does nothing.
func rootsAsker(t *testing.T, seen chan<- string) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "roots", Version: "1"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			go func() { // a handler must not wait on its own session's requests
				res, err := req.Session.ListRoots(context.WithoutCancel(ctx), &mcp.ListRootsParams{})
				if err != nil {
					seen <- "error: " + err.Error()
					return
				}
				var uris []string
				for _, r := range res.Roots {
					uris = append(uris, r.URI)
				}
				seen <- strings.Join(uris, " ")
			}()
		},
	})
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	return serveSDK(t, s, nil)
}

// A legacy session's notifications/roots/list_changed reaches a legacy
// upstream, and the roots/list the upstream sends in answer gets that
// session's roots through the roots filter (a root that is not a local
// file:// URI withheld): the roots of the session that changed them, not
// another's.
func TestGatewayForwardsRootsListChanged(t *testing.T) {
	seen := make(chan string, 4)
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"r": {URL: rootsAsker(t, seen), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	other := mcp.NewClient(&mcp.Implementation{Name: "other", Version: "1"}, nil)
	other.AddRoots(&mcp.Root{URI: "file:///srv/other", Name: "other"})
	legacyClient(t, ctx, url, other)
	a := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil)
	a.AddRoots(&mcp.Root{URI: "file:///srv/a", Name: "a"})
	legacyClient(t, ctx, url, a)

	a.AddRoots(&mcp.Root{URI: "file:///srv/a2", Name: "a2"}, &mcp.Root{URI: "https://example.com/x", Name: "remote"})
	assert.Equal(t, "file:///srv/a file:///srv/a2", waitFor(t, seen, "the upstream's roots/list answered"))
	select {
	case got := <-seen:
		t.Fatalf("a second roots/list: %s", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// A roots change reaches, beside a legacy server's main connection, its
// connection of a downstream client's capability set when that declared
// roots (host variants, decision 78), and each one's answering roots/list
// gets the session's roots.
func TestGatewayForwardsRootsListChangedToVariants(t *testing.T) {
	seen := make(chan string, 4)
	g, url := serve(t, host.Config{Servers: map[string]host.Server{
		"r": {URL: rootsAsker(t, seen), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil) // declares roots alone
	a.AddRoots(&mcp.Root{URI: "file:///srv/a", Name: "a"})
	cs := legacyClient(t, ctx, url, a)
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "r__noop", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.Len(t, g.Host().Status()[0].Variants, 1)
	assert.Equal(t, []string{"roots"}, g.Host().Status()[0].Variants[0].Capabilities)

	a.AddRoots(&mcp.Root{URI: "file:///srv/a2", Name: "a2"})
	assert.Equal(t, "file:///srv/a file:///srv/a2", waitFor(t, seen, "a roots/list answered"))
	assert.Equal(t, "file:///srv/a file:///srv/a2", waitFor(t, seen, "the other roots/list answered"))
	select {
	case got := <-seen:
		t.Fatalf("a third roots/list: %s", got)
	case <-time.After(100 * time.Millisecond):
	}
}

// A session that floods roots/list_changed is held to its input budget:
// past it a notification is not forwarded, and is counted.
func TestGatewayRootsListChangedBudgeted(t *testing.T) {
	var told atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "roots", Version: "1"}, &mcp.ServerOptions{
		RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) { told.Add(1) },
	})
	s.AddTool(&mcp.Tool{Name: "noop", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	srvURL := serveSDK(t, s, nil)
	g, url := serveWith(t, host.Config{Servers: map[string]host.Server{
		"r": {URL: srvURL, Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}}, Options{Sessions: SessionLimits{InputRateLimit: rate.Limit(1e-6), InputBurst: 2}})

	post := func(sid, body string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res
	}
	res := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"flood","version":"1"}}}`)
	sid := res.Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, sid)
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for range 10 {
		assert.Equal(t, http.StatusAccepted, post(sid, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`).StatusCode)
	}
	assert.Eventually(t, func() bool { return g.SessionStats().InputsRefused == 8 }, 10*time.Second, 10*time.Millisecond, "8 of 10 over the budget")
	assert.Eventually(t, func() bool { return told.Load() == 2 }, 10*time.Second, 10*time.Millisecond, "2 of 10 forwarded")
}
