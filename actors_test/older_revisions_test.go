package actors_test

import (
	"context"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// A server that answers initialize with 2025-03-26 or 2024-11-05 gets a
// session at that revision, and what the revision lacks is not there: no
// elicitation (a server's elicitation/create is refused -32601 before any
// callback, counted and audited as every undeclared request), no
// structured tool output, no tasks; sampling and roots work.
func TestOlderRevisionSession(t *testing.T) {
	for _, v := range []string{"2025-03-26", "2024-11-05"} {
		t.Run(v, func(t *testing.T) {
			h := &handler{modes: []string{"form", "url"}}
			var (
				mu      sync.Mutex
				audited []conduit.AuditRecord
			)
			c, srv := connect(t, conduit.Options{Handler: h, Tasks: true, Sampling: conduit.SamplingOptions{Context: true},
				Audit: func(r conduit.AuditRecord) { mu.Lock(); audited = append(audited, r); mu.Unlock() }}, v)
			init := srv.Init["params"].(map[string]any)
			assert.Equal(t, "2025-11-25", init["protocolVersion"], "the newest revision is offered first")
			assert.Equal(t, v, c.ProtocolVersion())
			assert.Equal(t, conduit.EraLegacy, c.Era())

			srv.request(1, "elicitation/create", map[string]any{"message": "Name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}}})
			e := srv.expectError(1, -32601)
			assert.Equal(t, "Method not found: elicitation/create (the client did not declare this capability)", e["message"])
			assert.Equal(t, 0, h.count(), "no callback ran")
			assert.EqualValues(t, 1, c.Stats().Refused)
			mu.Lock()
			require.Len(t, audited, 1)
			assert.Equal(t, "refused", audited[0].Outcome)
			mu.Unlock()

			srv.request(2, "roots/list", nil)
			r := srv.expectResponse(2)
			assert.Contains(t, r, "result")

			tools := make(chan []conduit.Tool, 1)
			go func() {
				ts, err := c.ListTools(context.Background())
				assert.NoError(t, err)
				tools <- ts
			}()
			list := srv.next()
			require.Equal(t, "tools/list", list["method"])
			srv.reply(list["id"], map[string]any{"tools": []any{map[string]any{"name": "t", "inputSchema": map[string]any{"type": "object"},
				"outputSchema": map[string]any{"type": "object", "required": []string{"n"}}}}})
			ts := <-tools
			require.Len(t, ts, 1)
			assert.Nil(t, ts[0].OutputSchema, "no outputSchema before 2025-06-18")

			call := callAsync(c, "t")
			req := srv.next()
			require.Equal(t, "tools/call", req["method"])
			params := req["params"].(map[string]any)
			assert.NotContains(t, params, "task", "no tasks before 2025-11-25")
			srv.reply(req["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}, "structuredContent": map[string]any{"n": "x"}})
			res := <-call
			require.NoError(t, res.err)
			assert.Nil(t, res.res.StructuredContent, "no structuredContent before 2025-06-18")
			assert.Equal(t, "ok", res.res.Content[0].Text)
		})
	}
}

// The capabilities offered in initialize follow a pinned older revision.
func TestPinnedOlderRevisionOffersItsCapabilities(t *testing.T) {
	h := &handler{modes: []string{"form", "url"}}
	clientSide, serverSide := transport.NewMemoryPair()
	srv := newFakeServer(t, serverSide)
	done := make(chan error, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{Handler: h, ProtocolVersion: "2024-11-05", Tasks: true})
		if err == nil {
			_ = c.Close()
		}
		done <- err
	}()
	m := srv.next()
	require.Equal(t, "initialize", m["method"], "a pinned legacy version pins the era: no probe")
	srv.reply(m["id"], map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "old", "version": "1"}})
	require.NoError(t, <-done)
	_ = serverSide.Close()
	for range srv.in {
	}
	init := m["params"].(map[string]any)
	assert.Equal(t, "2024-11-05", init["protocolVersion"])
	assert.Equal(t, map[string]any{"sampling": map[string]any{}, "roots": map[string]any{"listChanged": true}}, init["capabilities"])
}

// The go-sdk v1.8.0 server in process, with the client pinned to
// 2024-11-05 and to 2025-03-26: the server answers that revision, and
// tools work.
func TestGoSDKServerAtOlderRevisions(t *testing.T) {
	for _, v := range []string{"2024-11-05", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "old", Version: "1"}, nil)
			mcp.AddTool(server, &mcp.Tool{Name: "hello"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hi from " + v}}}, nil, nil
			})
			c, err := conduit.Connect(callCtx(t), inProcessServer(t, server), conduit.Options{Era: conduit.EraLegacy, ProtocolVersion: v})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, v, c.ProtocolVersion())
			ts, err := c.ListTools(callCtx(t))
			require.NoError(t, err)
			require.Len(t, ts, 1)
			assert.Nil(t, ts[0].OutputSchema)
			r, err := c.CallTool(callCtx(t), "hello", nil)
			require.NoError(t, err)
			assert.Equal(t, "hi from "+v, textOf(t, r))
			assert.Nil(t, r.StructuredContent)
		})
	}
}
