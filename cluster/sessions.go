package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// A legacy downstream session (Mcp-Session-Id) lives in the go-sdk handler
// of the member that created it: its id names that member (the member's
// remote address, base64url, a dot, then the go-sdk's random id), and a
// request of it that another member receives is handed to the holder as an
// HTTP exchange carried in explicit messages (docs/decisions.md #70):
//
//	receiving member                          holding member
//	SessionRequest {id, replyTo, method, header} + body  →  its session handler
//	                      ← SessionHead {id, seq, status, header}
//	                      ← SessionChunk {id, seq} + bytes   (each flush)
//	                      ← SessionEnd {id, seq, error}
//	SessionCancel {id}  →  (the downstream client went)
//
// Each message is a cluster.GrainRequest sent to the other member's
// streams actor (streamsName); its MessageData is the message's JSON, a
// newline, then the MCP bytes as they are (the request's body, a chunk of
// the answer). The answer streams back chunk by chunk as the holder's
// handler flushes it (an SSE stream: the results, server→client requests,
// notifications).
const (
	typeSessionRequest = "conduit.cluster.v1.SessionRequest"
	typeSessionCancel  = "conduit.cluster.v1.SessionCancel"
	typeSessionHead    = "conduit.cluster.v1.SessionHead"
	typeSessionChunk   = "conduit.cluster.v1.SessionChunk"
	typeSessionEnd     = "conduit.cluster.v1.SessionEnd"
)

// streamsName is the name of each member's actor that receives the
// session exchanges' messages: the requests to serve here, and the answers
// of those this member handed to others.
const streamsName = "conduit-sessions"

// Bounds of the tunnelled exchanges.
const (
	// MaxTunnels bounds the exchanges in flight through one member to the
	// others, and those the others hand to it, each: past it one is
	// refused 503 and counted (TunnelStats.Refused).
	MaxTunnels = 256
	// MaxTunnelBody bounds a tunnelled request's body, as the gateway's
	// session handler bounds it (the go-sdk's default, 4 MiB): past it,
	// 413.
	MaxTunnelBody = 4 << 20
	// tunnelQueue is how many messages of an exchange's answer wait for a
	// slow downstream client: past it the exchange is cut (the holder's
	// side cancelled, counted in TunnelStats.Overflowed).
	tunnelQueue = 256
	// tunnelChunk is the most bytes one SessionChunk carries.
	tunnelChunk = 32 << 10
)

// exchangeMsg is the JSON part of a session exchange's messages.
type exchangeMsg struct {
	ID      string      `json:"id"`
	Seq     int64       `json:"seq,omitempty"`
	ReplyTo string      `json:"replyTo,omitempty"` // SessionRequest: the receiving member's address
	Method  string      `json:"method,omitempty"`  // SessionRequest
	Host    string      `json:"host,omitempty"`    // SessionRequest: the Host it was sent to
	Header  http.Header `json:"header,omitempty"`  // SessionRequest, SessionHead
	Status  int         `json:"status,omitempty"`  // SessionHead
	Error   string      `json:"error,omitempty"`   // SessionEnd: the exchange failed on the holder
}

func frame(typeName string, m exchangeMsg, body []byte) *pcluster.GrainRequest {
	head, _ := json.Marshal(m)
	data := make([]byte, 0, len(head)+1+len(body))
	data = append(append(append(data, head...), '\n'), body...)
	return &pcluster.GrainRequest{MessageTypeName: typeName, MessageData: data}
}

func unframe(data []byte) (exchangeMsg, []byte, error) {
	var m exchangeMsg
	head, body, _ := bytes.Cut(data, []byte{'\n'})
	err := json.Unmarshal(head, &m)
	return m, body, err
}

// TunnelStats count the legacy session exchanges that crossed members.
type TunnelStats struct {
	// Open and Serving are the exchanges in flight now through this
	// member (to the holders) and on it (for the others).
	Open, Serving int64
	// Started, Completed: exchanges this member handed to a holder, and
	// those that ended with the holder's answer.
	Started, Completed int64
	// Lost: the holder was lost with the exchange in flight (its answer
	// ended with an error naming it). Cancelled: the downstream client
	// went first (the holder's side cancelled). Overflowed: the client
	// read too slowly (tunnelQueue). Gone: a request for a session whose
	// member is not in the cluster (404).
	Lost, Cancelled, Overflowed, Gone int64
	// Refused: over MaxTunnels, either side (503).
	Refused int64
}

// tunnels are a member's session exchanges.
type tunnels struct {
	m       *Member
	handler atomic.Pointer[http.Handler] // the gateway's session handler
	// send sends one message to another member's actor (the member's
	// system; tests replace it).
	send func(*actor.PID, *pcluster.GrainRequest)

	mu  sync.Mutex
	out map[string]*exchange               // through this member, by id
	in  map[string]context.CancelCauseFunc // served here, by id

	started, completed, lost, cancelled, overflowed, gone, refused atomic.Int64
}

// exchange is one exchange through this member, while it runs: the
// holder's messages wait in ch for the HTTP handler that writes them.
type exchange struct {
	ch       chan framed
	overflow chan struct{} // closed once ch overflowed
	once     sync.Once
}

type framed struct {
	typeName string
	msg      exchangeMsg
	body     []byte
}

func newTunnels(m *Member) *tunnels {
	return &tunnels{m: m, out: map[string]*exchange{}, in: map[string]context.CancelCauseFunc{},
		send: func(pid *actor.PID, msg *pcluster.GrainRequest) { m.system.Root.Send(pid, msg) }}
}

// Tunnels are the counters of the legacy session exchanges through and on
// this member.
func (m *Member) Tunnels() TunnelStats {
	t := m.tunnels
	t.mu.Lock()
	open, serving := len(t.out), len(t.in)
	t.mu.Unlock()
	return TunnelStats{Open: int64(open), Serving: int64(serving), Started: t.started.Load(), Completed: t.completed.Load(),
		Lost: t.lost.Load(), Cancelled: t.cancelled.Load(), Overflowed: t.overflowed.Load(), Gone: t.gone.Load(), Refused: t.refused.Load()}
}

// streamsActor receives the exchanges' messages. It never blocks: a
// request is served in a goroutine of its own; an answer's message is
// queued for its exchange's handler.
type streamsActor struct{ t *tunnels }

func (a *streamsActor) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(*pcluster.GrainRequest)
	if !ok {
		return
	}
	m, body, err := unframe(msg.MessageData)
	if err != nil {
		a.t.m.logger.Warn("cluster: an undecodable session exchange message; dropped", "type", msg.MessageTypeName, "err", err)
		return
	}
	switch msg.MessageTypeName {
	case typeSessionRequest:
		go a.t.serve(m, body)
	case typeSessionCancel:
		a.t.cancel(m.ID)
	case typeSessionHead, typeSessionChunk, typeSessionEnd:
		a.t.deliver(framed{msg.MessageTypeName, m, body})
	}
}

// cancel ends the exchange id served here: its downstream client went.
func (t *tunnels) cancel(id string) {
	t.mu.Lock()
	cancel := t.in[id]
	t.mu.Unlock()
	if cancel != nil {
		cancel(errClientGone)
	}
}

// deliver queues f for its exchange's handler; past tunnelQueue the
// exchange overflows.
func (t *tunnels) deliver(f framed) {
	t.mu.Lock()
	ex := t.out[f.msg.ID]
	t.mu.Unlock()
	if ex == nil {
		return // its exchange ended (its client went, or it overflowed)
	}
	select {
	case ex.ch <- f:
	default:
		ex.once.Do(func() { close(ex.overflow) })
	}
}

var (
	errClientGone   = errors.New("the downstream client of the tunnelled exchange went")
	errReceiverLost = errors.New("the cluster member that received the exchange was lost")
)

// NewSessionID is the id of a new legacy session held by this member
// (gateway.SessionMembers): it names this member.
func (s *Servers) NewSessionID() string {
	return base64.RawURLEncoding.EncodeToString([]byte(s.m.Address())) + "." + rand.Text()
}

// SessionHolder is the member a session id names, "" for this member or
// an id that names none (gateway.SessionMembers).
func (s *Servers) SessionHolder(id string) string {
	prefix, _, ok := strings.Cut(id, ".")
	if !ok {
		return ""
	}
	addr, err := base64.RawURLEncoding.DecodeString(prefix)
	if err != nil || string(addr) == s.m.Address() {
		return ""
	}
	return string(addr)
}

// ServeSessions sets the gateway's session handler, which serves the
// exchanges the other members hand to this one (gateway.SessionMembers).
func (s *Servers) ServeSessions(h http.Handler) { s.m.tunnels.handler.Store(&h) }

// hop-by-hop headers, and the credentials the receiving member checked:
// not carried.
var uncarried = []string{"Authorization", "Cookie", "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length"}

func carried(h http.Header) http.Header {
	out := h.Clone()
	for _, k := range uncarried {
		out.Del(k)
	}
	return out
}

// track registers an exchange with member as in flight to it: lost gets
// the member once it is lost (Servers.onLost). It reports false when the
// member is not in the topology, or known lost.
func (s *Servers) track(member string) (*pending, func(), bool) {
	p := &pending{lost: make(chan lostMember, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, known := s.members[member]; !known || s.lost[member] {
		return nil, nil, false
	}
	if s.inflight[member] == nil {
		s.inflight[member] = map[*pending]struct{}{}
	}
	s.inflight[member][p] = struct{}{}
	return p, func() {
		s.mu.Lock()
		delete(s.inflight[member], p)
		s.mu.Unlock()
	}, true
}

// Tunnel hands r, a legacy request of a session that member holds, to
// that member, and streams its answer into w (gateway.SessionMembers). A
// member not in the cluster (lost, or gone) answers 404, as for an unknown
// session: the client starts a new one. The holder lost meanwhile ends the
// answer at once with an error naming it; r's client gone cancels the
// exchange there.
func (s *Servers) Tunnel(w http.ResponseWriter, r *http.Request, member string) {
	t := s.m.tunnels
	p, untrack, ok := s.track(member)
	if !ok {
		t.gone.Add(1)
		http.Error(w, fmt.Sprintf("session not found: the cluster member %s that held it is not in the cluster", member), http.StatusNotFound)
		return
	}
	defer untrack()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxTunnelBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	ex := &exchange{ch: make(chan framed, tunnelQueue), overflow: make(chan struct{})}
	t.mu.Lock()
	if len(t.out) >= MaxTunnels {
		t.mu.Unlock()
		t.refused.Add(1)
		http.Error(w, fmt.Sprintf("Service unavailable: %d session requests in flight through this member to the others, its limit", MaxTunnels), http.StatusServiceUnavailable)
		return
	}
	t.out[id] = ex
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.out, id)
		t.mu.Unlock()
	}()
	t.started.Add(1)
	to := actor.NewPID(member, streamsName)
	t.send(to, frame(typeSessionRequest, exchangeMsg{ID: id, ReplyTo: s.m.Address(), Method: r.Method, Host: r.Host, Header: carried(r.Header)}, body))
	cancelThere := func() { t.send(to, frame(typeSessionCancel, exchangeMsg{ID: id}, nil)) }
	rc := http.NewResponseController(w)
	var head http.Header // the holder's, once it came
	var next int64
	// take hands on one of the holder's messages; it reports the exchange
	// over.
	take := func(f framed) bool {
		if f.msg.Seq != next {
			// The remote delivers in order; a gap is a bug, said rather
			// than streamed on.
			s.m.logger.Error("cluster: a session exchange's answer came out of order; cut", "member", member, "want", next, "got", f.msg.Seq)
			cancelThere()
			return true
		}
		next++
		switch f.typeName {
		case typeSessionHead:
			head = f.msg.Header
			for k, v := range head {
				w.Header()[k] = v
			}
			w.WriteHeader(f.msg.Status)
		case typeSessionChunk:
			_, _ = w.Write(f.body)
			_ = rc.Flush()
		case typeSessionEnd:
			t.completed.Add(1)
			if f.msg.Error != "" && head == nil {
				http.Error(w, f.msg.Error, http.StatusBadGateway)
			}
			return true
		}
		return false
	}
	for {
		select {
		case f := <-ex.ch:
			if take(f) {
				return
			}
		case <-ex.overflow:
			t.overflowed.Add(1)
			s.m.logger.Warn("cluster: a session exchange's downstream client read too slowly; cut", "member", member, "queued", tunnelQueue, "total", t.overflowed.Load())
			cancelThere()
			return
		case lm := <-p.lost:
			// What the holder sent before it was lost goes first (select
			// picks at random among ready cases): its head, so that the
			// error goes on the stream it began, or its whole answer.
			for drained := false; !drained; {
				select {
				case f := <-ex.ch:
					if take(f) {
						return
					}
				default:
					drained = true
				}
			}
			t.lost.Add(1)
			failLost(w, head, body, fmt.Sprintf("cluster member %s holding the downstream session was lost with the request in flight: %s", lm.member, lm.why))
			return
		case <-r.Context().Done():
			t.cancelled.Add(1)
			cancelThere()
			return
		}
	}
}

// failLost ends an exchange whose holder was lost: a request's client
// gets a JSON-RPC error for it (-32603, naming the member), on the SSE
// stream when one began, else as the POST's JSON answer; anything else
// gets 502 when nothing was written yet, or its stream's end.
func failLost(w http.ResponseWriter, head http.Header, body []byte, why string) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	isRequest := json.Unmarshal(body, &req) == nil && len(req.ID) > 0 && req.Method != ""
	if !isRequest {
		if head == nil {
			http.Error(w, why, http.StatusBadGateway)
		}
		return
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32603, "message": why}})
	switch {
	case head == nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(msg)
	case strings.HasPrefix(head.Get("Content-Type"), "text/event-stream"):
		_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
		_ = http.NewResponseController(w).Flush()
	}
}

// serve serves here an exchange another member handed over, with the
// gateway's session handler, streaming its answer back.
func (t *tunnels) serve(m exchangeMsg, body []byte) {
	to := actor.NewPID(m.ReplyTo, streamsName)
	sw := &streamWriter{send: func(msg *pcluster.GrainRequest) { t.send(to, msg) }, id: m.ID, header: http.Header{}}
	hp := t.handler.Load()
	s := t.m.servers.Load()
	if hp == nil || s == nil {
		sw.fail(fmt.Sprintf("cluster member %s serves no gateway", t.m.Address()))
		return
	}
	p, untrack, ok := s.track(m.ReplyTo)
	if !ok {
		return // the receiving member is gone: no one to answer
	}
	defer untrack()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	t.mu.Lock()
	if len(t.in) >= MaxTunnels {
		t.mu.Unlock()
		t.refused.Add(1)
		sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
		sw.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(sw, "Service unavailable: %d session requests from the other members in flight on member %s, its limit\n", MaxTunnels, t.m.Address())
		sw.end("")
		return
	}
	t.in[m.ID] = cancel
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.in, m.ID)
		t.mu.Unlock()
	}()
	go func() {
		select {
		case <-p.lost:
			cancel(errReceiverLost)
		case <-ctx.Done():
		}
	}()
	defer func() {
		if v := recover(); v != nil {
			t.m.logger.Error("cluster: a tunnelled session request panicked", "panic", v)
			sw.fail(fmt.Sprintf("the session request panicked on member %s", t.m.Address()))
		}
	}()
	req, err := http.NewRequestWithContext(ctx, m.Method, "http://"+m.Host+"/mcp", bytes.NewReader(body))
	if err != nil {
		sw.fail(err.Error())
		return
	}
	req.Header, req.Host = m.Header, m.Host
	if req.Header == nil {
		req.Header = http.Header{}
	}
	(*hp).ServeHTTP(sw, req)
	sw.end("")
}

// streamWriter is the http.ResponseWriter of an exchange served here: what
// the handler writes goes back to the receiving member, one chunk per
// flush.
type streamWriter struct {
	send   func(*pcluster.GrainRequest) // to the receiving member
	id     string
	header http.Header

	mu    sync.Mutex
	wrote bool
	ended bool
	seq   int64
	buf   []byte
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(status)
}

func (w *streamWriter) writeHeader(status int) {
	if w.wrote || w.ended {
		return
	}
	w.wrote = true
	w.message(typeSessionHead, exchangeMsg{Status: status, Header: carried(w.header)}, nil)
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return 0, errClientGone
	}
	w.writeHeader(http.StatusOK)
	w.buf = append(w.buf, p...)
	for len(w.buf) >= tunnelChunk {
		w.message(typeSessionChunk, exchangeMsg{}, w.buf[:tunnelChunk:tunnelChunk])
		w.buf = w.buf[tunnelChunk:]
	}
	return len(p), nil
}

// Flush sends what was written since the last flush (the go-sdk flushes
// each SSE event).
func (w *streamWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flush()
}

func (w *streamWriter) flush() {
	if w.ended {
		return
	}
	w.writeHeader(http.StatusOK)
	if len(w.buf) > 0 {
		w.message(typeSessionChunk, exchangeMsg{}, w.buf)
		w.buf = nil
	}
}

// end sends what is left and the exchange's end.
func (w *streamWriter) end(errText string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if errText == "" {
		w.flush()
	}
	if w.ended {
		return
	}
	w.ended = true
	w.message(typeSessionEnd, exchangeMsg{Error: errText}, nil)
}

// fail ends the exchange with an error, said to the client as a 502 when
// nothing was written yet.
func (w *streamWriter) fail(why string) { w.end(why) }

// message sends one message of the answer, in order. Called with mu held.
func (w *streamWriter) message(typeName string, m exchangeMsg, body []byte) {
	m.ID, m.Seq = w.id, w.seq
	w.seq++
	w.send(frame(typeName, m, body))
}
