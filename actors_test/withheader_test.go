package actors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// headerLog is an http.Handler in front of an MCP server that records,
// for each POST, its JSON-RPC method (and tool name) and one header.
type headerLog struct {
	next http.Handler
	name string
	mu   sync.Mutex
	seen []string // "method[/tool]=value"
}

func (l *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) != nil || m.ID == nil {
			l.next.ServeHTTP(w, r) // notifications and answers
			return
		}
		what := m.Method
		if m.Params.Name != "" {
			what += "/" + m.Params.Name
		}
		l.mu.Lock()
		l.seen = append(l.seen, what+"="+r.Header.Get(l.name))
		l.mu.Unlock()
	}
	l.next.ServeHTTP(w, r)
}

// WithHeader puts the header on that call's POST alone, in both eras;
// headers Conduit owns are refused with KindUsage before anything is sent,
// and so is any header on a transport without them.
func TestWithHeaderOnOneRequest(t *testing.T) {
	bothEras(t, func(t *testing.T, modern bool) {
		server := mcp.NewServer(&mcp.Implementation{Name: "headers", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
		log := &headerLog{name: "X-Request-Tag", next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: modern})}
		ts := httptest.NewServer(log)
		t.Cleanup(ts.Close) // after the client's Close
		opts := conduit.Options{Era: conduit.EraLegacy}
		if modern {
			opts.Era = conduit.EraModern
		}
		c := connectHTTP(t, ts.URL, opts)
		ctx := callCtx(t)
		log.mu.Lock()
		log.seen = nil
		log.mu.Unlock()

		_, err := c.CallTool(ctx, "echo", nil, conduit.WithUnvalidatedResult(), conduit.WithHeader("x-request-tag", "a1"), conduit.WithHeader("X-Other", "b"))
		require.NoError(t, err)
		_, err = c.CallTool(ctx, "echo", nil, conduit.WithUnvalidatedResult())
		require.NoError(t, err)
		require.NoError(t, c.Call(ctx, "tools/list", nil, nil, conduit.WithHeader("X-Request-Tag", "list")))
		log.mu.Lock()
		assert.Equal(t, []string{"tools/call/echo=a1", "tools/call/echo=", "tools/list=list"}, log.seen)
		log.mu.Unlock()

		for _, name := range []string{"Mcp-Session-Id", "mcp-protocol-version", "Mcp-Method", "Mcp-Param-Region", "Content-Type", "Accept", "Authorization", "Host"} {
			_, err := c.CallTool(ctx, "echo", nil, conduit.WithHeader(name, "x"))
			kind, msg := kindOf(t, err)
			assert.Equal(t, conduit.KindUsage, kind, name)
			assert.Equal(t, "WithHeader: "+http.CanonicalHeaderKey(name)+" is set by Conduit or the transport, not per call", msg)
		}
		_, err = c.CallTool(ctx, "echo", nil, conduit.WithHeader("Bad Name", "x"))
		_, msg := kindOf(t, err)
		assert.Equal(t, `WithHeader: "Bad Name" is not a valid header name`, msg)
		_, err = c.CallTool(ctx, "echo", nil, conduit.WithHeader("X-Tag", "a\r\nInjected: 1"))
		_, msg = kindOf(t, err)
		assert.Equal(t, `WithHeader: the value of X-Tag is not a valid header value`, msg)
		log.mu.Lock()
		assert.Len(t, log.seen, 3, "nothing sent for a refused header")
		log.mu.Unlock()
	})
}

func TestWithHeaderWithoutHTTP(t *testing.T) {
	s := &schemaServer{tools: map[string]schemaTool{"free": {"", `{"content":[]}`}}}
	c := s.connect(t, conduit.Options{})
	_, err := c.CallTool(callCtx(t), "free", nil, conduit.WithHeader("X-Tag", "1"))
	kind, msg := kindOf(t, err)
	assert.Equal(t, conduit.KindUsage, kind)
	assert.Contains(t, msg, "WithHeader: the transport (")
	assert.Contains(t, msg, ") sends no HTTP headers")
	assert.Equal(t, 0, s.seen("tools/call"))
}
