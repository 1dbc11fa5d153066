package actors_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// changes records what the typed change hooks receive.
type changes struct {
	mu      sync.Mutex
	got     []string
	arrived chan struct{}
}

func newChanges() *changes { return &changes{arrived: make(chan struct{}, 100)} }

func (c *changes) add(s string) {
	c.mu.Lock()
	c.got = append(c.got, s)
	c.mu.Unlock()
	c.arrived <- struct{}{}
}

func (c *changes) HandleToolsChanged(_ context.Context, _ conduit.NotificationContext, ch *conduit.ToolsChange) {
	names := ""
	for _, t := range ch.Items {
		names += " " + t.Name
	}
	c.add("tools" + names)
}

func (c *changes) HandleResourcesChanged(_ context.Context, _ conduit.NotificationContext, ch *conduit.ResourcesChange) {
	c.add("resources")
}

func (c *changes) HandleResourceUpdated(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
	c.add("updated " + u.URI)
}

// waitFor waits until want was received.
func (c *changes) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for _, g := range c.got {
			if g == want {
				c.mu.Unlock()
				return
			}
		}
		got := append([]string(nil), c.got...)
		c.mu.Unlock()
		select {
		case <-c.arrived:
		case <-deadline:
			t.Fatalf("never received %q; got %q", want, got)
		}
	}
}

// refreshing asks for the fresh list with each tools change.
type refreshing struct{ *changes }

func (refreshing) RefreshDelay() time.Duration { return 20 * time.Millisecond }

func changingServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		SetCacheable:       func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.TTLMs = 60_000 },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	s.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
	})
	return s
}

// TestGoSDKServerChangesReachTheTypedHooks: a go-sdk v1.8.0 server adds
// a tool and a resource and updates a subscribed one while the client
// listens: in the legacy era through its notifications and
// resources/subscribe, in the modern era through subscriptions/listen,
// over stdio pipes and Streamable HTTP.
func TestGoSDKServerChangesReachTheTypedHooks(t *testing.T) {
	for _, tc := range []struct {
		name string
		era  conduit.Era
		http bool
	}{
		{"legacy stdio", conduit.EraLegacy, false},
		{"modern stdio", conduit.EraModern, false},
		{"legacy http", conduit.EraLegacy, true},
		{"modern http", conduit.EraModern, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := changingServer()
			var tr transport.Transport
			if tc.http {
				ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
					&mcp.StreamableHTTPOptions{Stateless: tc.era == conduit.EraModern}))
				defer ts.Close()
				tr = &transport.HTTP{URL: ts.URL}
			} else {
				tr = inProcessServer(t, server)
			}
			ch := newChanges()
			c, err := conduit.Connect(callCtx(t), tr, conduit.Options{Handler: refreshing{ch}, Era: tc.era})
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, tc.era, c.Era())
			if tc.era == conduit.EraModern {
				acked, open := c.Listening()
				assert.True(t, open)
				assert.Equal(t, conduit.Subscriptions{ToolsListChanged: true, ResourcesListChanged: true}, acked)
			}
			require.NoError(t, c.Subscribe(callCtx(t), "test://r"))
			if tc.era == conduit.EraModern {
				acked, _ := c.Listening()
				assert.Equal(t, []string{"test://r"}, acked.ResourceSubscriptions)
			}
			mcp.AddTool(server, &mcp.Tool{Name: "added_tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			ch.waitFor(t, "tools added_tool first")
			server.AddResource(&mcp.Resource{URI: "test://added", Name: "added"}, nil)
			ch.waitFor(t, "resources")
			require.NoError(t, server.ResourceUpdated(callCtx(t), &mcp.ResourceUpdatedNotificationParams{URI: "test://r"}))
			ch.waitFor(t, "updated test://r")
			require.NoError(t, c.Unsubscribe(callCtx(t), "test://r"))
			assert.Zero(t, c.Stats().Unsubscribed)
			require.NoError(t, c.Close())
		})
	}
}

// TestEverythingTSResourceSubscription: the reference TypeScript server
// (legacy) takes resources/subscribe, and its toggle-subscriber-updates
// tool makes it send notifications/resources/updated for the resource
// subscribed to (every 5 s) until toggled off and unsubscribed.
func TestEverythingTSResourceSubscription(t *testing.T) {
	node, entry := everythingTS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ch := newChanges()
	c, err := conduit.Connect(ctx, &transport.Command{Path: node, Args: []string{entry, "stdio"}, CloseTimeout: 2 * time.Second},
		conduit.Options{Handler: ch, Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	const uri = "demo://resource/static/document/architecture.md"
	require.NoError(t, c.Subscribe(ctx, uri))
	_, err = c.CallTool(ctx, "toggle-subscriber-updates", nil)
	require.NoError(t, err)
	ch.waitFor(t, "updated "+uri)
	_, err = c.CallTool(ctx, "toggle-subscriber-updates", nil)
	require.NoError(t, err)
	require.NoError(t, c.Unsubscribe(ctx, uri))
	assert.Zero(t, c.Stats().Unsubscribed)
}

// TestGoSDKServerCachedLists: a modern go-sdk server that marks its list
// results cacheable (ttlMs): a second tools/list within the ttl is
// answered from the cache (Stats.CacheHits), and the list change of the
// listen stream drops it, so the next lists again and sees the new tool.
func TestGoSDKServerCachedLists(t *testing.T) {
	server := changingServer()
	var mu sync.Mutex
	lists := 0
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				mu.Lock()
				lists++
				mu.Unlock()
			}
			return next(ctx, method, req)
		}
	})
	listed := func() int { mu.Lock(); defer mu.Unlock(); return lists }
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer ts.Close()
	ch := newChanges()
	c, err := conduit.Connect(callCtx(t), &transport.HTTP{URL: ts.URL}, conduit.Options{Handler: ch})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, conduit.EraModern, c.Era())
	names := func() []string {
		tools, err := c.ListTools(callCtx(t))
		require.NoError(t, err)
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	assert.Equal(t, []string{"first"}, names())
	assert.Equal(t, []string{"first"}, names())
	assert.Equal(t, 1, listed())
	assert.EqualValues(t, 1, c.Stats().CacheHits)
	mcp.AddTool(server, &mcp.Tool{Name: "added_tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ch.waitFor(t, "tools")
	assert.Equal(t, []string{"added_tool", "first"}, names())
	assert.Equal(t, 2, listed())
}
