package actors_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// sseServer is the go-sdk v1.8.0 server on its HTTP+SSE handler (the
// 2024-11-05 transport), with a tool that asks the client for a sampling
// completion; it records the requests it gets ("GET", "POST ?sessionid").
type sseServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func newSSEServer(t *testing.T) *sseServer {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sse-first-ok"}}}, nil, nil
	})
	mcp.AddTool(server, &mcp.Tool{Name: "ask"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 sampling over a 2024-11-05 transport is what is tested: deprecated in 2026-07-28, not gone
		res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
			//lint:ignore SA1019 as above
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi?"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "model said " + res.Content.(*mcp.TextContent).Text}}}, nil, nil
	})
	h := mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
	s := &sseServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		entry := r.Method
		if r.URL.RawQuery != "" {
			entry += " ?" + strings.SplitN(r.URL.RawQuery, "=", 2)[0]
		}
		s.seen = append(s.seen, entry)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sseServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// Over HTTP+SSE (chosen explicitly), with the era left to detect: no
// server/discover probe, tools/list, tools/call, and a sampling request
// that arrives on the stream and is answered with a POST.
func TestGoSDKServerOverHTTPSSE(t *testing.T) {
	srv := newSSEServer(t)
	h := &handler{sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("forty-two"), Model: "m"}, nil
	}}
	c, err := conduit.Connect(callCtx(t), &transport.SSE{URL: srv.URL}, conduit.Options{Handler: h})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, conduit.EraLegacy, c.Era())
	tools, err := c.ListTools(callCtx(t))
	require.NoError(t, err)
	require.Len(t, tools, 2)
	r, err := c.CallTool(callCtx(t), "first", nil)
	require.NoError(t, err)
	assert.Equal(t, "sse-first-ok", textOf(t, r))
	r, err = c.CallTool(callCtx(t), "ask", nil)
	require.NoError(t, err)
	assert.Equal(t, "model said forty-two", textOf(t, r))
	assert.Equal(t, 1, h.count())
	seen := srv.requests()
	assert.Equal(t, "GET", seen[0])
	for _, s := range seen[1:] {
		assert.Equal(t, "POST ?sessionid", s, "every message goes to the announced endpoint")
	}
}

// The server dropping the stream ends the client with KindTransport;
// nothing is left running (goleak in TestMain).
func TestHTTPSSEStreamDropped(t *testing.T) {
	srv := newSSEServer(t)
	c, err := conduit.Connect(callCtx(t), &transport.SSE{URL: srv.URL}, conduit.Options{})
	require.NoError(t, err)
	defer c.Close()
	srv.CloseClientConnections()
	<-c.Done()
	var ce *conduit.Error
	require.True(t, errors.As(c.Err(), &ce), "%v", c.Err())
	assert.Equal(t, conduit.KindTransport, ce.Kind, "%v", c.Err())
	_, err = c.CallTool(callCtx(t), "first", nil)
	require.Error(t, err)
}

// The documented fallback: a Streamable HTTP connection whose initialize
// gets a 4xx (the go-sdk SSE handler answers 400 to a POST without a
// session) moves to HTTP+SSE at the same URL when SSEFallback is set, and
// fails Connect with the server's answer when it is not.
func TestStreamableHTTPFallsBackToHTTPSSE(t *testing.T) {
	t.Run("allowed", func(t *testing.T) {
		srv := newSSEServer(t)
		c, err := conduit.Connect(callCtx(t), &transport.HTTP{URL: srv.URL, SSEFallback: true}, conduit.Options{})
		require.NoError(t, err)
		defer c.Close()
		r, err := c.CallTool(callCtx(t), "first", nil)
		require.NoError(t, err)
		assert.Equal(t, "sse-first-ok", textOf(t, r))
		seen := srv.requests()
		assert.Equal(t, []string{"POST", "POST", "GET", "POST ?sessionid"}, seen[:4],
			"the probe and initialize refused (400), then the stream, and initialize again at its endpoint")
	})
	t.Run("not allowed", func(t *testing.T) {
		srv := newSSEServer(t)
		_, err := conduit.Connect(callCtx(t), &transport.HTTP{URL: srv.URL}, conduit.Options{})
		var status *transport.HTTPStatusError
		require.True(t, errors.As(err, &status), "%v", err)
		assert.Equal(t, 400, status.Status)
		assert.Equal(t, []string{"POST", "POST"}, srv.requests())
	})
}

// With SSEFallback set, a Streamable HTTP server is used as ever: its
// initialize succeeds, so no SSE stream is tried; and a server that
// refuses initialize with a 4xx and has no SSE stream either fails Connect
// with that 4xx.
func TestSSEFallbackNotTaken(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "streamable", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "streamable-ok"}}}, nil, nil
	})
	var mu sync.Mutex
	var gets []string
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			mu.Lock()
			gets = append(gets, r.Header.Get("Mcp-Session-Id"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := conduit.Connect(callCtx(t), &transport.HTTP{URL: srv.URL, SSEFallback: true}, conduit.Options{Era: conduit.EraLegacy})
	require.NoError(t, err)
	r, err := c.CallTool(callCtx(t), "first", nil)
	require.NoError(t, err)
	assert.Equal(t, "streamable-ok", textOf(t, r))
	require.NoError(t, c.Close())
	mu.Lock()
	for _, sid := range gets {
		assert.NotEmpty(t, sid, "only the session's own standalone stream: no SSE fallback tried")
	}
	mu.Unlock()

	// 401 and 403 ask for credentials: no fallback, even where an SSE
	// stream would open.
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		sse := newSSEServer(t)
		var got []string
		var gmu sync.Mutex
		guarded := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			gmu.Lock()
			got = append(got, r.Method)
			gmu.Unlock()
			if r.Method == http.MethodPost && r.URL.RawQuery == "" {
				http.Error(w, "sign in", code)
				return
			}
			sse.Config.Handler.ServeHTTP(w, r)
		}))
		_, err := conduit.Connect(callCtx(t), &transport.HTTP{URL: guarded.URL, SSEFallback: true}, conduit.Options{Era: conduit.EraLegacy})
		var status *transport.HTTPStatusError
		require.True(t, errors.As(err, &status), "%v", err)
		assert.Equal(t, code, status.Status)
		gmu.Lock()
		assert.Equal(t, []string{"POST"}, got, "no GET")
		gmu.Unlock()
		guarded.Close()
	}

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusBadRequest)
	}))
	defer refusing.Close()
	_, err = conduit.Connect(callCtx(t), &transport.HTTP{URL: refusing.URL, SSEFallback: true}, conduit.Options{Era: conduit.EraLegacy})
	var status *transport.HTTPStatusError
	require.True(t, errors.As(err, &status), "%v", err)
	assert.Equal(t, 400, status.Status)
	assert.Equal(t, "nope", status.Body[:4])
}
