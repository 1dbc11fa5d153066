package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// Transport failures are errors of KindTransport carrying their cause, never
// JSON-RPC errors the server did not send; and a server the client cannot
// reach, or a URL that is not an MCP endpoint, fails Connect.

// rpcOf reads the JSON-RPC method and id of a POST body.
func rpcOf(t *testing.T, r *http.Request) (method string, id json.RawMessage) {
	var env struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &env)
	return env.Method, env.ID
}

// legacyEndpoint is a legacy (2025-11-25) Streamable HTTP server that
// answers the modern probe with probeStatus (no JSON-RPC body), initialize
// with a session, and every other request with call.
func legacyEndpoint(t *testing.T, probeStatus int, call func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		method, id := rpcOf(t, r)
		switch {
		case method == "server/discover":
			w.WriteHeader(probeStatus)
		case method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, id)
		case len(id) == 0:
			w.WriteHeader(http.StatusAccepted)
		default:
			call(w, id)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// modernEndpoint is a modern (2026-07-28) Streamable HTTP server that
// answers the probe with a DiscoverResult and every other request with
// call.
func modernEndpoint(t *testing.T, call func(w http.ResponseWriter, id json.RawMessage)) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method, id := rpcOf(t, r)
		switch {
		case method == "server/discover":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}`, id)
		case len(id) == 0:
			w.WriteHeader(http.StatusAccepted)
		default:
			call(w, id)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

func connectCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestUnreachableHTTPServerFailsConnectWithTransport(t *testing.T) {
	for _, pinned := range []conduit.Era{"", conduit.EraLegacy, conduit.EraModern} {
		t.Run("era="+string(pinned), func(t *testing.T) {
			c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: testpeer.ClosedURL(t)}, conduit.Options{Era: pinned})
			require.Error(t, err)
			require.Nil(t, c)
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, conduit.KindTransport, ce.Kind, err.Error())
			assert.Nil(t, ce.RPC, "no JSON-RPC error the server never sent")
			var op *net.OpError
			require.ErrorAs(t, err, &op, "the cause is the dial error")
			assert.Equal(t, "dial", op.Op)
			assert.ErrorIs(t, err, syscall.ECONNREFUSED)
			assert.Contains(t, err.Error(), "connection refused")
		})
	}
}

func TestHTTPStatus500FailsTheCallWithTransport(t *testing.T) {
	boom := func(w http.ResponseWriter, _ json.RawMessage) { http.Error(w, "boom", http.StatusInternalServerError) }
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			url := legacyEndpoint(t, http.StatusNotFound, boom)
			if era == conduit.EraModern {
				url = modernEndpoint(t, boom)
			}
			c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: url}, conduit.Options{})
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, era, c.Era())
			status500(t, c)
		})
	}
}

func status500(t *testing.T, c *conduit.Client) {
	t.Helper()
	_, err := c.CallTool(connectCtx(t), "anything", nil)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind, err.Error())
	assert.Equal(t, "tools/call", ce.Method)
	assert.Nil(t, ce.RPC)
	var se *transport.HTTPStatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusInternalServerError, se.Status)
	assert.Equal(t, "text/plain; charset=utf-8", se.ContentType)
	assert.Equal(t, "boom\n", se.Body)
	assert.Equal(t, "conduit: tools/call: transport: the request failed: transport: HTTP 500 Internal Server Error: boom", err.Error())
	assert.NotErrorIs(t, err, conduit.ErrConnectionEnded, "it failed alone")

	// The connection is not lost: the next call goes out, and fails alike.
	_, err = c.ListTools(connectCtx(t))
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusInternalServerError, se.Status)
	select {
	case <-c.Done():
		t.Fatal("a failed request ended the connection")
	default:
	}
}

func TestHTMLPageIsNotAnMCPEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Welcome</body></html>")
	}))
	defer srv.Close()
	_, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL + "/"}, conduit.Options{})
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind, err.Error())
	assert.Equal(t, srv.URL+"/ is not an MCP endpoint", ce.Message)
	var se *transport.HTTPStatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusOK, se.Status)
	assert.Equal(t, "text/html", se.ContentType)
	assert.Contains(t, err.Error(), `HTTP 200 OK with Content-Type "text/html"`)
}

func TestURLThatAnswers404EverywhereIsNotAnMCPEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL + "/nope"}, conduit.Options{})
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind, err.Error())
	assert.Equal(t, "initialize", ce.Method, "the probe fell back to initialize, which failed too")
	assert.Equal(t, srv.URL+"/nope is not an MCP endpoint", ce.Message)
	var se *transport.HTTPStatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusNotFound, se.Status)
}

// A legacy server refuses the modern probe with a bare 4xx: that is the
// spec's signal to fall back to initialize, not a failure.
func TestLegacyServerRefusingTheProbeIsStillLegacy(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			url := legacyEndpoint(t, status, func(w http.ResponseWriter, id json.RawMessage) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, id)
			})
			c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: url}, conduit.Options{})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, conduit.EraLegacy, c.Era())
			assert.Equal(t, "2025-11-25", c.ProtocolVersion())
			tools, err := c.ListTools(connectCtx(t))
			require.NoError(t, err)
			assert.Empty(t, tools)
		})
	}
}

// A server that refuses the probe with a 4xx but then fails initialize with
// a 5xx is reachable but broken: the status says so.
func TestHTTPStatusErrorOnInitialize(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if method, _ := rpcOf(t, r); method == "server/discover" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL}, conduit.Options{})
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind)
	assert.Equal(t, "conduit: initialize: transport: the request failed: transport: HTTP 502 Bad Gateway: upstream down", err.Error())
}

// A 5xx to the probe is a failing server, not a legacy one: Connect fails
// rather than trying initialize.
func TestProbeAnswered5xxFailsConnect(t *testing.T) {
	var initialized bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if method, _ := rpcOf(t, r); method == "initialize" {
			initialized = true
		}
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL}, conduit.Options{})
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind)
	assert.Equal(t, "conduit: server/discover: transport: the request failed: transport: HTTP 503 Service Unavailable: overloaded", err.Error())
	srv.Close() // the handler has returned: initialized is safe to read
	assert.False(t, initialized, "no fallback to initialize")
}

func TestStdioServerThatExitsAtOnceReportsItsStatus(t *testing.T) {
	// Several times: the probe's write (a broken pipe) and the read of
	// stdout (EOF) race to notice the exit; both must name the status.
	for range 5 {
		_, err := conduit.Connect(connectCtx(t), &transport.Command{Path: "sh", Args: []string{"-c", "exit 3"}}, conduit.Options{})
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind, err.Error())
		var exit *transport.ServerExitError
		require.ErrorAs(t, err, &exit, err.Error())
		assert.Equal(t, 3, exit.ExitCode())
		assert.Contains(t, err.Error(), "transport: the server exited (exit status 3)")
		assert.NotContains(t, err.Error(), "broken pipe")
	}
}

// A 401 or 403 with a Bearer challenge to the probe is a server that needs
// sign-in, not a legacy one: Connect fails saying so, without initialize.
// A 401 without a Bearer challenge is still the legacy refusal.
func TestProbeAnsweredWithBearerChallengeNeedsSignIn(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var initialized atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if method, _ := rpcOf(t, r); method == "initialize" {
					initialized.Store(true)
				}
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
				w.WriteHeader(status)
			}))
			defer srv.Close()
			_, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL}, conduit.Options{})
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, conduit.KindTransport, ce.Kind)
			assert.Equal(t, "server/discover", ce.Method)
			assert.Equal(t, "the server needs sign-in (OAuth)", ce.Message)
			var se *transport.HTTPStatusError
			require.ErrorAs(t, err, &se)
			assert.True(t, se.NeedsSignIn())
			assert.Equal(t, status, se.Status)
			assert.False(t, initialized.Load(), "no fallback to initialize")
		})
	}
	t.Run("401 Basic", func(t *testing.T) {
		url := legacyEndpoint(t, http.StatusUnauthorized, func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, id)
		})
		c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: url}, conduit.Options{})
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, conduit.EraLegacy, c.Era())
	})
}
