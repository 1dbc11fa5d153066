//lint:file-ignore SA1019 sampling and roots are capabilities read here: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// capsNames names the capabilities c holds, as the go-sdk read them.
func capsNames(c *mcp.ClientCapabilities) string {
	var out []string
	if c != nil && c.Sampling != nil {
		out = append(out, "sampling")
	}
	if c != nil && c.Elicitation != nil {
		out = append(out, "elicitation")
	}
	if c != nil && (c.RootsV2 != nil || c.Roots.ListChanged) {
		out = append(out, "roots")
	}
	return "[" + strings.Join(out, " ") + "]"
}

// A tool that reads its client's capabilities without asking for input
// (go-sdk: the request's _meta for a modern client, the session's
// initialize for a legacy one) sees through a legacy-pinned upstream what
// it sees direct: the modern downstream client's, not the gateway's (the
// host's connection of that capability set, decision 78). A tool that
// needs sampling answers a client without it -32021 itself.
func TestGatewayLegacyUpstreamSeesTheClientsCapabilities(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "caps", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "caps", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: capsNames(req.ClientCapabilities())}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "needs_sampling", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if c := req.ClientCapabilities(); c == nil || c.Sampling == nil {
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "sampling required", Data: []byte(`{"requiredCapabilities":{"sampling":{}}}`)}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
	})
	direct := serveSDK(t, s, &mcp.StreamableHTTPOptions{Stateless: true})
	legacy := serveSDK(t, s, nil)
	g, url := serve(t, host.Config{Servers: map[string]host.Server{
		"u": {URL: legacy, Conduit: host.Settings{Era: conduit.EraLegacy, Ping: host.PingPolicy{Interval: -1}}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(endpoint, tool string, o *mcp.ClientOptions) (string, error) {
		t.Helper()
		o.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, o).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
		require.NoError(t, err)
		defer cs.Close()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			return "", err
		}
		return res.Content[0].(*mcp.TextContent).Text, nil
	}
	elicits := func() *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, assert.AnError
		}}
	}
	for _, tc := range []struct {
		name string
		opts func() *mcp.ClientOptions
		want string
	}{
		// A go-sdk client declares roots whatever its options.
		{"roots alone", func() *mcp.ClientOptions { return &mcp.ClientOptions{} }, "[roots]"},
		{"elicitation and roots", elicits, "[elicitation roots]"},
	} {
		got, err := call(direct, "caps", tc.opts())
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s: direct", tc.name)
		got, err = call(url+"/mcp", "u__caps", tc.opts())
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s: through the gateway", tc.name)
	}
	_, direct32021 := call(direct, "needs_sampling", elicits())
	_, gateway32021 := call(url+"/mcp", "u__needs_sampling", elicits())
	for _, err := range []error{direct32021, gateway32021} {
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je)
		assert.Equal(t, int64(-32021), je.Code)
		assert.Equal(t, "sampling required", je.Message)
		assert.JSONEq(t, `{"requiredCapabilities":{"sampling":{}}}`, string(je.Data))
	}

	// The server's status shows the two sets' connections beside its main one.
	var sets []string
	for _, v := range g.Host().Status()[0].Variants {
		sets = append(sets, "["+strings.Join(v.Capabilities, " ")+"]")
	}
	assert.Equal(t, []string{"[elicitation.form roots]", "[roots]"}, sets)
}
