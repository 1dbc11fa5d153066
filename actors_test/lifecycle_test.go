package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// The client's lifecycle is its own, not its current session's: a legacy
// HTTP server that forgets a session makes the client start a new one, and
// the client lives on through it. These tests drive a scripted legacy server
// (sessions s-1, s-2, …) that forgets a session when the test says so.

// forgetfulServer is a legacy Streamable HTTP server. A message on a session
// it has forgotten gets 404; a tools/call is answered "ok on <session>",
// except "hang", which is never answered. Everything notable it sees goes to
// seen, in order: "initialize 2", `answer "r1"`, "hang on s-1",
// "setLevel info on s-2", "notify notifications/initialized", "DELETE s-1".
type forgetfulServer struct {
	*httptest.Server
	seen chan string
	// beforeInit runs before initialize number n (from 1) is answered; when
	// it returns a message, initialize fails with it (-32603) instead.
	beforeInit func(n int, r *http.Request) (refusal string)
	// stream is sent on session s-1's standalone GET stream, one event each.
	stream []string

	mu        sync.Mutex
	inits     int
	forgotten map[string]bool
}

func newForgetfulServer(t *testing.T, configure func(*forgetfulServer)) *forgetfulServer {
	s := &forgetfulServer{seen: make(chan string, 100), forgotten: map[string]bool{}}
	if configure != nil {
		configure(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *forgetfulServer) forget(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgotten[sid] = true
}

func (s *forgetfulServer) initializes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inits
}

func (s *forgetfulServer) serve(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	s.mu.Lock()
	forgotten := s.forgotten[sid]
	s.mu.Unlock()
	switch {
	case r.Method == http.MethodDelete:
		s.seen <- "DELETE " + sid
		return
	case forgotten:
		w.WriteHeader(http.StatusNotFound)
		return
	case r.Method == http.MethodGet && sid == "s-1" && s.stream != nil:
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range s.stream {
			fmt.Fprintf(w, "data: %s\n\n", e)
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case r.Method != http.MethodPost:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name  string `json:"name"`
			Level string `json:"level"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&m)
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
	}
	switch {
	case m.Method == "server/discover":
		w.WriteHeader(http.StatusBadRequest) // a legacy server
	case m.Method == "initialize":
		s.mu.Lock()
		s.inits++
		n := s.inits
		s.mu.Unlock()
		s.seen <- fmt.Sprintf("initialize %d", n)
		if s.beforeInit != nil {
			if refusal := s.beforeInit(n, r); refusal != "" {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":%q}}`, m.ID, refusal)
				return
			}
		}
		w.Header().Set("Mcp-Session-Id", fmt.Sprintf("s-%d", n))
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"forgetful","version":"1"}}`)
	case m.ID == nil:
		s.seen <- "notify " + m.Method
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "":
		s.seen <- "answer " + string(m.ID)
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "logging/setLevel":
		s.seen <- fmt.Sprintf("setLevel %s on %s", m.Params.Level, sid)
		reply(`{}`)
	case m.Params.Name == "hang":
		s.seen <- "hang on " + sid
		<-r.Context().Done()
	default:
		reply(fmt.Sprintf(`{"content":[{"type":"text","text":"ok on %s"}]}`, sid))
	}
}

// waitSeen consumes what the server saw until want.
func (s *forgetfulServer) waitSeen(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second) // a guard against a hang, not a wait
	for {
		select {
		case got := <-s.seen:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("the server never saw %q", want)
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// requireKind checks err is a *conduit.Error of kind.
func requireKind(t *testing.T, err error, kind conduit.Kind) *conduit.Error {
	t.Helper()
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, kind, ce.Kind, "err: %v", err)
	return ce
}

func TestClientOutlivesSessionRenewal(t *testing.T) {
	srv := newForgetfulServer(t, nil)
	c := connectHTTP(t, srv.URL, conduit.Options{})
	done := c.Done()
	srv.forget("s-1")

	r, err := c.CallTool(callCtx(t), "anything", nil)
	require.NoError(t, err)
	assert.Equal(t, "ok on s-2", textOf(t, r))
	srv.waitSeen(t, "DELETE s-1") // the lost session was released
	assert.False(t, isClosed(done), "Done taken before the renewal closed while the client lives")
	assert.False(t, isClosed(c.Done()))
	assert.NoError(t, c.Err())
}

// The log level the host asked for outlives the session: a fresh session
// starts at the server's default, so the client asks again.
func TestClientLogLevelOutlivesSessionRenewal(t *testing.T) {
	srv := newForgetfulServer(t, nil)
	c := connectHTTP(t, srv.URL, conduit.Options{})
	require.NoError(t, c.SetLogLevel(callCtx(t), "info"))
	srv.waitSeen(t, "setLevel info on s-1")
	srv.forget("s-1")

	_, err := c.CallTool(callCtx(t), "anything", nil)
	require.NoError(t, err)
	srv.waitSeen(t, "initialize 2")
	var since []string // answered before the call was retried: all here now
	for len(srv.seen) > 0 {
		since = append(since, <-srv.seen)
	}
	assert.Contains(t, since, "setLevel info on s-2")
}

func TestClientStatsCountEndedSessions(t *testing.T) {
	srv := newForgetfulServer(t, func(s *forgetfulServer) {
		s.stream = []string{
			`{"jsonrpc":"2.0","id":"x"}`, // neither request nor response: malformed
			`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`,
		}
	})
	c := connectHTTP(t, srv.URL, conduit.Options{Handler: &handler{}})
	srv.waitSeen(t, `answer "r1"`) // counted on arrival, in order after the malformed frame
	srv.forget("s-1")

	r, err := c.CallTool(callCtx(t), "anything", nil)
	require.NoError(t, err)
	assert.Equal(t, "ok on s-2", textOf(t, r))
	assert.Equal(t, conduit.Stats{ServerRequests: 1, Malformed: 1}, c.Stats())
}

func TestClientCloseDuringRenewalReleasesTheFreshSession(t *testing.T) {
	before := goleak.IgnoreCurrent()
	release := make(chan struct{})
	srv := newForgetfulServer(t, func(s *forgetfulServer) {
		s.beforeInit = func(n int, r *http.Request) string {
			if n == 2 {
				select { // the renewal is dialling when Close comes
				case <-release:
				case <-r.Context().Done():
				}
			}
			return ""
		}
	})
	c := connectHTTP(t, srv.URL, conduit.Options{})
	srv.forget("s-1")
	call := callAsync(c, "anything")
	srv.waitSeen(t, "initialize 2")

	require.NoError(t, c.Close())
	close(release) // too late: the client is closed
	out := <-call
	requireKind(t, out.err, conduit.KindClosed)
	assert.Nil(t, out.res)
	assert.True(t, isClosed(c.Done()))
	requireKind(t, c.Err(), conduit.KindClosed)
	_, err := c.CallTool(callCtx(t), "anything", nil)
	requireKind(t, err, conduit.KindClosed)
	assert.Equal(t, 2, srv.initializes())
	srv.Close()
	goleak.VerifyNone(t, before)
}

func TestClientCloseAfterALostSessionNeverDials(t *testing.T) {
	srv := newForgetfulServer(t, nil)
	c := connectHTTP(t, srv.URL, conduit.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "hang", nil)
		call <- err
	}()
	// The call's cancellation is what reaches the server after it forgot
	// the session: the session is lost while no call waits to renew it.
	srv.waitSeen(t, "hang on s-1")
	srv.forget("s-1")
	cancel()
	requireKind(t, <-call, conduit.KindCancelled)
	srv.waitSeen(t, "DELETE s-1") // the client has let the lost session go
	assert.False(t, isClosed(c.Done()), "a session the server forgot does not end the client")
	assert.NoError(t, c.Err())

	require.NoError(t, c.Close())
	_, err := c.CallTool(callCtx(t), "anything", nil)
	requireKind(t, err, conduit.KindClosed)
	assert.Equal(t, 1, srv.initializes(), "no session is started after Close")
	requireKind(t, c.Err(), conduit.KindClosed)
}

func TestClientEndsWhenRenewalFails(t *testing.T) {
	srv := newForgetfulServer(t, func(s *forgetfulServer) {
		s.beforeInit = func(n int, _ *http.Request) string {
			if n == 2 {
				return "down for maintenance"
			}
			return ""
		}
	})
	c := connectHTTP(t, srv.URL, conduit.Options{})
	srv.forget("s-1")

	_, err := c.CallTool(callCtx(t), "anything", nil)
	e := requireKind(t, err, conduit.KindRPC)
	assert.Equal(t, "initialize", e.Method)
	<-c.Done()
	assert.Same(t, err, c.Err(), "Err says why the client ended: the renewal failed")
	_, err = c.CallTool(callCtx(t), "anything", nil)
	assert.EqualError(t, err, "conduit: tools/call: rpc: jsonrpc error -32603: down for maintenance")
	assert.Equal(t, 2, srv.initializes(), "an ended client starts no session")
}

func TestClientEndsWhenTheServerGoesAway(t *testing.T) {
	c, srv := connect(t, conduit.Options{}, "2025-11-25")
	done := c.Done()
	require.NoError(t, srv.conn.Close())
	<-done
	e := requireKind(t, c.Err(), conduit.KindTransport)
	assert.Equal(t, "connection to the server lost", e.Message)
	_, err := c.CallTool(context.Background(), "anything", nil)
	requireKind(t, err, conduit.KindTransport)
	assert.ErrorIs(t, err, conduit.ErrConnectionEnded)
	require.NoError(t, c.Close())
	assert.Same(t, e, c.Err(), "Close after the end keeps the first reason")
}

func TestClientCloseLeavesKindClosed(t *testing.T) {
	c, _ := connect(t, conduit.Options{}, "2025-11-25")
	assert.NoError(t, c.Err(), "nil while the client lives")
	require.NoError(t, c.Close())
	assert.True(t, isClosed(c.Done()))
	e := requireKind(t, c.Err(), conduit.KindClosed)
	assert.Equal(t, "client closed", e.Message)
	require.NoError(t, c.Close(), "Close is idempotent")
	assert.Same(t, e, c.Err())
	_, err := c.CallTool(context.Background(), "anything", nil)
	assert.EqualError(t, err, "conduit: tools/call: closed: client closed")
}

// sessionTransport gives each Connect a fresh in-memory session with a
// scripted server (on servers, in order), so the renewal path can run in a
// synctest bubble.
type sessionTransport struct {
	t       *testing.T
	servers chan *memSession
}

// memSession is one session: its scripted server, and lose, which ends the
// client's side as a legacy HTTP connection ends once the server forgot the
// session.
type memSession struct {
	*fakeServer
	lost *atomic.Bool
}

func (s memSession) lose() {
	s.lost.Store(true)
	require.NoError(s.t, s.conn.Close())
}

func newSessionTransport(t *testing.T) *sessionTransport {
	st := &sessionTransport{t: t, servers: make(chan *memSession, 10)}
	t.Cleanup(func() {
		close(st.servers)
		for s := range st.servers {
			s.end()
		}
	})
	return st
}

// end closes the server's side and drains what the client sent.
func (s *memSession) end() {
	_ = s.conn.Close()
	for range s.in {
	}
}

func (st *sessionTransport) Connect(context.Context) (transport.Conn, error) {
	clientSide, serverSide := transport.NewMemoryPair()
	s := &memSession{fakeServer: newFakeServer(st.t, serverSide), lost: new(atomic.Bool)}
	st.servers <- s
	return forgettableConn{Conn: clientSide, lost: s.lost}, nil
}

// next returns the next session the client opened.
func (st *sessionTransport) next() *memSession {
	s := <-st.servers
	st.t.Cleanup(s.end)
	return s
}

type forgettableConn struct {
	transport.Conn
	lost *atomic.Bool
}

func (c forgettableConn) Read(ctx context.Context) (transport.Message, error) {
	m, err := c.Conn.Read(ctx)
	if err != nil && c.lost.Load() {
		err = fmt.Errorf("%w: %w", transport.ErrSessionTerminated, err)
	}
	return m, err
}

// A handler abandoned on a session renewed away still runs: it counts in
// AbandonedHandlers until it returns.
func TestClientStatsCountHandlersAbandonedOnEndedSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			<-release // ignores its context
			return nil, errors.New("too late")
		}}
		st := newSessionTransport(t)
		connected := make(chan *conduit.Client, 1)
		go func() {
			c, err := conduit.Connect(context.Background(), st, conduit.Options{Handler: h, HandlerTimeout: time.Second})
			assert.NoError(t, err)
			connected <- c
		}()
		s1 := st.next()
		s1.handshake("2025-11-25")
		c := <-connected
		defer c.Close()
		s1.request("r1", "roots/list", nil)
		s1.expectError("r1", -32603) // timed out: the handler is abandoned
		s1.lose()
		synctest.Wait()

		call := callAsync(c, "anything")
		s2 := st.next()
		s2.handshake("2025-11-25")
		m := s2.next()
		require.Equal(t, "tools/call", m["method"])
		s2.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err)
		assert.Equal(t, conduit.Stats{ServerRequests: 1, AbandonedHandlers: 1}, c.Stats())

		close(release)
		synctest.Wait()
		assert.Equal(t, conduit.Stats{ServerRequests: 1}, c.Stats())
		assert.False(t, isClosed(c.Done()))
	})
}

// panicOn is a slog.Handler that panics on one message: user code the
// connection actor runs.
type panicOn string

func (p panicOn) Enabled(context.Context, slog.Level) bool { return true }
func (p panicOn) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p panicOn) WithGroup(string) slog.Handler            { return p }
func (p panicOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == string(p) {
		panic("logger bug")
	}
	return nil
}

// A panic in the connection actor itself ends the connection as an
// internal failure: the calls in flight fail and Close returns (the actor
// was stopped, nothing ended the connection, and Close waited for it
// forever).
func TestConnectionActorPanicEndsTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{Logger: slog.New(panicOn("response to an unknown id dropped"))}, "2025-11-25")
		d := callAsync(c, "x")
		srv.next()
		srv.reply(999, map[string]any{}) // an unknown id: logged
		r := <-d
		var ce *conduit.Error
		require.ErrorAs(t, r.err, &ce)
		assert.Equal(t, conduit.KindInternal, ce.Kind, "Conduit's fault, not the server's")
		assert.Equal(t, "conduit: tools/call: internal: internal actor failed: logger bug", r.err.Error())
		<-c.Done()
		assert.Equal(t, "conduit: internal: internal actor failed: logger bug", c.Err().Error())
		require.NoError(t, c.Close())
	})
}
