package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// watched is an upstream (go-sdk, Streamable HTTP) with two subscribable
// resources, test://a and test://b (its subscriptions and unsubscriptions
// go to subs: "+URI", "-URI", an unsubscription once held returns); its tool "touch" updates both, and its
// tool "grow" adds a tool "extra" and a resource test://c (a
// tools/list_changed and a resources/list_changed).
func watched(t *testing.T, subs chan<- string, held func()) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "watched", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			subs <- "+" + req.Params.URI
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *mcp.UnsubscribeRequest) error {
			if held != nil {
				held()
			}
			subs <- "-" + req.Params.URI
			return nil
		},
	})
	for _, uri := range []string{"test://a", "test://b"} {
		s.AddResource(&mcp.Resource{URI: uri, Name: uri[len("test://"):]}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}}, nil
		})
	}
	s.AddTool(&mcp.Tool{Name: "touch", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for _, uri := range []string{"test://b", "test://a"} {
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "grow", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "extra", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
		s.AddResource(&mcp.Resource{URI: "test://c", Name: "c"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "c"}}}, nil
		})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grown"}}}, nil
	})
	return serveSDK(t, s, nil)
}

// changes records what a downstream client's change hooks receive.
type changes struct {
	tools     chan []string
	resources chan struct{}
	updated   chan string
}

func (c *changes) handlers() conduit.Handlers {
	c.tools, c.resources, c.updated = make(chan []string, 16), make(chan struct{}, 16), make(chan string, 16)
	return conduit.Handlers{
		ToolsChanged: func(_ context.Context, _ conduit.NotificationContext, ch *conduit.ToolsChange) {
			var names []string
			if ch != nil {
				for _, tl := range ch.Items {
					names = append(names, tl.Name)
				}
			}
			c.tools <- names
		},
		ResourcesChanged: func(context.Context, conduit.NotificationContext, *conduit.ResourcesChange) {
			c.resources <- struct{}{}
		},
		ResourceUpdated: func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
			c.updated <- u.URI
		},
	}
}

// next is the next URI updated, or "" when none came within d.
func (c *changes) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case uri := <-c.updated:
		return uri
	case <-time.After(d):
		return ""
	}
}

// A modern downstream client gets the catalog's changes and the updates of
// the resources it subscribed to on its own subscriptions/listen stream,
// and a legacy one on its session: a tool added upstream reaches both
// ToolsChanged hooks; test://a's update reaches the modern client, which
// subscribed to it, and test://b's the legacy one, and neither gets the
// other's, though the gateway is subscribed upstream to both. The modern
// client's unsubscription (its listen stream re-opened without the URI)
// unsubscribes the gateway upstream.
func TestGatewayRelaysChangesToModernListen(t *testing.T) {
	subs := make(chan string, 64)
	_, url := serve(t, host.Config{Servers: map[string]host.Server{
		"w": {URL: watched(t, subs, nil), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	var modern, legacy changes
	mc := connect(t, url+"/mcp", conduit.EraModern, modern.handlers())
	lc := connect(t, url+"/mcp", conduit.EraLegacy, legacy.handlers())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	acked, open := mc.Listening()
	require.True(t, open, "the modern client's listen stream is open")
	assert.True(t, acked.ToolsListChanged)
	assert.True(t, acked.ResourcesListChanged)

	require.NoError(t, mc.Subscribe(ctx, "test://a"))
	acked, _ = mc.Listening()
	assert.Equal(t, []string{"test://a"}, acked.ResourceSubscriptions)
	require.NoError(t, lc.Subscribe(ctx, "test://b"))

	res, err := mc.CallTool(ctx, "w__touch", nil)
	require.NoError(t, err)
	assert.Equal(t, "touched", text(t, res))
	assert.Equal(t, "test://a", modern.next(t, 10*time.Second))
	assert.Equal(t, "test://b", legacy.next(t, 10*time.Second))
	// A second round: had the other URI been relayed to either, it would
	// be ahead of this round's update.
	_, err = lc.CallTool(ctx, "w__touch", nil)
	require.NoError(t, err)
	assert.Equal(t, "test://a", modern.next(t, 10*time.Second))
	assert.Equal(t, "test://b", legacy.next(t, 10*time.Second))
	assert.Empty(t, modern.next(t, 200*time.Millisecond), "test://b never reaches the modern client")
	assert.Empty(t, legacy.next(t, 10*time.Millisecond), "test://a never reaches the legacy client")

	// Unsubscribed, the modern client gets no more updates of test://a.
	require.NoError(t, mc.Unsubscribe(ctx, "test://a"))
	_, err = mc.CallTool(ctx, "w__touch", nil)
	require.NoError(t, err)
	assert.Equal(t, "test://b", legacy.next(t, 10*time.Second))
	assert.Empty(t, modern.next(t, 200*time.Millisecond), "no update after the unsubscription")
	assert.Equal(t, []string{"+test://a", "+test://b", "-test://a"}, upstream(ctx, subs, 3), "the gateway's subscriptions upstream")

	// A tool and a resource added upstream: both clients hear of the
	// catalog's changes.
	_, err = mc.CallTool(ctx, "w__grow", nil)
	require.NoError(t, err)
	for _, c := range []*changes{&modern, &legacy} {
		select {
		case <-c.tools:
		case <-ctx.Done():
			t.Fatal("no tools/list_changed relayed")
		}
		select {
		case <-c.resources:
		case <-ctx.Done():
			t.Fatal("no resources/list_changed relayed")
		}
	}
	tools, err := mc.ListTools(ctx)
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "w__extra")
	// Everything the modern client got named its listen stream (the
	// subscriptionId) and was of a kind or resource it acknowledged: the
	// client drops and counts anything else.
	assert.Equal(t, int64(0), mc.Stats().Unsubscribed)
}

// upstream is the next n subscription changes an upstream saw, fewer if
// ctx ends first.
func upstream(ctx context.Context, subs <-chan string, n int) []string {
	var got []string
	for len(got) < n {
		select {
		case s := <-subs:
			got = append(got, s)
		case <-ctx.Done():
			return got
		}
	}
	return got
}

// A last subscriber leaving and a first one coming reach the upstream in
// the order the gateway decided them: the new subscription waits for the
// unsubscription in flight (held here by the upstream), and the gateway
// ends subscribed upstream. Every change of the URI over, it is forgotten.
func TestGatewaySubscriptionChangesInOrder(t *testing.T) {
	subs := make(chan string, 16)
	entered, hold := make(chan struct{}), make(chan struct{})
	g, _ := serve(t, host.Config{Servers: map[string]host.Server{
		"w": {URL: watched(t, subs, func() { entered <- struct{}{}; <-hold }), Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var release sync.Once
	defer release.Do(func() { close(hold) }) // a failure must not leave the upstream held
	s1, s2 := &mcp.ServerSession{}, &mcp.ServerSession{}
	run := func(f func() error) <-chan error {
		done := make(chan error, 1)
		go func() { done <- f() }()
		return done
	}
	sub := func(s *mcp.ServerSession) func() error {
		return func() error {
			return g.subscribe(ctx, &mcp.SubscribeRequest{Session: s, Params: &mcp.SubscribeParams{URI: "test://a"}})
		}
	}
	require.NoError(t, <-run(sub(s1)))
	assert.Equal(t, []string{"+test://a"}, upstream(ctx, subs, 1))

	leave := run(func() error {
		return g.unsubscribe(ctx, &mcp.UnsubscribeRequest{Session: s1, Params: &mcp.UnsubscribeParams{URI: "test://a"}})
	})
	<-entered // the upstream holds the unsubscription
	come := run(sub(s2))
	require.Eventually(t, func() bool { return g.more.changing("test://a") == 2 }, 10*time.Second, time.Millisecond)
	select { // a negative: nothing may happen while the upstream holds
	case ev := <-subs:
		t.Fatalf("%s reached the upstream before the unsubscription in flight ended", ev)
	case err := <-come:
		t.Fatalf("the subscription ended (%v) before the unsubscription in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	release.Do(func() { close(hold) })
	require.NoError(t, <-leave)
	require.NoError(t, <-come)
	assert.Equal(t, []string{"-test://a", "+test://a"}, upstream(ctx, subs, 2))
	assert.Equal(t, 0, g.more.changing("test://a"))
	g.more.mu.Lock()
	assert.Equal(t, map[*mcp.ServerSession]bool{s2: true}, g.more.subs["test://a"])
	g.more.mu.Unlock()
}
