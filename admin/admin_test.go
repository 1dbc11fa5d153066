package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// python is the interpreter of the test servers.
func python(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return p
}

// pyServer is a server running testdata/server.py with these tools.
func pyServer(t testing.TB, tools ...string) host.Server {
	script, err := filepath.Abs("testdata/server.py")
	require.NoError(t, err)
	return host.Server{Command: python(t), Args: append([]string{script}, tools...), Conduit: host.Settings{Era: conduit.EraLegacy}}
}

// crashing is a server that exits at once, restarted every 100 ms (up to
// 5 times in a minute, then parked).
func crashing() host.Server {
	return host.Server{Command: "sh", Args: []string{"-c", "exit 3"}, Conduit: host.Settings{
		Restart: host.RestartPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}}}
}

type fixture struct {
	h   *host.Host
	m   *Metrics
	srv *Server
	web *httptest.Server
}

// start runs a host of servers with an admin server, a Roots handler that
// answers one root.
func start(t testing.TB, servers map[string]host.Server, opts Options) *fixture {
	t.Helper()
	return startOn(t, nil, servers, opts)
}

// startOn is start with the admin server on ln (nil: a new one).
func startOn(t testing.TB, ln net.Listener, servers map[string]host.Server, opts Options) *fixture {
	t.Helper()
	m := NewMetrics()
	roots := func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///tmp", Name: "tmp"}}}, nil
	}
	h, err := host.New(host.Config{Servers: servers}, host.Options{
		Client:        conduit.Options{Handlers: conduit.Handlers{Roots: roots}},
		ServerOptions: m.ServerOptions,
	})
	require.NoError(t, err)
	srv := New(h, m, opts)
	web := httptest.NewUnstartedServer(srv.Handler())
	if ln != nil {
		_ = web.Listener.Close()
		web.Listener = ln
	}
	web.Start()
	f := &fixture{h: h, m: m, srv: srv, web: web}
	t.Cleanup(func() {
		web.Close()
		srv.Close()
		_ = h.Close()
	})
	return f
}

// until waits for the host's events to satisfy ok (30 s at most).
func until(t testing.TB, h *host.Host, ok func([]host.Status) bool) {
	t.Helper()
	events, cancel := h.Subscribe()
	defer cancel()
	timeout := time.After(30 * time.Second)
	for !ok(h.Status()) {
		select {
		case <-events:
		case <-timeout:
			t.Fatalf("timed out; status: %+v", h.Status())
		}
	}
}

func state(sts []host.Status, server string) host.State {
	for _, st := range sts {
		if st.Server == server {
			return st.State
		}
	}
	return ""
}

func get(t testing.TB, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// scrape reads /metrics into its families.
func scrape(t testing.TB, base string) map[string]*familyValues {
	t.Helper()
	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	out := map[string]*familyValues{}
	for name, f := range fams {
		fv := &familyValues{values: map[string]float64{}}
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := strings.Join(labels, ",")
			switch {
			case m.Counter != nil:
				fv.values[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				fv.values[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				fv.values[key] = float64(m.Histogram.GetSampleCount())
			}
		}
		out[name] = fv
	}
	return out
}

type familyValues struct{ values map[string]float64 }

func value(t testing.TB, fams map[string]*familyValues, name, labels string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
	v, ok := f.values[labels]
	require.True(t, ok, "no %s{%s}; have %v", name, labels, f.values)
	return v
}

// Every metric the issue lists, from a host with a working server (calls
// ok, a tool error, a tool not in the catalog, one that asks for the
// roots) and one that crash-loops until parked.
func TestMetrics(t *testing.T) {
	f := start(t, map[string]host.Server{"every": pyServer(t, "echo", "fail", "ask"), "broken": crashing()}, Options{})
	until(t, f.h, func(sts []host.Status) bool {
		return state(sts, "every") == host.StateReady && state(sts, "broken") == host.StateParked
	})
	ctx := context.Background()
	for _, tool := range []string{"echo", "echo", "fail", "nope", "ask"} {
		_, err := f.h.CallTool(ctx, "every", tool, map[string]any{})
		require.NoError(t, err)
	}
	fams := scrape(t, f.web.URL)
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_state", "server=every,state=ready"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_server_state", "server=every,state=parked"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_state", "server=broken,state=parked"))
	assert.Equal(t, 4.0, value(t, fams, "conduit_server_restarts_total", "server=broken"))
	assert.Equal(t, 5.0, value(t, fams, "conduit_server_starts_total", "server=broken"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_starts_total", "server=every"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_server_restarts_total", "server=every"))
	assert.Equal(t, 3.0, value(t, fams, "conduit_server_tools", "server=every"))
	assert.Equal(t, 2.0, value(t, fams, "conduit_tool_calls_total", "outcome=ok,server=every,tool=echo"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_tool_calls_total", "outcome=tool_error,server=every,tool=fail"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_tool_calls_total", "outcome=ok,server=every,tool=other"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_tool_calls_total", "outcome=ok,server=every,tool=ask"))
	assert.Equal(t, 5.0, value(t, fams, "conduit_tool_call_duration_seconds", "server=every"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_tool_calls_in_flight", "server=every"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_requests_total", "method=roots/list,outcome=answered,server=every"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_input_requests_waiting", "method=roots/list,server=every"))
	assert.Greater(t, value(t, fams, "conduit_deadline_paused_seconds_total", "method=roots/list,server=every"), 0.0)
	assert.Greater(t, value(t, fams, "conduit_server_received_bytes_total", "server=every"), 100.0)
	assert.Greater(t, value(t, fams, "conduit_server_sent_bytes_total", "server=every"), 50.0)
	assert.Equal(t, 0.0, value(t, fams, "conduit_server_messages_dropped_total", "kind=notification,server=every"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_server_abandoned_handlers", "server=every"))
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		assert.Contains(t, fams, name)
	}
	assert.NotContains(t, fams, "conduit_gateway_sessions_open")
}

// A legacy server's variant (a connection for a call's capability set,
// here none where the host declares roots) is counted.
func TestMetricsVariants(t *testing.T) {
	f := start(t, map[string]host.Server{"every": pyServer(t, "echo")}, Options{})
	until(t, f.h, func(sts []host.Status) bool { return state(sts, "every") == host.StateReady })
	_, err := f.h.CallTool(context.Background(), "every", "echo", map[string]any{}, conduit.WithCapabilities())
	require.NoError(t, err)
	fams := scrape(t, f.web.URL)
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_variants", "server=every"))
	assert.Equal(t, 0.0, value(t, fams, "conduit_server_variants_refused_total", "server=every"))
}

// /readyz is 503 naming each server not ready (and why) until every one
// not optional is ready; /healthz is 200 all along.
func TestReadyz(t *testing.T) {
	optional := crashing()
	optional.Conduit.Optional = true
	f := start(t, map[string]host.Server{"every": pyServer(t), "broken": crashing(), "extra": optional}, Options{})
	until(t, f.h, func(sts []host.Status) bool {
		return state(sts, "every") == host.StateReady && state(sts, "broken") == host.StateParked && state(sts, "extra") == host.StateParked
	})
	code, body := get(t, f.web.URL+"/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	var rd Readiness
	require.NoError(t, json.Unmarshal([]byte(body), &rd))
	require.Len(t, rd.NotReady, 1)
	assert.False(t, rd.Ready)
	assert.Equal(t, "broken", rd.NotReady[0].Server)
	assert.Equal(t, host.StateParked, rd.NotReady[0].State)
	assert.Contains(t, rd.NotReady[0].Reason, "parked after 4 restarts: ")
	code, body = get(t, f.web.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	cfg := host.Config{Servers: map[string]host.Server{"every": pyServer(t), "extra": optional}}
	f.h.Apply(cfg)
	code, body = get(t, f.web.URL+"/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"ready": true, "not_ready": []}`, body)
}

// Only the five paths, only GET (and HEAD); with a token, every path needs
// it; without one, a Host that is not loopback is refused.
func TestAccess(t *testing.T) {
	f := start(t, map[string]host.Server{"every": pyServer(t)}, Options{Token: "s3cret"})
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/", "/events"} {
		code, _ := get(t, f.web.URL+path)
		assert.Equal(t, http.StatusUnauthorized, code, path)
		code, _ = get(t, f.web.URL+path, "Authorization", "Bearer wrong")
		assert.Equal(t, http.StatusUnauthorized, code, path)
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 200, "/": 200, "/debug/pprof/": 404, "/metrics/x": 404, "/index.html": 404} {
		if path == "/readyz" {
			until(t, f.h, func(sts []host.Status) bool { return state(sts, "every") == host.StateReady })
		}
		code, _ := get(t, f.web.URL+path, "Authorization", "Bearer s3cret")
		assert.Equal(t, want, code, path)
	}
	res, err := http.Post(f.web.URL+"/metrics", "text/plain", nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	req, _ := http.NewRequest(http.MethodPost, f.web.URL+"/healthz", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)

	open := start(t, map[string]host.Server{"every": pyServer(t)}, Options{})
	code, _ := get(t, open.web.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body := get(t, open.web.URL+"/healthz", "Host", "evil.example:80")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Equal(t, "Forbidden: Host \"evil.example:80\" is not loopback\n", body)
}

func TestCheckListen(t *testing.T) {
	for _, ok := range [][2]string{{"127.0.0.1:9090", ""}, {"[::1]:9090", ""}, {"localhost:9090", ""}, {"0.0.0.0:9090", "t"}, {":9090", "t"}} {
		assert.NoError(t, CheckListen(ok[0], ok[1]), ok[0])
	}
	assert.EqualError(t, CheckListen("0.0.0.0:9090", ""), "refusing to serve the admin listener on 0.0.0.0:9090 (0.0.0.0) without a bearer token: set --admin-token or CONDUIT_ADMIN_TOKEN, or use 127.0.0.1")
	assert.EqualError(t, CheckListen(":9090", ""), "refusing to serve the admin listener on :9090 (every interface) without a bearer token: set --admin-token or CONDUIT_ADMIN_TOKEN, or use 127.0.0.1")
	assert.EqualError(t, CheckListen("9090", ""), `admin address "9090": address 9090: missing port in address`)
}

// /events sends one event per server for its current state, then each
// change, as JSON; past MaxEventStreams a stream is refused (503) and
// counted.
func TestEvents(t *testing.T) {
	f := start(t, map[string]host.Server{"every": pyServer(t), "broken": crashing()}, Options{MaxEventStreams: 1})
	until(t, f.h, func(sts []host.Status) bool { return state(sts, "every") == host.StateReady })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.web.URL+"/events", nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	lines := bufio.NewScanner(res.Body)
	next := func() map[string]any {
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var ev map[string]any
				require.NoError(t, json.Unmarshal([]byte(data), &ev))
				return ev
			}
		}
		t.Fatal("the stream ended")
		return nil
	}
	first, second := next(), next()
	assert.Equal(t, "broken", first["server"])
	assert.Equal(t, "every", second["server"])
	assert.Equal(t, "ready", second["state"])
	assert.Equal(t, 1.0, second["tools"])
	// The crash loop goes on: its next states come, until it is parked.
	for ev := first; ev["state"] != "parked"; ev = next() {
		assert.Equal(t, "broken", ev["server"])
	}

	code, body := get(t, f.web.URL+"/events")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "Service Unavailable: 1 event streams are open already\n", body)
	assert.Equal(t, 1.0, value(t, scrape(t, f.web.URL), "conduit_admin_event_streams_refused_total", ""))
}

// The page keeps the last RecentEvents events.
func TestRecentBounded(t *testing.T) {
	r := &recent{max: 3}
	for i := range 10 {
		r.add(host.Event{Status: host.Status{Server: string(rune('a' + i))}})
	}
	var got []string
	for _, ev := range r.list() {
		got = append(got, ev.Server)
	}
	assert.Equal(t, []string{"j", "i", "h"}, got)
}

// An admin server made after the host's servers started counts the
// starts they already made: a parked server's are its restarts and the
// first.
func TestStartsBeforeTheAdminServer(t *testing.T) {
	m := NewMetrics()
	h, err := host.New(host.Config{Servers: map[string]host.Server{"broken": crashing()}}, host.Options{ServerOptions: m.ServerOptions})
	require.NoError(t, err)
	defer h.Close()
	until(t, h, func(sts []host.Status) bool { return state(sts, "broken") == host.StateParked })
	srv := New(h, m, Options{})
	web := httptest.NewServer(srv.Handler())
	defer func() { web.Close(); srv.Close() }()
	require.NoError(t, h.Restart("broken"))
	until(t, h, func(sts []host.Status) bool { return state(sts, "broken") == host.StateParked })
	require.NoError(t, h.Close())
	srv.Close() // its events are all counted
	assert.Equal(t, 10.0, value(t, scrape(t, web.URL), "conduit_server_starts_total", "server=broken"))
}

// The hook keeps the options' own Audit (conduit host --audit's file) and
// middleware: its own come after them, and the Audit before is still
// called with every record.
func TestServerOptionsKeepsHooks(t *testing.T) {
	m := NewMetrics()
	var audited []string
	mine := func(next conduit.MethodHandler) conduit.MethodHandler { return next }
	o := m.ServerOptions("s", conduit.Options{
		Audit:               func(r conduit.AuditRecord) { audited = append(audited, r.Method+" "+r.Outcome) },
		SendingMiddleware:   []conduit.Middleware{mine},
		ReceivingMiddleware: []conduit.Middleware{mine, mine},
	})
	assert.Len(t, o.SendingMiddleware, 2)
	assert.Len(t, o.ReceivingMiddleware, 3)
	o.Audit(conduit.AuditRecord{Method: "sampling/createMessage", Outcome: conduit.OutcomeBusy})
	o.Audit(conduit.AuditRecord{Method: "made/up", Outcome: "odd"})
	assert.Equal(t, []string{"sampling/createMessage busy", "made/up odd"}, audited)
	srv := httptest.NewServer(promHandler(m))
	defer srv.Close()
	fams := scrape(t, srv.URL)
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_requests_total", "method=sampling/createMessage,outcome=busy,server=s"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_server_requests_total", "method=other,outcome=other,server=s"))
}
