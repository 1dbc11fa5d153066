package actors_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeServer is a scripted MCP server on the far side of an in-memory pair.
// Tests drive it step by step: send a frame, expect the next frame.
type fakeServer struct {
	t    *testing.T
	conn transport.Conn
	in   chan frame
	// Init is the initialize request the client sent.
	Init map[string]any
}

// frame is one message the client sent, decoded and as text.
type frame struct {
	m   map[string]any
	raw string
}

func newFakeServer(t *testing.T, conn transport.Conn) *fakeServer {
	s := &fakeServer{t: t, conn: conn, in: make(chan frame, 1024)}
	go func() {
		defer close(s.in)
		for {
			msg, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			var m map[string]any
			if err := json.Unmarshal(msg.Data, &m); err != nil {
				t.Errorf("client sent invalid JSON: %s", msg.Data)
				continue
			}
			s.in <- frame{m: m, raw: string(msg.Data)}
		}
	}()
	return s
}

// sendRaw writes text as is (it may be malformed on purpose).
func (s *fakeServer) sendRaw(text string) {
	s.t.Helper()
	require.NoError(s.t, s.conn.Write(context.Background(), []byte(text)))
}

func (s *fakeServer) send(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	require.NoError(s.t, err)
	s.sendRaw(string(b))
}

// request sends a server→client request.
func (s *fakeServer) request(id any, method string, params any) {
	s.t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	s.send(m)
}

func (s *fakeServer) notify(method string, params any) {
	s.t.Helper()
	s.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (s *fakeServer) reply(id any, result any) {
	s.t.Helper()
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// next returns the next frame the client sent; synctest reports a deadlock
// if none ever comes.
func (s *fakeServer) next() map[string]any {
	s.t.Helper()
	f, ok := <-s.in
	require.True(s.t, ok, "client closed the connection")
	return f.m
}

// nextRaw returns the next frame's text (and consumes it from next too).
func (s *fakeServer) nextRaw() string {
	s.t.Helper()
	f, ok := <-s.in
	require.True(s.t, ok, "client closed the connection")
	return f.raw
}

// expectResponse reads the next frame and checks it answers id.
func (s *fakeServer) expectResponse(id any) map[string]any {
	s.t.Helper()
	m := s.next()
	require.Equal(s.t, jsonNumber(id), m["id"], "frame: %v", m)
	return m
}

// expectError reads the next frame and checks it is error code for id
// (nil id: null).
func (s *fakeServer) expectError(id any, code int) map[string]any {
	s.t.Helper()
	m := s.next()
	require.Contains(s.t, m, "id", "frame: %v", m)
	require.Equal(s.t, jsonNumber(id), m["id"], "frame: %v", m)
	e, ok := m["error"].(map[string]any)
	require.True(s.t, ok, "not an error: %v", m)
	require.EqualValues(s.t, code, e["code"], "frame: %v", m)
	return e
}

func jsonNumber(id any) any {
	switch v := id.(type) {
	case int:
		return float64(v)
	}
	return id
}

// handshake answers initialize with version and consumes initialized.
func (s *fakeServer) handshake(version string) {
	s.t.Helper()
	s.refuseDiscover()
	init := s.next()
	require.Equal(s.t, "initialize", init["method"])
	s.Init = init
	s.reply(init["id"], map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
		"serverInfo":      map[string]any{"name": "fake", "version": "1.0"},
	})
	n := s.next()
	require.Equal(s.t, "notifications/initialized", n["method"])
}

// refuseDiscover answers the server/discover probe as many legacy servers
// do: method not found.
func (s *fakeServer) refuseDiscover() {
	s.t.Helper()
	probe := s.next()
	require.Equal(s.t, "server/discover", probe["method"])
	s.send(map[string]any{"jsonrpc": "2.0", "id": probe["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
}

// connect starts a client with opts over an in-memory pair and a fake
// server that completes the handshake at version.
func connect(t *testing.T, opts conduit.Options, version string) (*conduit.Client, *fakeServer) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	srv := newFakeServer(t, serverSide)
	type res struct {
		c   *conduit.Client
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
		ch <- res{c, err}
	}()
	srv.handshake(version)
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() {
		_ = r.c.Close()
		_ = serverSide.Close()
		for range srv.in {
		}
	})
	return r.c, srv
}

// callAsync runs a tool call in the background and returns its outcome.
// The call skips the outputSchema check: the scripted server answers only
// what each test scripts, and a tools/list after the result would wait.
func callAsync(c *conduit.Client, name string, opts ...conduit.CallOption) <-chan callResult {
	opts = append([]conduit.CallOption{conduit.WithUnvalidatedResult()}, opts...)
	ch := make(chan callResult, 1)
	go func() {
		r, err := c.CallTool(context.Background(), name, map[string]any{}, opts...)
		ch <- callResult{r, err}
	}()
	return ch
}

type callResult struct {
	res *conduit.CallToolResult
	err error
}

// handler is a configurable test handler implementing every interface.
type handler struct {
	mu       sync.Mutex
	sampling func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error)
	elicit   func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error)
	roots    func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error)
	modes    []string
	calls    int
	seen     []conduit.RequestContext
}

func (h *handler) record(rc conduit.RequestContext) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	h.seen = append(h.seen, rc)
}

func (h *handler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *handler) HandleSampling(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	h.record(r.RequestContext)
	if h.sampling != nil {
		return h.sampling(ctx, r)
	}
	return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "test"}, nil
}

func (h *handler) HandleElicitation(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	h.record(r.RequestContext)
	if h.elicit != nil {
		return h.elicit(ctx, r)
	}
	return &conduit.ElicitResult{Action: "decline"}, nil
}

func (h *handler) ElicitationModes() []string {
	if h.modes == nil {
		return []string{"form"}
	}
	return h.modes
}

func (h *handler) ListRoots(ctx context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	h.record(r.RequestContext)
	if h.roots != nil {
		return h.roots(ctx, r)
	}
	return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///srv/repo", Name: "repo"}}}, nil
}

// block waits for ctx and returns its error: a handler that honours ctx.
func block(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

var formParams = map[string]any{
	"message":         "Name?",
	"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
}

var samplingParams = map[string]any{
	"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hi"}}},
	"maxTokens": 100,
}

// eraCase is one era a runtime test runs in: how to reach a connected
// client, and how its server asks that client for input.
type eraCase struct {
	name string
	era  conduit.Era
	// connect starts a client with opts against a fake server of this era.
	connect func(t *testing.T, opts conduit.Options) (*conduit.Client, *fakeServer)
	// ask makes the server ask for one input (a legacy server request, or
	// a modern call answered input_required) and returns a function that
	// waits until the client has settled it: answered, refused or failed.
	ask func(t *testing.T, c *conduit.Client, srv *fakeServer, method string, params any) (settled func())
}

var eras = []eraCase{
	{
		name: "legacy", era: conduit.EraLegacy,
		connect: func(t *testing.T, opts conduit.Options) (*conduit.Client, *fakeServer) {
			return connect(t, opts, "2025-11-25")
		},
		ask: func(t *testing.T, _ *conduit.Client, srv *fakeServer, method string, params any) func() {
			srv.request("in", method, params)
			return func() { srv.expectResponse("in") }
		},
	},
	{
		name: "modern", era: conduit.EraModern,
		connect: connectModernFake,
		ask: func(t *testing.T, c *conduit.Client, srv *fakeServer, method string, params any) func() {
			d := callAsync(c, "x")
			m := srv.next()
			req := map[string]any{"method": method}
			if params != nil {
				req["params"] = params
			}
			srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"k": req}})
			return func() {
				for {
					select {
					case <-d:
						return
					case f := <-srv.in: // the retry with the answer
						srv.reply(f.m["id"], map[string]any{"resultType": "complete", "content": []any{}})
					}
				}
			}
		},
	},
}

// inBothEras runs test once per era, each in a synctest bubble, and checks
// that no goroutine outlives it.
func inBothEras(t *testing.T, test func(t *testing.T, e eraCase)) {
	for _, e := range eras {
		t.Run(e.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { test(t, e) })
			goleak.VerifyNone(t)
		})
	}
}

// closeWhileHeld closes c while something Close must wait for is held,
// then releases it; Close returns only after that, and without error.
func closeWhileHeld(t *testing.T, c *conduit.Client, release chan struct{}) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	synctest.Wait()
	close(release)
	require.NoError(t, <-closed)
}
