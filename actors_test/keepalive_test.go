package actors_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// With Options.KeepAlive the client pings every interval (ping in the
// legacy era, server/discover in the modern one); answered pings keep it,
// and KeepAliveFailures unanswered ones in a row (each bounded by half the
// interval) end it with a KindTransport error that says so.
func TestKeepAliveEndsAClientWhoseServerStopsAnswering(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		start := time.Now()
		c, srv := e.connect(t, conduit.Options{KeepAlive: 10 * time.Second, KeepAliveFailures: 2})
		want := "ping"
		if e.era == conduit.EraModern {
			want = "server/discover"
		}
		for i := 1; i <= 2; i++ { // answered: the client lives on
			m := srv.next()
			assert.Equal(t, want, m["method"])
			assert.Equal(t, time.Duration(i)*10*time.Second, time.Since(start))
			if e.era == conduit.EraModern {
				srv.reply(m["id"], discoverResult)
			} else {
				srv.reply(m["id"], map[string]any{})
			}
		}
		// Unanswered from now on: pings at 30 s and 40 s time out at 35 s
		// and 45 s (a legacy one is then cancelled).
		assert.Equal(t, want, nextRequest(t, srv)["method"])
		assert.Equal(t, want, nextRequest(t, srv)["method"])
		<-c.Done()
		assert.Equal(t, 45*time.Second, time.Since(start))
		err := c.Err()
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind)
		var ka *conduit.KeepAliveError
		require.ErrorAs(t, err, &ka)
		assert.Equal(t, 2, ka.Failures)
		assert.EqualError(t, err, "conduit: transport: keep-alive: 2 pings in a row failed: conduit: "+want+": timeout: no response within the timeout of 5s: active 5s, paused for input 0s")
		// A call after the end says why the client ended.
		_, err = c.ListTools(t.Context())
		assert.ErrorAs(t, err, &ka)
	})
}

// One answered ping resets the count: failures must be in a row.
func TestKeepAliveCountsFailuresInARow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{KeepAlive: 10 * time.Second, KeepAliveFailures: 2}, "2025-11-25")
		for range 3 {
			nextRequest(t, srv) // unanswered: times out
			m := nextRequest(t, srv)
			srv.reply(m["id"], map[string]any{})
		}
		synctest.Wait()
		select {
		case <-c.Done():
			t.Fatalf("client ended: %v", c.Err())
		default:
		}
		require.NoError(t, c.Close())
		var ce *conduit.Error
		require.ErrorAs(t, c.Err(), &ce)
		assert.Equal(t, conduit.KindClosed, ce.Kind)
	})
}

// Without a keep-alive nothing is sent, however long the client idles;
// Close ends a keep-alive that is waiting for its next tick (goleak).
func TestKeepAliveOffSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Empty(t, srv.in)
		require.NoError(t, c.Close())
	})
	synctest.Test(t, func(t *testing.T) {
		c, _ := connect(t, conduit.Options{KeepAlive: time.Minute}, "2025-11-25")
		time.Sleep(30 * time.Second)
		require.NoError(t, c.Close())
	})
}

// nextRequest is the next frame the client sent that is not a
// notification.
func nextRequest(t *testing.T, srv *fakeServer) map[string]any {
	t.Helper()
	for {
		m := srv.next()
		if _, ok := m["id"]; ok {
			return m
		}
	}
}

// Against the go-sdk server over Streamable HTTP: its pings are answered
// and the client lives; once the server is gone (nothing else tells an HTTP
// client), the keep-alive ends the client.
func TestGoSDKServerKeepAliveOverHTTP(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "alive", Version: "1"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	pings := make(chan struct{}, 100)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"method":"ping"`)) {
				defer func() { pings <- struct{}{} }() // once answered
			}
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c := connectHTTP(t, ts.URL, conduit.Options{Era: conduit.EraLegacy, KeepAlive: 20 * time.Millisecond, KeepAliveFailures: 2})
	for range 5 { // five pings answered: the client lives
		select {
		case <-pings:
		case <-callCtx(t).Done():
			t.Fatal("no ping came")
		}
	}
	select {
	case <-c.Done():
		t.Fatalf("ended while the server answered: %v", c.Err())
	default:
	}
	ts.CloseClientConnections()
	ts.Close()
	for ss := range server.Sessions() { // the client, gone with it, never ends them
		_ = ss.Close()
	}
	select {
	case <-c.Done():
	case <-callCtx(t).Done():
		t.Fatal("the client never noticed its server was gone")
	}
	var ka *conduit.KeepAliveError
	require.ErrorAs(t, c.Err(), &ka)
	assert.Equal(t, 2, ka.Failures)
}
