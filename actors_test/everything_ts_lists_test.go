package actors_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// TestEverythingTSTemplatesAndCompletion: the reference TypeScript server
// lists its resource templates and completes its completable prompt and a
// template's variable.
func TestEverythingTSTemplatesAndCompletion(t *testing.T) {
	node, entry := everythingTS(t)
	c, err := conduit.Connect(callCtx(t), &transport.Command{Path: node, Args: []string{entry, "stdio"}, CloseTimeout: 2 * time.Second}, conduit.Options{})
	require.NoError(t, err)
	defer c.Close()
	templates, err := c.ListResourceTemplates(callCtx(t))
	require.NoError(t, err)
	var uris []string
	for _, tm := range templates {
		uris = append(uris, tm.URITemplate)
	}
	assert.Contains(t, uris, "demo://resource/dynamic/text/{resourceId}")
	r, err := c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.PromptRef("completable-prompt"), Argument: conduit.CompleteArgument{Name: "department", Value: "E"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"Engineering"}, r.Completion.Values)
	r, err = c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.ResourceRef("demo://resource/dynamic/text/{resourceId}"), Argument: conduit.CompleteArgument{Name: "resourceId", Value: "1"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, r.Completion.Values)
}
