package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sent records the session exchange messages a test member sends.
type sent struct {
	mu   sync.Mutex
	msgs []string // "TYPE to ADDRESS seq N: BODY"
	got  chan struct{}
}

func (r *sent) add(pid *actor.PID, g *pcluster.GrainRequest) {
	m, body, err := unframe(g.MessageData)
	if err != nil {
		panic(err)
	}
	line := fmt.Sprintf("%s to %s seq %d", strings.TrimPrefix(g.MessageTypeName, "conduit.cluster.v1."), pid.Address, m.Seq)
	if m.Status != 0 {
		line += fmt.Sprintf(" status %d %s", m.Status, m.Header.Get("Content-Type"))
	}
	if m.Error != "" {
		line += " error " + m.Error
	}
	if len(body) > 0 {
		line += ": " + string(body)
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, line)
	r.mu.Unlock()
	if r.got != nil {
		r.got <- struct{}{}
	}
}

func (r *sent) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// tunnelServers is a member's Servers without a running system, whose
// topology has members; what it sends is recorded.
func tunnelServers(members ...string) (*Servers, *sent) {
	m := &Member{logger: slog.New(slog.DiscardHandler), system: actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))} // not started: its address is "nonhost"
	m.tunnels = newTunnels(m)
	rec := &sent{}
	m.tunnels.send = rec.add
	s := &Servers{m: m, members: map[string]string{}, lost: map[string]bool{}, inflight: map[string]map[*pending]struct{}{},
		topology: make(chan struct{}), draining: map[string]time.Time{}}
	for _, a := range members {
		s.members[a] = "id-" + a
	}
	m.servers.Store(s)
	return s, rec
}

// An exchange's message is its JSON, a newline, then the MCP bytes as they
// are (newlines and all); a message that is not JSON is an error.
func TestClusterSessionFrames(t *testing.T) {
	g := frame(typeSessionChunk, exchangeMsg{ID: "x", Seq: 3}, []byte("event: message\ndata: {}\n\n"))
	assert.Equal(t, "conduit.cluster.v1.SessionChunk", g.MessageTypeName)
	assert.Equal(t, "{\"id\":\"x\",\"seq\":3}\nevent: message\ndata: {}\n\n", string(g.MessageData))
	m, body, err := unframe(g.MessageData)
	require.NoError(t, err)
	assert.Equal(t, exchangeMsg{ID: "x", Seq: 3}, m)
	assert.Equal(t, "event: message\ndata: {}\n\n", string(body))
	_, _, err = unframe([]byte("garbage\n{}"))
	assert.Error(t, err)
}

// A session whose member is not in the topology (gone, or known lost) is
// unknown, 404, and counted; a body over MaxTunnelBody is 413; past
// MaxTunnels exchanges in flight through the member, 503, counted. Nothing
// is sent to any member.
func TestClusterSessionTunnelRefusals(t *testing.T) {
	s, rec := tunnelServers("127.0.0.1:7002", "127.0.0.1:7003")
	s.lost["127.0.0.1:7003"] = true
	post := func(member string, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.Tunnel(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)), member)
		return w
	}
	w := post("127.0.0.1:7009", `{}`)
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.Equal(t, "session not found: the cluster member 127.0.0.1:7009 that held it is not in the cluster\n", w.Body.String())
	assert.Equal(t, http.StatusNotFound, post("127.0.0.1:7003", `{}`).Code, "a member known lost")
	w = post("127.0.0.1:7002", strings.Repeat("x", MaxTunnelBody+1))
	assert.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	assert.Equal(t, fmt.Sprintf("request body exceeds %d bytes\n", MaxTunnelBody), w.Body.String())
	for i := range MaxTunnels {
		s.m.tunnels.out[fmt.Sprint(i)] = &exchange{}
	}
	w = post("127.0.0.1:7002", `{}`)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "Service unavailable: 256 session requests in flight through this member to the others, its limit\n", w.Body.String())
	st := s.m.Tunnels()
	assert.Equal(t, TunnelStats{Open: MaxTunnels, Gone: 2, Refused: 1}, st)
	assert.Empty(t, rec.all())
	assert.Empty(t, s.inflight["127.0.0.1:7002"], "no exchange left tracked")
}

// The holder's writer sends the head at the first write or flush (the
// hop-by-hop headers left out), a chunk per flush and per 32 KiB, then
// the end, numbered in order.
func TestClusterSessionStreamWriter(t *testing.T) {
	rec := &sent{}
	w := &streamWriter{send: func(g *pcluster.GrainRequest) { rec.add(actor.NewPID("r:1", streamsName), g) }, id: "x", header: http.Header{}}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Connection", "keep-alive")
	_, _ = w.Write([]byte("event: message\n"))
	_, _ = w.Write([]byte("data: 1\n\n"))
	w.Flush()
	w.Flush() // nothing new
	_, _ = w.Write([]byte(strings.Repeat("y", tunnelChunk+1)))
	w.end("")
	w.end("") // once
	msgs := rec.all()
	require.Len(t, msgs, 5)
	assert.Equal(t, []string{
		"SessionHead to r:1 seq 0 status 200 text/event-stream",
		"SessionChunk to r:1 seq 1: event: message\ndata: 1\n\n",
		"SessionChunk to r:1 seq 2: " + strings.Repeat("y", tunnelChunk),
		"SessionChunk to r:1 seq 3: y",
		"SessionEnd to r:1 seq 4",
	}, msgs)
	_, err := w.Write([]byte("late"))
	assert.ErrorIs(t, err, errClientGone)
}

// The holder serves an exchange with the gateway's session handler,
// streaming its answer back; a SessionCancel (its client went) or the loss
// of the member that received it cancels the handler's request; past
// MaxTunnels exchanges served at once, 503, counted.
func TestClusterSessionServe(t *testing.T) {
	const receiver = "127.0.0.1:7001"
	s, rec := tunnelServers(receiver)
	tn := s.m.tunnels
	causes := make(chan error, 2)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "sid", r.Header.Get("Mcp-Session-Id"))
		assert.Equal(t, "gw.example:8081", r.Host)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "data: %s\n\n", r.Method)
		http.NewResponseController(w).Flush()
		if r.Method == http.MethodGet {
			<-r.Context().Done()
			causes <- context.Cause(r.Context())
		}
	})
	s.ServeSessions(h)
	req := exchangeMsg{ID: "a", ReplyTo: receiver, Method: http.MethodPost, Host: "gw.example:8081", Header: http.Header{"Mcp-Session-Id": {"sid"}}}
	tn.serve(req, []byte(`{}`))
	assert.Equal(t, []string{
		"SessionHead to 127.0.0.1:7001 seq 0 status 200 text/event-stream",
		"SessionChunk to 127.0.0.1:7001 seq 1: data: POST\n\n",
		"SessionEnd to 127.0.0.1:7001 seq 2",
	}, rec.all())

	// Cancelled by its client.
	rec.msgs = nil
	rec.got = make(chan struct{}, 16)
	get := req
	get.ID, get.Method = "b", http.MethodGet
	done := make(chan struct{})
	go func() { defer close(done); tn.serve(get, nil) }()
	<-rec.got
	<-rec.got // head and chunk: the handler waits
	tn.cancel("b")
	assert.ErrorIs(t, <-causes, errClientGone)
	<-done

	// Its receiver lost.
	get.ID = "c"
	done = make(chan struct{})
	go func() { defer close(done); tn.serve(get, nil) }()
	<-rec.got
	<-rec.got
	<-rec.got // the end of b
	assert.Equal(t, int64(1), s.m.Tunnels().Serving)
	s.onLost(receiver, "its connection dropped")
	assert.ErrorIs(t, <-causes, errReceiverLost)
	<-done
	assert.Equal(t, int64(0), s.m.Tunnels().Serving)

	// Over the bound.
	delete(s.lost, receiver)
	rec.msgs = nil
	for i := range MaxTunnels {
		tn.in[fmt.Sprint(i)] = func(error) {}
	}
	tn.serve(exchangeMsg{ID: "d", ReplyTo: receiver, Method: http.MethodPost}, []byte(`{}`))
	assert.Equal(t, []string{
		"SessionHead to 127.0.0.1:7001 seq 0 status 503 text/plain; charset=utf-8",
		"SessionChunk to 127.0.0.1:7001 seq 1: Service unavailable: 256 session requests from the other members in flight on member " + "nonhost" + ", its limit\n",
		"SessionEnd to 127.0.0.1:7001 seq 2",
	}, rec.all())
	assert.Equal(t, int64(1), s.m.Tunnels().Refused)
}

// A holder lost with an exchange in flight: a request's client gets a
// JSON-RPC error naming it, on the SSE stream that began or as the POST's
// JSON answer; anything else 502, or the end of its stream.
func TestClusterSessionFailLost(t *testing.T) {
	const why = "cluster member 127.0.0.1:7002 (x) holding the downstream session was lost with the request in flight: its connection dropped"
	const want = `{"error":{"code":-32603,"message":"` + why + `"},"id":7,"jsonrpc":"2.0"}`
	call := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`)

	w := httptest.NewRecorder()
	failLost(w, nil, call, why)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.Equal(t, want, w.Body.String())

	w = httptest.NewRecorder()
	w.WriteHeader(http.StatusOK)
	failLost(w, http.Header{"Content-Type": {"text/event-stream"}}, call, why)
	assert.Equal(t, "event: message\ndata: "+want+"\n\n", w.Body.String())

	w = httptest.NewRecorder()
	failLost(w, nil, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), why)
	assert.Equal(t, http.StatusBadGateway, w.Code)
	assert.Equal(t, why+"\n", w.Body.String())

	w = httptest.NewRecorder()
	w.WriteHeader(http.StatusOK)
	failLost(w, http.Header{"Content-Type": {"text/event-stream"}}, nil, why) // a GET stream
	assert.Empty(t, w.Body.String())
}

// An exchange whose client reads too slowly overflows once its queue is
// full: its handler then cuts it.
func TestClusterSessionDeliverOverflows(t *testing.T) {
	s, _ := tunnelServers()
	tn := s.m.tunnels
	ex := &exchange{ch: make(chan framed, tunnelQueue), overflow: make(chan struct{})}
	tn.out["x"] = ex
	for range tunnelQueue {
		tn.deliver(framed{typeSessionChunk, exchangeMsg{ID: "x"}, nil})
	}
	select {
	case <-ex.overflow:
		t.Fatal("overflowed early")
	default:
	}
	tn.deliver(framed{typeSessionChunk, exchangeMsg{ID: "x"}, nil})
	tn.deliver(framed{typeSessionChunk, exchangeMsg{ID: "x"}, nil}) // closed once
	<-ex.overflow
	tn.deliver(framed{typeSessionChunk, exchangeMsg{ID: "gone"}, nil}) // an ended exchange's: dropped
}

// The receiving member streams the holder's answer into the client's
// response as it comes; the client gone sends SessionCancel; the holder
// lost ends it at once with a JSON-RPC error naming it; a client reading
// too slowly (the queue full) or an answer out of order cuts it. Each is
// counted.
func TestClusterSessionTunnelStreams(t *testing.T) {
	const holder = "127.0.0.1:7002"
	tunnelCtx := context.Background()
	s, rec := tunnelServers(holder)
	rec.got = make(chan struct{}, tunnelQueue+8)
	tn := s.m.tunnels
	// tunnel runs one exchange and returns what the client got, once the
	// request went out and answer ran.
	var tunnelTo func(w http.ResponseWriter, answer func(id string))
	tunnel := func(ctx context.Context, answer func(id string)) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		tunnelCtx = ctx
		tunnelTo(w, answer)
		return w
	}
	tunnelTo = func(w http.ResponseWriter, answer func(id string)) {
		rec.msgs = nil
		r := httptest.NewRequestWithContext(tunnelCtx, http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":4,"method":"tools/call"}`))
		r.Header.Set("Mcp-Session-Id", "sid")
		r.Header.Set("Authorization", "Bearer secret")
		done := make(chan struct{})
		go func() { defer close(done); s.Tunnel(w, r, holder) }()
		<-rec.got
		tn.mu.Lock()
		var id string
		for k := range tn.out {
			id = k
		}
		tn.mu.Unlock()
		answer(id)
		<-done
	}
	msg := func(typeName, id string, seq int64, status int, body string) framed {
		m := exchangeMsg{ID: id, Seq: seq, Status: status}
		if status != 0 {
			m.Header = http.Header{"Content-Type": {"text/event-stream"}}
		}
		return framed{typeName, m, []byte(body)}
	}

	w := tunnel(context.Background(), func(id string) {
		tn.deliver(msg(typeSessionHead, id, 0, 200, ""))
		tn.deliver(msg(typeSessionChunk, id, 1, 0, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n"))
		tn.deliver(msg(typeSessionEnd, id, 2, 0, ""))
	})
	assert.Equal(t, 200, w.Code)
	assert.Equal(t, "text/event-stream", w.Header().Get("Content-Type"))
	assert.Equal(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}\n\n", w.Body.String())
	require.Len(t, rec.all(), 1)
	assert.Equal(t, `SessionRequest to 127.0.0.1:7002 seq 0: {"jsonrpc":"2.0","id":4,"method":"tools/call"}`, rec.all()[0])
	tn.send = func(pid *actor.PID, g *pcluster.GrainRequest) { // the request's headers: no credentials
		m, _, _ := unframe(g.MessageData)
		if g.MessageTypeName == typeSessionRequest {
			assert.Equal(t, "sid", m.Header.Get("Mcp-Session-Id"))
			assert.Empty(t, m.Header.Get("Authorization"))
			assert.Equal(t, "nonhost", m.ReplyTo)
		}
		rec.add(pid, g)
	}

	// The client goes.
	ctx, cancel := context.WithCancel(context.Background())
	tunnel(ctx, func(string) { cancel() })
	<-rec.got
	assert.Equal(t, "SessionCancel to 127.0.0.1:7002 seq 0", rec.all()[1])

	// The holder is lost after the head.
	w = tunnel(context.Background(), func(id string) {
		tn.deliver(msg(typeSessionHead, id, 0, 200, ""))
		s.onLost(holder, "its connection dropped")
	})
	assert.Equal(t, "event: message\ndata: {\"error\":{\"code\":-32603,\"message\":\"cluster member 127.0.0.1:7002 (id-127.0.0.1:7002) holding the downstream session was lost with the request in flight: its connection dropped\"},\"id\":4,\"jsonrpc\":\"2.0\"}\n\n", w.Body.String())
	delete(s.lost, holder)

	// Out of order.
	w = tunnel(context.Background(), func(id string) { tn.deliver(msg(typeSessionChunk, id, 1, 0, "x")) })
	<-rec.got
	assert.Equal(t, "SessionCancel to 127.0.0.1:7002 seq 0", rec.all()[1])
	assert.Empty(t, w.Body.String())

	// Overflow: the client's writes block while the answer comes.
	blocked := &slowWriter{ResponseRecorder: httptest.NewRecorder(), release: make(chan struct{}), in: make(chan struct{}, 1)}
	tunnelTo(blocked, func(id string) {
		tn.deliver(msg(typeSessionHead, id, 0, 200, ""))
		tn.deliver(msg(typeSessionChunk, id, 1, 0, "x"))
		<-blocked.in
		for i := range tunnelQueue + 1 {
			tn.deliver(msg(typeSessionChunk, id, int64(2+i), 0, "x"))
		}
		close(blocked.release)
	})
	<-rec.got
	assert.Equal(t, "SessionCancel to 127.0.0.1:7002 seq 0", rec.all()[1])
	assert.Equal(t, TunnelStats{Started: 5, Completed: 1, Cancelled: 1, Lost: 1, Overflowed: 1}, s.m.Tunnels())
}

// slowWriter blocks each write after the first until release is closed.
type slowWriter struct {
	*httptest.ResponseRecorder
	release chan struct{}
	in      chan struct{}
	writes  int
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.writes++
	select {
	case w.in <- struct{}{}:
	default:
	}
	<-w.release
	return w.ResponseRecorder.Write(p)
}
