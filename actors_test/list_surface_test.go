package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// listSurfaceServer is a go-sdk server with 5 tools, 5 prompts, 5
// resources and 5 resource templates, listed 2 a page, and a completion
// handler that completes prompt "p0" argument "dept" and template
// "file:///t0/{name}" variable "name".
func listSurfaceServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "lists", Version: "1"}, &mcp.ServerOptions{
		PageSize: 2,
		CompletionHandler: func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			p := req.Params
			var values []string
			switch {
			case p.Ref.Type == "ref/prompt" && p.Ref.Name == "p0" && p.Argument.Name == "dept":
				for _, v := range []string{"Engineering", "Everything", "Sales"} {
					if len(v) >= len(p.Argument.Value) && v[:len(p.Argument.Value)] == p.Argument.Value {
						values = append(values, v)
					}
				}
				if p.Context != nil && p.Context.Arguments["team"] != "" {
					values = append(values, "team="+p.Context.Arguments["team"])
				}
			case p.Ref.Type == "ref/resource" && p.Ref.URI == "file:///t0/{name}":
				values = []string{p.Argument.Name + ":" + p.Argument.Value + "1"}
			default:
				return nil, fmt.Errorf("no completion for %s %s%s", p.Ref.Type, p.Ref.Name, p.Ref.URI)
			}
			total := len(values)
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: total, HasMore: true}}, nil
		},
	})
	for i := range 5 {
		mcp.AddTool(server, &mcp.Tool{Name: fmt.Sprintf("t%d", i)}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		server.AddPrompt(&mcp.Prompt{Name: fmt.Sprintf("p%d", i), Arguments: []*mcp.PromptArgument{{Name: "dept"}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			// The trace a client sent in _meta comes back in the result's.
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}},
				Meta: mcp.Meta{"k": "prompt", "trace": req.Params.Meta["com.example/trace"]}}, nil
		})
		server.AddResource(&mcp.Resource{URI: fmt.Sprintf("file:///r%d", i), Name: fmt.Sprintf("r%d", i)}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "x"}}, Meta: mcp.Meta{"k": "resource"}}, nil
		})
		server.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: fmt.Sprintf("file:///t%d/{name}", i), Name: fmt.Sprintf("t%d", i), MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, fmt.Errorf("unused")
		})
	}
	return server
}

// inGoSDKEras runs test against listSurfaceServer in process, once in the
// legacy era and once in whatever the probe picks.
func inGoSDKEras(t *testing.T, test func(t *testing.T, c *conduit.Client)) {
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			c, err := conduit.Connect(callCtx(t), inProcessServer(t, listSurfaceServer()), conduit.Options{Era: era})
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, era, c.Era())
			test(t, c)
		})
	}
}

func TestGoSDKListResourceTemplatesFollowsPages(t *testing.T) {
	inGoSDKEras(t, func(t *testing.T, c *conduit.Client) {
		templates, err := c.ListResourceTemplates(callCtx(t))
		require.NoError(t, err)
		require.Len(t, templates, 5)
		for i, tm := range templates {
			assert.Equal(t, fmt.Sprintf("file:///t%d/{name}", i), tm.URITemplate)
			assert.Equal(t, fmt.Sprintf("t%d", i), tm.Name)
			assert.Equal(t, "text/plain", tm.MimeType)
		}
	})
}

func TestGoSDKComplete(t *testing.T) {
	inGoSDKEras(t, func(t *testing.T, c *conduit.Client) {
		r, err := c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.PromptRef("p0"), Argument: conduit.CompleteArgument{Name: "dept", Value: "E"},
			Context: &conduit.CompleteContext{Arguments: map[string]string{"team": "core"}}})
		require.NoError(t, err)
		assert.Equal(t, []string{"Engineering", "Everything", "team=core"}, r.Completion.Values)
		require.NotNil(t, r.Completion.Total)
		assert.Equal(t, 3, *r.Completion.Total)
		assert.True(t, r.Completion.HasMore)
		r, err = c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.ResourceRef("file:///t0/{name}"), Argument: conduit.CompleteArgument{Name: "name", Value: "a"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"name:a1"}, r.Completion.Values)
		_, err = c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.PromptRef("nope"), Argument: conduit.CompleteArgument{Name: "dept"}})
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindRPC, ce.Kind)
	})
}

func TestGoSDKPagesAndIterators(t *testing.T) {
	inGoSDKEras(t, func(t *testing.T, c *conduit.Client) {
		p, err := c.ListToolsPage(callCtx(t), "")
		require.NoError(t, err)
		require.Len(t, p.Items, 2)
		assert.Equal(t, "t0", p.Items[0].Name)
		require.NotEmpty(t, p.NextCursor)
		p2, err := c.ListToolsPage(callCtx(t), p.NextCursor)
		require.NoError(t, err)
		assert.Equal(t, "t2", p2.Items[0].Name)

		var names []string
		for tool, err := range c.Tools(callCtx(t)) {
			require.NoError(t, err)
			names = append(names, tool.Name)
		}
		assert.Equal(t, []string{"t0", "t1", "t2", "t3", "t4"}, names)
		names = nil
		for r, err := range c.Resources(callCtx(t)) {
			require.NoError(t, err)
			names = append(names, r.Name)
		}
		assert.Equal(t, []string{"r0", "r1", "r2", "r3", "r4"}, names)
		names = nil
		for pr, err := range c.Prompts(callCtx(t)) {
			require.NoError(t, err)
			names = append(names, pr.Name)
		}
		assert.Equal(t, []string{"p0", "p1", "p2", "p3", "p4"}, names)
		names = nil
		for tm, err := range c.ResourceTemplates(callCtx(t)) {
			require.NoError(t, err)
			names = append(names, tm.Name)
		}
		assert.Equal(t, []string{"t0", "t1", "t2", "t3", "t4"}, names)
		prompts, err := c.ListPrompts(callCtx(t))
		require.NoError(t, err)
		assert.Len(t, prompts, 5)
	})
}

func TestGoSDKResultsKeepMetaAndWithMetaArrives(t *testing.T) {
	inGoSDKEras(t, func(t *testing.T, c *conduit.Client) {
		pr, err := c.GetPrompt(callCtx(t), "p0", map[string]string{"dept": "x"}, conduit.WithMeta(map[string]any{"com.example/trace": "t-1"}))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(pr.Meta, &m))
		assert.Equal(t, "prompt", m["k"])
		assert.Equal(t, "t-1", m["trace"])
		rr, err := c.ReadResource(callCtx(t), "file:///r0")
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(rr.Meta, &m))
		assert.Equal(t, "resource", m["k"])
	})
}

// Over Streamable HTTP the same: stateless (2026-07-28) and stateful
// (legacy) go-sdk handlers.
func TestGoSDKListSurfaceOverHTTP(t *testing.T) {
	for _, tc := range []struct {
		era       conduit.Era
		stateless bool
	}{{conduit.EraModern, true}, {conduit.EraLegacy, false}} {
		t.Run(string(tc.era), func(t *testing.T) {
			server := listSurfaceServer()
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: tc.stateless}))
			defer ts.Close()
			c := connectHTTP(t, ts.URL, conduit.Options{Era: tc.era})
			require.Equal(t, tc.era, c.Era())
			var uris []string
			for tm, err := range c.ResourceTemplates(callCtx(t)) {
				require.NoError(t, err)
				uris = append(uris, tm.URITemplate)
			}
			assert.Len(t, uris, 5)
			r, err := c.Complete(callCtx(t), conduit.CompleteParams{Ref: conduit.PromptRef("p0"), Argument: conduit.CompleteArgument{Name: "dept", Value: "S"}},
				conduit.WithMeta(map[string]any{"com.example/trace": "t-2"}))
			require.NoError(t, err)
			assert.Equal(t, []string{"Sales"}, r.Completion.Values)
			pr, err := c.GetPrompt(callCtx(t), "p0", nil, conduit.WithMeta(map[string]any{"com.example/trace": "t-2"}))
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(pr.Meta, &m))
			assert.Equal(t, "t-2", m["trace"])
			require.NoError(t, c.Close())
		})
	}
}
