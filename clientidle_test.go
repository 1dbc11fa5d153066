package conduit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// A renewed session's runtime and guards start with the settings the
// first one had: the Client no longer keeps them (settings), so a renewal
// takes them from the lost session's runtime (dialConfigOf).
func TestRenewalDialsWithTheFirstSessionsSettings(t *testing.T) {
	opts := Options{
		Name: "n", ServerID: "srv", Assigns: map[string]any{"k": 1},
		HandlerTimeout: 7 * time.Second, MaxServerRequests: 3,
		InputRateLimit: 5, InputBurst: 6, LogRateLimit: 8, LogBurst: 9,
		Sampling:        SamplingOptions{MaxTokens: 77, Context: true, AllowIdle: true, MaxToolIterations: 4, RejectionCode: -2},
		MaxInboundBytes: 1000, MaxWaitingNotificationBytes: 2000, MaxWriteQueueBytes: 3000,
	}
	c := &Client{}
	h := Handlers{Sampling: func(context.Context, *SamplingRequest) (*CreateMessageResult, error) { return nil, nil }}
	first := c.dialConfig(&opts, h)
	clientSide, serverSide := transport.NewMemoryPair()
	defer serverSide.Close()
	cfg := first.rt
	cfg.Conn, cfg.Guards = clientSide, guards.New(first.guards) // as dial does
	rt := actors.Start(cfg)
	defer rt.Close()

	again := dialConfigOf(rt)
	assert.Equal(t, "n", again.rt.Name)
	assert.Equal(t, "srv", again.rt.ServerID)
	assert.Equal(t, map[string]any{"k": 1}, again.rt.Assigns)
	assert.Equal(t, 7*time.Second, again.rt.HandlerTimeout)
	assert.Equal(t, 3, again.rt.MaxServerRequests)
	assert.Equal(t, rate.Limit(8), again.rt.LogRate)
	assert.Equal(t, 9, again.rt.LogBurst)
	assert.Equal(t, 1000, again.rt.MaxInboundBytes)
	assert.Equal(t, 2000, again.rt.MaxWaitingNotificationBytes)
	assert.Equal(t, 3000, again.rt.MaxWriteQueueBytes)
	require.NotNil(t, again.rt.Handlers.Sampling, "the handlers")
	assert.Equal(t, rate.Limit(5), again.guards.InputRate)
	assert.Equal(t, 6, again.guards.InputBurst)
	assert.Equal(t, 77, again.guards.Sampling.MaxTokens)
	assert.True(t, again.guards.Sampling.Context)
	assert.True(t, again.guards.Sampling.AllowIdle)
	assert.Equal(t, 4, again.guards.Sampling.MaxToolIterations)
	assert.Equal(t, -2, again.guards.Sampling.RejectionCode)
}

// The Client struct fits the 384-byte size class and its session the
// 128-byte one (decisions 74 and 75): a field more moves every client to
// the next. What the Client does not need at rest lives behind a pointer
// made on first use (its change state, its rare part); the session's
// transport connection is its runtime's, Options.Tasks is read from the
// declaration, and aborted shares a word with finished.
func TestClientFitsItsSizeClass(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(Client{}), uintptr(384))
	assert.LessOrEqual(t, unsafe.Sizeof(session{}), uintptr(128))
}

// An idle client holds no change state; the first subscription makes it,
// once, however many callers race for it, and a list change before it
// exists is nothing to drop (decision 74).
func TestIdleClientHoldsNoChangeState(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "idle", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	server.AddResource(&mcp.Resource{URI: "test://notes", Name: "notes"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "hello"}}}, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, &transport.HTTP{URL: ts.URL}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	assert.Nil(t, c.ch.Load(), "an idle client's change state")
	c.listChanged(messages.MethodToolsListChanged)
	assert.Nil(t, c.ch.Load(), "a list change makes none")
	assert.Zero(t, c.Stats().CacheHits)

	require.NoError(t, c.Subscribe(ctx, "test://notes"))
	ch := c.ch.Load()
	require.NotNil(t, ch)
	assert.Equal(t, []string{"test://notes"}, ch.resources)
	assert.Equal(t, []string{"test://notes"}, c.wanted(c.sess()).ResourceSubscriptions)

	fresh := &Client{}
	got := make(chan *changes, 8)
	for range 8 {
		go func() { got <- fresh.changes() }()
	}
	first := <-got
	for range 7 {
		assert.Same(t, first, <-got)
	}
}
