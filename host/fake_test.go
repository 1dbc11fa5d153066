package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// fakeTransport starts in-memory MCP servers whose connections a test can
// kill. Each Connect is one "process": it gets a pid (1000, 1001, ...).
type fakeTransport struct {
	mu       sync.Mutex
	fail     error    // Connect fails with this
	tools    []string // what tools/list answers
	connects int
	live     []*fakeServer
	// asks, when set, is a server request the server sends once the
	// client is initialized (roots/list, for example).
	asks string
	// answered receives the client's answers to asks.
	answered chan json.RawMessage
	// deaf servers stop answering requests once initialized; mute ones
	// answer nothing, not even initialize.
	deaf, mute bool
	// listDelay delays each answer to tools/list; lists counts them.
	listDelay time.Duration
	lists     int
	// listFails makes tools/list answer a JSON-RPC error.
	listFails bool
	// closeDelay is how long closing a client connection takes, as a
	// server slow to exit makes it.
	closeDelay time.Duration
	// alone, when set, names a tool whose calls fail by themselves in the
	// transport (aloneConn).
	alone string
	// notified are the notifications the servers received after
	// initialized, by method. On notifications/roots/list_changed a
	// server sends asks again, as a server that caches the roots does.
	notified []string
	// modern: the servers answer server/discover (2026-07-28) and
	// acknowledge subscriptions/listen; notify then tags the notification
	// with the newest server's listen id.
	modern bool
}

func (f *fakeTransport) notifications() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.notified)
}

type fakeServer struct {
	t      *fakeTransport
	conn   transport.Conn
	pid    int
	listen json.RawMessage // the id of its subscriptions/listen, under t.mu
	caps   string          // the capabilities its initialize declared
}

func (f *fakeTransport) Connect(ctx context.Context) (transport.Conn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.connects++
	if f.fail != nil {
		return nil, f.fail
	}
	client, server := transport.NewMemoryPair()
	s := &fakeServer{t: f, conn: server, pid: 999 + f.connects}
	f.live = append(f.live, s)
	go s.serve()
	var conn transport.Conn = client
	if f.alone != "" {
		conn = newAloneConn(client, f.alone)
	}
	return pidConn{Conn: conn, pid: s.pid, closeDelay: f.closeDelay}, nil
}

// pidConn is a connection that reports a process id.
type pidConn struct {
	transport.Conn
	pid        int
	closeDelay time.Duration
}

func (c pidConn) Close() error {
	time.Sleep(c.closeDelay)
	return c.Conn.Close()
}

func (c pidConn) Pid() int { return c.pid }

// kill ends the newest live server, as a crash would.
func (f *fakeTransport) kill() {
	f.mu.Lock()
	s := f.live[len(f.live)-1]
	f.live = f.live[:len(f.live)-1]
	f.mu.Unlock()
	_ = s.conn.Close()
}

// notify sends a notification from the newest live server.
func (f *fakeTransport) notify(method string) {
	f.mu.Lock()
	s := f.live[len(f.live)-1]
	listen := s.listen
	f.mu.Unlock()
	if listen != nil {
		_ = s.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"`+method+`","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(listen)+`}}}`))
		return
	}
	_ = s.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"`+method+`"}`))
}

func (f *fakeTransport) setTools(tools ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tools = tools
}

func (f *fakeTransport) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.connects
}

// serve answers initialize, tools/list, ping and tools/call: "echo"
// answers with the server's pid, "block" never answers.
func (s *fakeServer) serve() {
	defer s.conn.Close()
	defer func() { // it ended: no longer live
		s.t.mu.Lock()
		s.t.live = slices.DeleteFunc(s.t.live, func(l *fakeServer) bool { return l == s })
		s.t.mu.Unlock()
	}()
	for {
		msg, err := s.conn.Read(context.Background())
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name         string          `json:"name"`
				Capabilities json.RawMessage `json:"capabilities"`
				Level        string          `json:"level"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(msg.Data, &m) != nil {
			continue
		}
		s.t.mu.Lock()
		deaf, mute := s.t.deaf, s.t.mute
		s.t.mu.Unlock()
		if mute || deaf && m.ID != nil {
			continue
		}
		var result any
		switch m.Method {
		case "":
			if s.t.answered != nil {
				s.t.answered <- m.Result
			}
			continue
		case "server/discover":
			if !s.t.modern {
				continue // unanswered: a legacy server
			}
			result = map[string]any{"resultType": "complete", "supportedVersions": []string{"2026-07-28"}, "ttlMs": 0, "cacheScope": "private",
				"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "resources": map[string]any{}, "prompts": map[string]any{}},
				"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "fake", "version": "1"}}}
		case "subscriptions/listen":
			s.t.mu.Lock()
			s.listen = m.ID
			s.t.mu.Unlock()
			_ = s.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":`+string(m.ID)+`}}}`))
			continue
		case "initialize":
			s.caps = string(m.Params.Capabilities)
			result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{"listChanged": true}, "resources": map[string]any{}, "prompts": map[string]any{}}, "serverInfo": map[string]any{"name": "fake", "version": "1"}}
		case "notifications/initialized":
			if s.t.asks != "" {
				_ = s.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":"ask","method":"`+s.t.asks+`"}`))
			}
			continue
		case "tools/list":
			s.t.mu.Lock()
			delay := s.t.listDelay
			s.t.lists++
			s.t.mu.Unlock()
			time.Sleep(delay)
			s.t.mu.Lock()
			if s.t.listFails {
				s.t.mu.Unlock()
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32603, "message": "listing broke"}})
				_ = s.conn.Write(context.Background(), b)
				continue
			}
			tools := []map[string]any{}
			for _, name := range s.t.tools {
				tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
			}
			s.t.mu.Unlock()
			result = map[string]any{"tools": tools}
		case "tools/call":
			if m.Params.Name == "block" {
				continue
			}
			b, _ := json.Marshal(s.pid)
			if m.Params.Name == "caps" { // the pid, and what its initialize declared
				b = []byte(string(b) + " " + s.caps)
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(b)}}}
		case "notifications/roots/list_changed":
			s.t.mu.Lock()
			s.t.notified = append(s.t.notified, m.Method)
			s.t.mu.Unlock()
			if s.t.asks != "" {
				_ = s.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":"ask","method":"`+s.t.asks+`"}`))
			}
			continue
		case "ping":
			result = map[string]any{}
		case "logging/setLevel": // noted with the server's pid
			s.t.mu.Lock()
			s.t.notified = append(s.t.notified, fmt.Sprintf("%s %d %s", m.Method, s.pid, m.Params.Level))
			s.t.mu.Unlock()
			result = map[string]any{}
		case "resources/list":
			result = map[string]any{"resources": []any{map[string]any{"uri": "file:///a.txt", "name": "a"}}}
		case "prompts/list":
			result = map[string]any{"prompts": []any{map[string]any{"name": "greet"}}}
		default:
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		if s.conn.Write(context.Background(), b) != nil {
			return
		}
	}
}

// fakeHost starts a host whose servers are the given fake transports, all
// legacy, with a jitter of 0 (each wait is exactly the backoff).
func fakeHost(t *testing.T, cfg Config, fakes map[string]*fakeTransport, opts Options) *Host {
	t.Helper()
	cfg = legacy(cfg)
	for name, f := range fakes {
		if s, ok := cfg.Servers[name]; ok && f.modern {
			s.Conduit.Era = conduit.EraModern
			cfg.Servers[name] = s
		}
	}
	if opts.Jitter == nil {
		opts.Jitter = func() float64 { return 0.5 }
	}
	opts.Transport = func(name string, _ Server) (transport.Transport, error) {
		f := fakes[name]
		if f == nil {
			return nil, errors.New("no fake for " + name)
		}
		return f, nil
	}
	h, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// legacy pins every server of cfg to the legacy era, which the fakes speak
// (fakeHost pins a modern fake's to the modern era).
func legacy(cfg Config) Config {
	for name, s := range cfg.Servers {
		s.Conduit.Era = conduit.EraLegacy
		cfg.Servers[name] = s
	}
	return cfg
}

// stdio is a server configuration with a restart policy.
func stdio(p RestartPolicy) Server {
	return Server{Command: "fake", Conduit: Settings{Restart: p}}
}

// recorder collects a host's events, with their time since start.
type recorder struct {
	start  time.Time
	mu     sync.Mutex
	events []Event
	done   chan struct{}
}

func record(h *Host) *recorder {
	r := &recorder{start: time.Now(), done: make(chan struct{})}
	ch, _ := h.Subscribe()
	go func() {
		defer close(r.done)
		for ev := range ch {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
		}
	}()
	return r
}

// step is an event as tests compare it.
type step struct {
	At       time.Duration
	Server   string
	State    State
	Restarts int
	Attempt  int
	Retry    time.Duration // NextRetry - time of the event
	PID      int
}

func (r *recorder) steps() []step {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []step
	for _, ev := range r.events {
		s := step{At: ev.Time.Sub(r.start), Server: ev.Server, State: ev.State, Restarts: ev.Restarts, Attempt: ev.Attempt, PID: ev.PID}
		if !ev.NextRetry.IsZero() {
			s.Retry = ev.NextRetry.Sub(ev.Time)
		}
		out = append(out, s)
	}
	return out
}

// states are the states of server's events, in order.
func (r *recorder) states(server string) []State {
	var out []State
	for _, s := range r.steps() {
		if s.Server == server {
			out = append(out, s.State)
		}
	}
	return slices.Clip(out)
}

// aloneConn fails a tools/call of the tool named alone by itself, as an
// HTTP transport fails one POST (refused, reset, a body over the limit)
// while the connection goes on: the call gets a Message with Err, and the
// request never reaches the server.
type aloneConn struct {
	transport.Conn
	alone    string
	injected chan transport.Message
	pumped   chan transport.Message // the server's messages, read by pump
	pumpErr  chan error
}

func newAloneConn(c transport.Conn, alone string) *aloneConn {
	a := &aloneConn{Conn: c, alone: alone, injected: make(chan transport.Message, 8), pumped: make(chan transport.Message), pumpErr: make(chan error, 1)}
	go a.pump()
	return a
}

func (a *aloneConn) pump() {
	for {
		m, err := a.Conn.Read(context.Background())
		if err != nil {
			a.pumpErr <- err
			return
		}
		a.pumped <- m
	}
}

func (a *aloneConn) Read(ctx context.Context) (transport.Message, error) {
	select {
	case m := <-a.injected:
		return m, nil
	case m := <-a.pumped:
		return m, nil
	case err := <-a.pumpErr:
		a.pumpErr <- err
		return transport.Message{}, err
	case <-ctx.Done():
		return transport.Message{}, ctx.Err()
	}
}

func (a *aloneConn) Write(ctx context.Context, data []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(data, &m) == nil && m.Params.Name == a.alone {
		a.injected <- transport.Message{Related: string(m.ID), Err: errors.New("connection reset by peer")}
		return nil
	}
	return a.Conn.Write(ctx, data)
}
