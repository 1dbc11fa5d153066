//lint:file-ignore SA1019 sampling and roots are narrowed here: deprecated in 2026-07-28 (SEP-2577), not gone

package conduit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// DeclareOnly narrows what a legacy session's initialize tells the server;
// the handlers are not narrowed: a server that asks anyway still reaches
// them (as under WithCapabilities in the legacy era), and the client's own
// report (Capabilities) says what was left out.
func TestDeclareOnlyNarrowsInitialize(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "seen"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: capsSeen(req.Session.InitializeParams().Capabilities)}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "sample"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 5, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{res.Content}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	var sampled atomic.Int64
	opts := conduit.Options{Era: conduit.EraLegacy, Handlers: conduit.Handlers{
		Sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			sampled.Add(1)
			return &conduit.CreateMessageResult{Role: "assistant", Model: "m", Content: conduit.Text("hello")}, nil
		},
		ElicitationModes: []string{"form", "url"},
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: conduit.ActionDecline}, nil
		},
		Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{}, nil
		},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := func(o conduit.Options) (*conduit.Client, string) {
		t.Helper()
		c, err := conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, o)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		require.Equal(t, conduit.EraLegacy, c.Era())
		res, err := c.CallTool(ctx, "seen", nil)
		require.NoError(t, err)
		return c, res.Content[0].Text
	}
	_, all := seen(opts)
	assert.Equal(t, "sampling elicitation.form elicitation.url roots", all)

	opts.DeclareOnly = []string{"elicitation.url", "sampling.tools"}
	_, some := seen(opts)
	assert.Equal(t, "sampling elicitation.url", some, "sampling.tools: the handlers do not take tools")
	// Asked anyway, the handler answers: refusing is the caller's (the
	// gateway's, which finds the call's assigns).
	opts.DeclareOnly = []string{}
	c, none := seen(opts)
	assert.Equal(t, "", none)
	res, err := c.CallTool(ctx, "sample", nil)
	require.NoError(t, err)
	assert.Equal(t, "hello", res.Content[0].Text)
	assert.Equal(t, int64(1), sampled.Load())
	// Roots undeclared: nothing to tell.
	err = c.RootsChanged(ctx)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindUsage, ce.Kind)

	caps, err := conduit.Capabilities(conduit.Options{DeclareOnly: []string{"roots"}, Handlers: opts.Handlers})
	require.NoError(t, err)
	var advertised []string
	for _, c := range caps {
		if c.Advertised {
			advertised = append(advertised, c.Name)
		} else if c.Name == "sampling" || c.Name == "elicitation.url" {
			assert.Equal(t, "Options.DeclareOnly leaves it out", c.Why, c.Name)
		}
	}
	assert.Equal(t, []string{"roots", "roots.listChanged"}, advertised)

	opts.DeclareOnly = []string{"sampling.nope"}
	_, err = conduit.Connect(ctx, &transport.HTTP{URL: ts.URL}, opts)
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindUsage, ce.Kind)
	assert.EqualError(t, err, `conduit: usage: Options.DeclareOnly: WithCapabilities: unknown capability "sampling.nope" (want sampling, sampling.tools, sampling.context, elicitation.form, elicitation.url, roots or roots.listChanged)`)
}

// capsSeen names the capabilities a go-sdk server read from initialize.
func capsSeen(c *mcp.ClientCapabilities) string {
	var out []string
	if c != nil && c.Sampling != nil {
		out = append(out, "sampling")
	}
	if c != nil && c.Elicitation != nil {
		if c.Elicitation.Form != nil {
			out = append(out, "elicitation.form")
		}
		if c.Elicitation.URL != nil {
			out = append(out, "elicitation.url")
		}
	}
	if c != nil && (c.RootsV2 != nil || c.Roots.ListChanged) {
		out = append(out, "roots")
	}
	return strings.Join(out, " ")
}

// CapabilitiesOf reads back what WithCapabilities narrows a call to, in
// one order whatever the order named; without it, or with an unknown
// name, ok is false.
func TestCapabilitiesOf(t *testing.T) {
	names, ok := conduit.CapabilitiesOf(conduit.WithTimeout(time.Second), conduit.WithCapabilities("roots.listChanged", "elicitation.url", "sampling.context"))
	assert.True(t, ok)
	assert.Equal(t, []string{"sampling", "sampling.context", "elicitation.url", "roots"}, names)
	names, ok = conduit.CapabilitiesOf(conduit.WithCapabilities())
	assert.True(t, ok)
	assert.Equal(t, []string{}, names)
	_, ok = conduit.CapabilitiesOf(conduit.WithTimeout(time.Second))
	assert.False(t, ok)
	_, ok = conduit.CapabilitiesOf(conduit.WithCapabilities("tasks"))
	assert.False(t, ok)
}
