package conduit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/guards"
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
