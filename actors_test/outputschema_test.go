package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// schemaTool is one tool of a schemaServer: its outputSchema (raw JSON,
// "" for none) and the result of each call.
type schemaTool struct {
	schema string
	result string
}

// schemaServer is a scripted server, of either era, whose tools declare
// the given outputSchemas and answer the given results. It counts the
// requests of each method.
type schemaServer struct {
	modern bool
	tools  map[string]schemaTool
	mu     sync.Mutex
	count  map[string]int
}

func (s *schemaServer) seen(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count[method]
}

func (s *schemaServer) connect(t *testing.T, opts conduit.Options) *conduit.Client {
	t.Helper()
	client, server := transport.NewMemoryPair()
	s.count = map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := context.Background()
		for {
			msg, err := server.Read(ctx)
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(msg.Data, &m) != nil || m.ID == nil {
				continue
			}
			s.mu.Lock()
			s.count[m.Method]++
			s.mu.Unlock()
			result := `{}`
			switch m.Method {
			case "server/discover":
				if !s.modern {
					_ = server.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"error":{"code":-32601,"message":"Method not found"}}`))
					continue
				}
				result = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"schemas","version":"1"}}}`
			case "initialize":
				result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"schemas","version":"1"}}`
			case "tools/list":
				var tools []string
				for name, tool := range s.tools {
					js := `{"name":"` + name + `","inputSchema":{"type":"object"}`
					if tool.schema != "" {
						js += `,"outputSchema":` + tool.schema
					}
					tools = append(tools, js+"}")
				}
				result = `{"tools":[` + strings.Join(tools, ",") + `]}`
			case "tools/call":
				result = s.tools[m.Params.Name].result
			}
			_ = server.Write(ctx, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":`+result+`}`))
		}
	}()
	t.Cleanup(func() {
		_ = client.Close()
		<-done
		_ = server.Close()
	})
	c, err := conduit.Connect(callCtx(t), transport.NewMemoryTransport(client), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if s.modern {
		require.Equal(t, conduit.EraModern, c.Era())
	} else {
		require.Equal(t, conduit.EraLegacy, c.Era())
	}
	return c
}

// kindOf is err's Kind and message, or fails the test.
func kindOf(t *testing.T, err error) (conduit.Kind, string) {
	t.Helper()
	var ce *conduit.Error
	require.True(t, errors.As(err, &ce), "want a *conduit.Error, got %v", err)
	return ce.Kind, ce.Message
}

const nSchema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`

func bothEras(t *testing.T, run func(t *testing.T, modern bool)) {
	for _, modern := range []bool{false, true} {
		name := "legacy"
		if modern {
			name = "modern"
		}
		t.Run(name, func(t *testing.T) { run(t, modern) })
	}
}

// A result whose structuredContent breaks the tool's outputSchema fails
// with KindInvalidResult naming the JSON pointer and the keyword. The
// schema is the session's last listing's: before any, a call sends no
// tools/list of its own and its result is not checked.
func TestOutputSchemaMismatchFailsTheCall(t *testing.T) {
	bothEras(t, func(t *testing.T, modern bool) {
		s := &schemaServer{modern: modern, tools: map[string]schemaTool{
			"good": {nSchema, `{"content":[],"structuredContent":{"n":3}}`},
			"bad":  {nSchema, `{"content":[],"structuredContent":{"n":"three"}}`},
			"deep": {`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{"b":{"minimum":10}}}}}}`, `{"content":[],"structuredContent":{"a":[{"b":12},{"b":3}]}}`},
			"none": {nSchema, `{"content":[{"type":"text","text":"3"}]}`},
			"free": {"", `{"content":[],"structuredContent":{"n":"anything"}}`},
			"oops": {nSchema, `{"content":[],"isError":true,"structuredContent":{"n":"three"}}`},
		}}
		c := s.connect(t, conduit.Options{})
		ctx := callCtx(t)

		r, err := c.CallTool(ctx, "bad", nil)
		require.NoError(t, err, "nobody listed the tools: nothing to check against")
		assert.JSONEq(t, `{"n":"three"}`, string(r.StructuredContent))
		assert.Equal(t, 0, s.seen("tools/list"), "a call lists nothing")
		_, err = c.ListTools(ctx)
		require.NoError(t, err)

		r, err = c.CallTool(ctx, "good", nil)
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":3}`, string(r.StructuredContent))

		_, err = c.CallTool(ctx, "bad", nil)
		kind, msg := kindOf(t, err)
		assert.Equal(t, conduit.KindInvalidResult, kind)
		assert.Equal(t, `tool "bad": structuredContent does not match its outputSchema: at /n: keyword "type" (schema /properties/n/type): expected integer, but got string`, msg)

		_, err = c.CallTool(ctx, "deep", nil)
		_, msg = kindOf(t, err)
		assert.Contains(t, msg, `at /a/1/b: keyword "minimum" (schema /properties/a/items/properties/b/minimum)`)

		_, err = c.CallTool(ctx, "none", nil)
		kind, msg = kindOf(t, err)
		assert.Equal(t, conduit.KindInvalidResult, kind)
		assert.Equal(t, `tool "none" declares an outputSchema but its result has no structuredContent`, msg)

		r, err = c.CallTool(ctx, "none", nil, conduit.WithUnvalidatedResult())
		require.NoError(t, err)
		assert.Equal(t, "3", r.Content[0].Text)
		r, err = c.CallTool(ctx, "bad", nil, conduit.WithUnvalidatedResult())
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":"three"}`, string(r.StructuredContent))

		_, err = c.CallTool(ctx, "free", nil)
		require.NoError(t, err, "no outputSchema: nothing to check")
		r, err = c.CallTool(ctx, "oops", nil)
		require.NoError(t, err, "an isError result is not checked")
		assert.True(t, r.IsError)
		assert.Equal(t, 1, s.seen("tools/list"), "listed once, by the caller")

		_, err = c.ListTools(ctx)
		require.NoError(t, err)
		s.mu.Lock()
		s.tools["bad"] = schemaTool{`{"type":"object","properties":{"n":{"type":"string"}}}`, s.tools["bad"].result}
		s.mu.Unlock()
		_, err = c.CallTool(ctx, "bad", nil)
		kind, _ = kindOf(t, err)
		assert.Equal(t, conduit.KindInvalidResult, kind, "the schema compiled before the second listing")
		_, err = c.ListTools(ctx)
		require.NoError(t, err)
		_, err = c.CallTool(ctx, "bad", nil)
		require.NoError(t, err, "a new listing replaces the schemas")
		assert.Equal(t, 3, s.seen("tools/list"))
	})
}

// With WithUnvalidatedResult alone, nothing is listed.
func TestUnvalidatedResultListsNothing(t *testing.T) {
	bothEras(t, func(t *testing.T, modern bool) {
		s := &schemaServer{modern: modern, tools: map[string]schemaTool{"bad": {nSchema, `{"content":[],"structuredContent":{"n":"three"}}`}}}
		c := s.connect(t, conduit.Options{})
		_, err := c.CallTool(callCtx(t), "bad", nil, conduit.WithUnvalidatedResult())
		require.NoError(t, err)
		assert.Equal(t, 0, s.seen("tools/list"))
	})
}

// An outputSchema that cannot be used fails each call of its tool, is
// logged once, and is never fetched from anywhere; one too large or too
// costly to apply is refused before it is compiled.
func TestInvalidOutputSchemaIsReportedOnceAndNotFetched(t *testing.T) {
	var hits atomic.Int32
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type":"object"}`))
	}))
	defer remote.Close()
	// 40 levels of anyOf over two references to the next level: 2^40
	// subschemas for one value.
	var defs []string
	for i := range 40 {
		defs = append(defs, `"l`+strconv.Itoa(i)+`":{"anyOf":[{"$ref":"#/$defs/l`+strconv.Itoa(i+1)+`"},{"$ref":"#/$defs/l`+strconv.Itoa(i+1)+`"}]}`)
	}
	defs = append(defs, `"l40":{"type":"string"}`)
	exponential := `{"$ref":"#/$defs/l0","$defs":{` + strings.Join(defs, ",") + `}}`
	huge := `{"type":"object","description":"` + strings.Repeat("x", conduit.MaxOutputSchemaBytes) + `"}`
	bothEras(t, func(t *testing.T, modern bool) {
		result := `{"content":[],"structuredContent":{"n":3}}`
		s := &schemaServer{modern: modern, tools: map[string]schemaTool{
			"broken":      {`{"type":5}`, result},
			"remote":      {`{"$ref":"` + remote.URL + `/schema.json"}`, result},
			"huge":        {huge, result},
			"exponential": {exponential, result},
		}}
		logs := &slogRecorder{}
		c := s.connect(t, conduit.Options{Logger: slog.New(logs)})
		ctx := callCtx(t)
		_, err := c.ListTools(ctx)
		require.NoError(t, err)
		for _, tc := range []struct{ tool, msg string }{
			{"broken", `tool "broken": invalid outputSchema: `},
			{"remote", `tool "remote": invalid outputSchema: `},
			{"huge", `tool "huge": invalid outputSchema: ` + strconv.Itoa(len(huge)) + ` bytes, over the limit of 262144 (MaxOutputSchemaBytes)`},
			{"exponential", `tool "exponential": invalid outputSchema: its $refs expand to over 100000 subschemas`},
		} {
			for range 2 {
				start := time.Now()
				_, err := c.CallTool(ctx, tc.tool, nil)
				kind, msg := kindOf(t, err)
				assert.Equal(t, conduit.KindInvalidResult, kind, tc.tool)
				assert.True(t, strings.HasPrefix(msg, tc.msg), "%s: %s", tc.tool, msg)
				assert.Less(t, time.Since(start), 5*time.Second, tc.tool)
			}
			_, err = c.CallTool(ctx, tc.tool, nil, conduit.WithUnvalidatedResult())
			require.NoError(t, err)
		}
		logs.mu.Lock()
		warned := map[string]int{}
		for _, l := range logs.logs {
			if strings.HasPrefix(l["msg"], "tool's outputSchema is invalid") {
				warned[l["tool"]]++
			}
		}
		logs.mu.Unlock()
		assert.Equal(t, map[string]int{"broken": 1, "remote": 1, "huge": 1, "exponential": 1}, warned)
		assert.Zero(t, hits.Load(), "nothing is fetched")
	})
}

// A nested value against a recursive schema is checked; one nesting past
// MaxStructuredContentDepth is refused, never given to the validator,
// whose time grows with the square of the depth.
func TestOutputSchemaDeepValue(t *testing.T) {
	const depth = conduit.MaxStructuredContentDepth - 1
	value := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	s := &schemaServer{tools: map[string]schemaTool{
		"deep": {`{"type":"object","properties":{"v":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"}}}}`, `{"content":[],"structuredContent":{"v":` + value + `}}`},
		"odd":  {`{"type":"object","properties":{"v":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/a"}}}}`, `{"content":[],"structuredContent":{"v":` + strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth) + `}}`},
	}}
	c := s.connect(t, conduit.Options{})
	_, err := c.ListTools(callCtx(t))
	require.NoError(t, err)
	_, err = c.CallTool(callCtx(t), "deep", nil)
	require.NoError(t, err)
	_, err = c.CallTool(callCtx(t), "odd", nil)
	kind, msg := kindOf(t, err)
	assert.Equal(t, conduit.KindInvalidResult, kind)
	assert.Contains(t, msg, `keyword "type"`)
	assert.Contains(t, msg, "at /v/0/0/0/")

	s.tools["deeper"] = schemaTool{s.tools["deep"].schema, `{"content":[],"structuredContent":{"v":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}}`}
	c = s.connect(t, conduit.Options{})
	_, err = c.ListTools(callCtx(t))
	require.NoError(t, err)
	start := time.Now()
	_, err = c.CallTool(callCtx(t), "deeper", nil)
	kind, msg = kindOf(t, err)
	assert.Equal(t, conduit.KindInvalidResult, kind)
	assert.Equal(t, `tool "deeper": structuredContent nests 9001 levels deep, over the limit of 64 (MaxStructuredContentDepth): not checked`, msg)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// The go-sdk server in-process: mcp.AddTool with an Out type declares an
// outputSchema and fills structuredContent, which passes; a tool that
// declares one and sends none fails, in both eras.
func TestOutputSchemaGoSDKServer(t *testing.T) {
	type sum struct {
		N int `json:"n"`
	}
	bothEras(t, func(t *testing.T, modern bool) {
		server := mcp.NewServer(&mcp.Implementation{Name: "typed", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "add"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (*mcp.CallToolResult, sum, error) {
			return nil, sum{N: in.A + in.B}, nil
		})
		server.AddTool(&mcp.Tool{Name: "untyped", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(nSchema)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3"}}}, nil
			})
		opts := conduit.Options{Era: conduit.EraLegacy}
		if modern {
			opts.Era = conduit.EraModern
		}
		c, err := conduit.Connect(callCtx(t), inProcessServer(t, server), opts)
		require.NoError(t, err)
		defer c.Close()
		_, err = c.ListTools(callCtx(t))
		require.NoError(t, err)
		r, err := c.CallTool(callCtx(t), "add", map[string]int{"a": 2, "b": 3})
		require.NoError(t, err)
		assert.JSONEq(t, `{"n":5}`, string(r.StructuredContent))
		_, err = c.CallTool(callCtx(t), "untyped", nil)
		kind, msg := kindOf(t, err)
		assert.Equal(t, conduit.KindInvalidResult, kind)
		assert.Equal(t, `tool "untyped" declares an outputSchema but its result has no structuredContent`, msg)
	})
}
