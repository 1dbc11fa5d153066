package conduit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

type watcher struct{}

func (watcher) HandleToolsChanged(context.Context, conduit.NotificationContext, *conduit.ToolsChange) {
}
func (watcher) HandlePromptsChanged(context.Context, conduit.NotificationContext, *conduit.PromptsChange) {
}
func (watcher) HandleResourcesChanged(context.Context, conduit.NotificationContext, *conduit.ResourcesChange) {
}
func (watcher) HandleResourceUpdated(context.Context, conduit.NotificationContext, *conduit.ResourceUpdate) {
}
func (watcher) RefreshDelay() time.Duration { return time.Second }

// misspeltChange has a method named almost like HandleToolsChanged.
type misspeltChange struct{}

func (misspeltChange) HandleToolChanged(context.Context, conduit.NotificationContext, *conduit.ToolsChange) {
}

func TestHandlersOfTakesTheChangeHooks(t *testing.T) {
	h, err := conduit.HandlersOf(watcher{})
	require.NoError(t, err)
	assert.NotNil(t, h.ToolsChanged)
	assert.NotNil(t, h.PromptsChanged)
	assert.NotNil(t, h.ResourcesChanged)
	assert.NotNil(t, h.ResourceUpdated)
	assert.True(t, h.RefreshLists)
	assert.Equal(t, time.Second, h.RefreshDelay)
	assert.Equal(t, conduit.Subscriptions{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}, h.Changes())

	_, err = conduit.HandlersOf(misspeltChange{})
	assert.ErrorIs(t, err, conduit.ErrHandler)
	assert.ErrorContains(t, err, "method HandleToolChanged is not HandleToolsChanged (ToolsChangedHandler)")

	// The change hooks advertise nothing.
	caps, err := conduit.Capabilities(conduit.Options{Handler: watcher{}})
	require.NoError(t, err)
	for _, c := range caps {
		assert.False(t, c.Advertised, c.Name)
	}
	_, err = conduit.Connect(context.Background(), nil, conduit.Options{Handler: watcher{}, Handlers: conduit.Handlers{RefreshLists: true}})
	assert.ErrorIs(t, err, conduit.ErrHandler)
}
