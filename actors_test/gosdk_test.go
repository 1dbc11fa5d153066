package actors_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// connectEverything connects to the everything-server, forced to the
// legacy era unless opts pins another.
func connectEverything(t testing.TB, opts conduit.Options) *conduit.Client {
	t.Helper()
	switch opts.Era {
	case "":
		opts.Era = conduit.EraLegacy
	case autoEra:
		opts.Era = ""
	}
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.Command{Path: bin, CloseTimeout: 2 * time.Second}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func textOf(t testing.TB, r *conduit.CallToolResult) string {
	t.Helper()
	require.NotNil(t, r)
	var parts []string
	for _, b := range r.Content {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestEverythingServerSampling(t *testing.T) {
	var got *conduit.SamplingRequest
	h := &handler{sampling: func(_ context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		got = r
		return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hello from conduit"), Model: "test"}, nil
	}}
	c := connectEverything(t, conduit.Options{Handler: h, ServerID: "everything"})
	assert.Equal(t, "2025-11-25", c.ProtocolVersion())
	r, err := c.CallTool(callCtx(t), "test_sampling", map[string]any{"prompt": "hi"})
	require.NoError(t, err)
	assert.Equal(t, "LLM response: hello from conduit", textOf(t, r))
	require.NotNil(t, got)
	assert.Equal(t, 100, got.Params.MaxTokens)
	assert.Equal(t, "hi", got.Params.Messages[0].Content.Blocks[0].Text)
	assert.Equal(t, "everything", got.ServerID)
	assert.False(t, got.RelatedRequestID.IsZero(), "tied to the tools/call in flight")
}

func TestEverythingServerElicitation(t *testing.T) {
	h := &handler{elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		assert.Equal(t, "form", r.Mode)
		assert.Equal(t, "Who are you?", r.Params.Message)
		return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
	}}
	c := connectEverything(t, conduit.Options{Handler: h})
	r, err := c.CallTool(callCtx(t), "test_elicitation", map[string]any{"message": "Who are you?"})
	require.NoError(t, err)
	assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", textOf(t, r))
}

func TestEverythingServerElicitationDefaults(t *testing.T) {
	h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		return &conduit.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}}
	c := connectEverything(t, conduit.Options{Handler: h})
	r, err := c.CallTool(callCtx(t), "test_elicitation_sep1034_defaults", nil)
	require.NoError(t, err)
	assert.Equal(t, "Elicitation result: action=accept, content=map[age:30 name:John Doe score:95.5 status:active verified:true]", textOf(t, r))
}

type logRecorder struct {
	handler
	mu   sync.Mutex
	logs []conduit.LoggingMessage
}

// waitFor waits until n log entries arrived and returns their data.
func (l *logRecorder) waitFor(t testing.TB, n int) []any {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.logs) == n
	}, 5*time.Second, 10*time.Millisecond)
	l.mu.Lock()
	defer l.mu.Unlock()
	var data []any
	for _, e := range l.logs {
		data = append(data, e.Data)
	}
	return data
}

func (l *logRecorder) HandleLog(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logs = append(l.logs, *e)
}

func TestEverythingServerLoggingAfterSetLevel(t *testing.T) {
	h := &logRecorder{}
	c := connectEverything(t, conduit.Options{Handler: h})
	require.NoError(t, c.SetLogLevel(callCtx(t), "info"))
	r, err := c.CallTool(callCtx(t), "test_tool_with_logging", nil)
	require.NoError(t, err)
	assert.Equal(t, "Tool with logging executed successfully", textOf(t, r))
	assert.Equal(t, []any{"Tool execution started", "Tool processing data", "Tool execution completed"}, h.waitFor(t, 3))
	for _, l := range h.logs {
		assert.Equal(t, "info", l.Level)
	}
}

func TestEverythingServerCancelsNestedSamplingWhenCallIsCancelled(t *testing.T) {
	started := make(chan struct{})
	handlerCtxDone := make(chan error, 1)
	h := &handler{sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		close(started)
		<-ctx.Done()
		handlerCtxDone <- ctx.Err()
		return nil, ctx.Err()
	}}
	outcomes := make(chan string, 4)
	c := connectEverything(t, conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { outcomes <- r.Outcome }})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "test_sampling", map[string]any{"prompt": "hi"})
		errc <- err
	}()
	<-started
	cancel()
	var ce *conduit.Error
	require.ErrorAs(t, <-errc, &ce)
	assert.Equal(t, conduit.KindCancelled, ce.Kind)
	select {
	case err := <-handlerCtxDone:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the server never cancelled its nested sampling request")
	}
	assert.Equal(t, "cancelled", <-outcomes)
}

// pipeConn is a transport.Conn over two pipes, newline-delimited, to run a
// go-sdk server in-process.
type pipeConn struct {
	r  *bufio.Scanner
	rc io.Closer
	w  io.WriteCloser
	mu sync.Mutex
}

func (p *pipeConn) Read(context.Context) (transport.Message, error) {
	if p.r.Scan() {
		return transport.Message{Data: append([]byte(nil), p.r.Bytes()...)}, nil
	}
	if err := p.r.Err(); err != nil {
		return transport.Message{}, err
	}
	return transport.Message{}, io.EOF
}

func (p *pipeConn) Write(_ context.Context, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(append(data, '\n'))
	return err
}

func (p *pipeConn) Close() error {
	_ = p.w.Close()
	return p.rc.Close()
}

// inProcessServer runs server on pipes and returns the client's transport.
func inProcessServer(t *testing.T, server *mcp.Server) transport.Transport {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = server.Run(ctx, &mcp.IOTransport{Reader: c2sR, Writer: s2cW})
	}()
	t.Cleanup(func() {
		cancel()
		_ = c2sW.Close()
		_ = s2cR.Close()
		<-done
	})
	sc := bufio.NewScanner(s2cR)
	sc.Buffer(nil, 4<<20)
	return transport.NewMemoryTransport(&pipeConn{r: sc, rc: s2cR, w: c2sW})
}

func TestGoSDKServerInProcessListsRoots(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "roots-server", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "show_roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 roots in the legacy era are what is tested: deprecated in 2026-07-28, not gone
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		b, _ := json.Marshal(res.Roots)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	h := &handler{roots: func(_ context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		assert.Equal(t, "srv-roots", r.ServerID)
		return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///srv/repo", Name: "repo"}}}, nil
	}}
	c, err := conduit.Connect(callCtx(t), inProcessServer(t, server), conduit.Options{Handler: h, ServerID: "srv-roots", Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	r, err := c.CallTool(callCtx(t), "show_roots", nil)
	require.NoError(t, err)
	assert.JSONEq(t, `[{"uri":"file:///srv/repo","name":"repo"}]`, textOf(t, r))
}

// TestGoSDKServerHearsRootsChanged: a go-sdk server's
// RootsListChangedHandler runs on Client.RootsChanged, and the roots/list
// it sends then gets the handler's new roots.
func TestGoSDKServerHearsRootsChanged(t *testing.T) {
	listed := make(chan string, 1)
	server := mcp.NewServer(&mcp.Implementation{Name: "roots-server", Version: "1"}, &mcp.ServerOptions{
		//lint:ignore SA1019 roots in the legacy era are what is tested: deprecated in 2026-07-28, not gone
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			//lint:ignore SA1019 roots in the legacy era are what is tested: deprecated in 2026-07-28, not gone
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				listed <- err.Error()
				return
			}
			b, _ := json.Marshal(res.Roots)
			listed <- string(b)
		},
	})
	var root atomic.Value
	root.Store("file:///srv/a")
	h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: root.Load().(string)}}}, nil
	}}
	c, err := conduit.Connect(callCtx(t), inProcessServer(t, server), conduit.Options{Handler: h, Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	root.Store("file:///srv/b")
	require.NoError(t, c.RootsChanged(callCtx(t)))
	select {
	case got := <-listed:
		assert.JSONEq(t, `[{"uri":"file:///srv/b"}]`, got)
	case <-callCtx(t).Done():
		t.Fatal("the go-sdk server never asked roots/list again")
	}
}

// The everything-server's test_elicitation_sep1330_enums cannot be used:
// go-sdk v1.8.0 refuses its own titledMulti schema before sending it
// ("items must specify enum for untitled enums"). The same schema goes
// through the fake server in TestEverySep1330EnumShapePassesTheGuards.

func TestEverythingServerAnswerOutsideTheSchemaIsNotSent(t *testing.T) {
	h := &handler{elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"age": "old"}}, nil
	}}
	var audit []conduit.AuditRecord
	var mu sync.Mutex
	c := connectEverything(t, conduit.Options{Handler: h, Audit: func(a conduit.AuditRecord) { mu.Lock(); audit = append(audit, a); mu.Unlock() }})
	r, err := c.CallTool(callCtx(t), "test_elicitation_sep1034_defaults", nil)
	require.NoError(t, err)
	assert.True(t, r.IsError)
	assert.Contains(t, textOf(t, r), "age")
	assert.NotContains(t, textOf(t, r), "old", "the refused value is not echoed to the server")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, audit, 1)
	assert.Equal(t, "refused", audit[0].Outcome)
	assert.Equal(t, messages.CodeInternalError, *audit[0].Code)
}
