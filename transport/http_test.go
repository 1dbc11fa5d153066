package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

var _ interface {
	Conn
	Origin
	Session
	ToolHeaders
} = (*httpConn)(nil)

var _ Transport = (*HTTP)(nil)

// seenRequest is one HTTP request as a fake endpoint received it.
type seenRequest struct {
	method string // the HTTP method
	header http.Header
	body   []byte
	rpc    string // the JSON-RPC method of the body, if any
	id     string // the JSON-RPC id of the body, compact, if any
}

// endpoint is a hand-written MCP endpoint for exact wire checks: it records
// every request and answers through the test's handler.
type endpoint struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

func newEndpoint(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, req seenRequest)) *endpoint {
	t.Helper()
	ep := &endpoint{}
	ep.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := seenRequest{method: r.Method, header: r.Header.Clone(), body: body}
		var env struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &env) == nil {
			req.rpc = env.Method
			if len(env.ID) > 0 {
				req.id = compactJSON(env.ID)
			}
		}
		ep.mu.Lock()
		ep.seen = append(ep.seen, req)
		ep.mu.Unlock()
		handle(w, r, req)
	}))
	t.Cleanup(ep.Close)
	return ep
}

// requests returns what the endpoint received so far, optionally only one
// HTTP method.
func (ep *endpoint) requests(method string) []seenRequest {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var out []seenRequest
	for _, r := range ep.seen {
		if method == "" || r.method == method {
			out = append(out, r)
		}
	}
	return out
}

// request returns the POST of JSON-RPC method rpc.
func (ep *endpoint) request(t *testing.T, rpc string) seenRequest {
	t.Helper()
	for _, r := range ep.requests(http.MethodPost) {
		if r.rpc == rpc {
			return r
		}
	}
	t.Fatalf("no POST of %s", rpc)
	return seenRequest{}
}

// dial connects h (URL defaulting to ep) and closes the Conn at the end of
// the test.
func dial(t *testing.T, ep *endpoint, h HTTP) *httpConn {
	t.Helper()
	if h.URL == "" {
		h.URL = ep.URL
	}
	conn, err := h.Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*httpConn)
}

// send writes msg, compacted to one line as the runtime writes messages.
func send(t *testing.T, c Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, []byte(compactJSON([]byte(msg)))); err != nil {
		t.Fatalf("Write(%.60s): %v", msg, err)
	}
}

func next(t *testing.T, c Conn) Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return m
}

// quiet checks that nothing arrives for d.
func quiet(t *testing.T, c Conn, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if m, err := c.Read(ctx); err == nil {
		t.Fatalf("unexpected message %s (related %s)", m.Data, m.Related)
	}
}

// rpcMsg is a decoded JSON-RPC message.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(t *testing.T, m Message) rpcMsg {
	t.Helper()
	var r rpcMsg
	if err := json.Unmarshal(m.Data, &r); err != nil {
		t.Fatalf("message %q: %v", m.Data, err)
	}
	return r
}

// nextFailure reads the next message and checks it is the failure of
// request id: an error out of band, no JSON-RPC frame.
func nextFailure(t *testing.T, c Conn, id string) error {
	t.Helper()
	m := next(t, c)
	if m.Err == nil || len(m.Data) != 0 || m.Related != id {
		t.Fatalf("got %s (related %q, err %v), want the failure of %s", m.Data, m.Related, m.Err, id)
	}
	return m.Err
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func result(id, res string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, res)
}

// startSSE writes the headers of an event stream.
func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// event writes raw SSE text and flushes it.
func event(w http.ResponseWriter, text string) {
	io.WriteString(w, text)
	w.(http.Flusher).Flush()
}

// modernReq is a modern request body with the _meta triple.
func modernReq(id, method, params string) string {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = "{" + meta + "," + params + "}"
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
}

func TestHTTPConnect(t *testing.T) {
	bad := []HTTP{
		{URL: ""},
		{URL: "ftp://example.com/mcp"},
		{URL: "http://"},
		{URL: "mailto:someone@example.com"},
		{URL: "http://exa mple.com/"},
		{URL: "http://example.com/mcp", Header: http.Header{"Bad Name": {"x"}}},
		{URL: "http://example.com/mcp", Header: http.Header{"X-Ok": {"line\nbreak"}}},
	}
	for _, h := range bad {
		if c, err := h.Connect(context.Background()); err == nil {
			c.Close()
			t.Errorf("Connect(%q, %v) succeeded", h.URL, h.Header)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&HTTP{URL: "http://example.com/"}).Connect(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Connect with a cancelled ctx = %v", err)
	}

	for url, want := range map[string]string{
		"HTTP://Example.COM:8080/mcp?x=1#frag": "http://example.com:8080",
		"https://user:pw@MCP.example.com/mcp":  "https://mcp.example.com",
		"http://[::1]:9/":                      "http://[::1]:9",
	} {
		c, err := (&HTTP{URL: url}).Connect(context.Background())
		if err != nil {
			t.Fatalf("Connect(%q): %v", url, err)
		}
		if got := c.(Origin).Origin(); got != want {
			t.Errorf("Origin(%q) = %q, want %q", url, got, want)
		}
		c.Close()
	}
}

func TestHTTPModernHeaders(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		w.Header().Set("Mcp-Session-Id", "must-be-ignored")
		writeJSON(w, 200, result(req.id, `{}`))
	})
	c := dial(t, ep, HTTP{Header: http.Header{"X-Api-Key": {"k1"}, "Accept": {"text/html"}, "Mcp-Session-Id": {"x"}, "mcp-param-region": {"y"}}})

	// Before SetSession: the probe is modern because of its _meta.
	send(t, c, modernReq(`"d-1"`, "server/discover", ""))
	if r := decode(t, next(t, c)); compactJSON(r.ID) != `"d-1"` {
		t.Fatalf("discover answered %s", r.ID)
	}
	c.SetSession("2026-07-28", messages.EraModern)
	c.SetToolHeaders(map[string]map[string]string{"deploy": {
		"region": "Region", "greeting": "Greeting", "padded": "Text", "multi": "Lines",
		"sentinel": "Val", "count": "Count", "neg": "Neg", "asfloat": "AsFloat", "big": "Big",
		"frac": "Frac", "flag": "Flag", "off": "Off", "nothing": "Nothing", "absent": "Absent",
		"empty": "Empty", "obj": "Obj",
	}})

	send(t, c, modernReq("1", "tools/call", `"name":"deploy","arguments":{
		"region":"us-west1","greeting":"Hello, 世界","padded":" padded ","multi":"line1\nline2",
		"sentinel":"=?base64?literal?=","count":42,"neg":-7,"asfloat":42.0,"big":12345678901234567890123,
		"frac":1.5,"flag":true,"off":false,"nothing":null,"empty":"","obj":{"a":1}}`))
	send(t, c, modernReq("2", "resources/read", `"uri":"file:///tmp/ä.txt"`))
	send(t, c, modernReq("3", "prompts/get", `"name":"greet"`))
	send(t, c, modernReq("4", "tasks/get", `"taskId":"task-7"`))
	send(t, c, modernReq("5", "tools/list", ""))
	send(t, c, modernReq("6", "tools/call", `"name":"plain","arguments":{"region":"x"}`))
	send(t, c, modernReq("7", "tools/call", `"name":"=?base64?x?=","arguments":{}`))
	send(t, c, `{"jsonrpc":"2.0","id":8,"method":"ping"}`) // no _meta: the session's version
	for range 8 {
		next(t, c)
	}

	for _, r := range ep.requests("") {
		if r.method != http.MethodPost {
			t.Errorf("modern era sent %s", r.method)
		}
		h := r.header
		if got := h.Get("Accept"); got != "application/json, text/event-stream" {
			t.Errorf("%s: Accept = %q", r.rpc, got)
		}
		if got := h.Get("Content-Type"); got != "application/json" {
			t.Errorf("%s: Content-Type = %q", r.rpc, got)
		}
		if got := h.Get("X-Api-Key"); got != "k1" {
			t.Errorf("%s: extra header = %q", r.rpc, got)
		}
		if got := h.Get("Mcp-Protocol-Version"); got != "2026-07-28" {
			t.Errorf("%s: MCP-Protocol-Version = %q", r.rpc, got)
		}
		if got := h.Get("Mcp-Method"); got != r.rpc {
			t.Errorf("%s: Mcp-Method = %q", r.rpc, got)
		}
		if h.Get("Mcp-Session-Id") != "" || h.Get("Last-Event-Id") != "" {
			t.Errorf("%s: legacy header in the modern era: %v", r.rpc, h)
		}
	}

	names := map[string]string{"1": "deploy", "2": "=?base64?ZmlsZTovLy90bXAvw6QudHh0?=", "3": "greet", "4": "task-7",
		"5": "", "6": "plain", "7": "=?base64?PT9iYXNlNjQ/eD89?=", "8": ""}
	for _, r := range ep.requests(http.MethodPost) {
		if want, ok := names[r.id]; ok {
			if got, has := r.header["Mcp-Name"]; got == nil && want != "" || has && (len(got) != 1 || got[0] != want) {
				t.Errorf("request %s (%s): Mcp-Name = %q, want %q", r.id, r.rpc, got, want)
			}
		}
		if r.id != "1" {
			for k := range r.header {
				if strings.HasPrefix(k, "Mcp-Param-") {
					t.Errorf("request %s: unexpected %s", r.id, k)
				}
			}
		}
	}

	call := ep.request(t, "tools/call").header
	want := map[string]string{
		"Region":   "us-west1",
		"Greeting": "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"Text":     "=?base64?IHBhZGRlZCA=?=",
		"Lines":    "=?base64?bGluZTEKbGluZTI=?=",
		"Val":      "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"Count":    "42",
		"Neg":      "-7",
		"AsFloat":  "42",
		"Big":      "12345678901234567890123",
		"Flag":     "true",
		"Off":      "false",
		"Empty":    "",
	}
	for name, v := range want {
		if got := call.Values("Mcp-Param-" + name); len(got) != 1 || got[0] != v {
			t.Errorf("Mcp-Param-%s = %q, want %q", name, got, v)
		}
	}
	for _, name := range []string{"Frac", "Nothing", "Absent", "Obj"} {
		if got := call.Values("Mcp-Param-" + name); len(got) != 0 {
			t.Errorf("Mcp-Param-%s = %q, want no header", name, got)
		}
	}
	if got := ep.requests("")[len(ep.requests(""))-1].header.Get("Mcp-Protocol-Version"); got != "2026-07-28" {
		t.Errorf("request without _meta: version %q", got)
	}
}

func TestHTTPLegacySession(t *testing.T) {
	logs := &captureHandler{}
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method == http.MethodGet, r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "initialize":
			w.Header()["MCP-Session-Id"] = []string{"sess-1"} // any case
			writeJSON(w, 200, result(req.id, `{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}`))
		case req.rpc == "notifications/roots/list_changed":
			writeJSON(w, 400, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"not now"}}`)
		case req.id == "":
			w.WriteHeader(http.StatusAccepted)
		case req.rpc == "":
			w.WriteHeader(http.StatusAccepted) // our answer to a server request
		default:
			startSSE(w)
			event(w, "data: "+result(req.id, `{"tools":[]}`)+"\n\n")
		}
	})
	c := dial(t, ep, HTTP{Logger: slog.New(logs)})

	send(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	next(t, c)
	c.SetSession("2025-11-25", messages.EraLegacy)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if m := next(t, c); decode(t, m).Result == nil || m.Related != "1" {
		t.Fatalf("tools/list: %s related %q", m.Data, m.Related)
	}
	send(t, c, `{"jsonrpc":"2.0","id":"srv-1","result":{}}`)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`) // refused: logged only
	eventually(t, func() bool { return len(ep.requests(http.MethodGet)) > 0 })
	c.Close()

	init := ep.request(t, "initialize").header
	for _, k := range []string{"Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method"} {
		if v := init.Get(k); v != "" {
			t.Errorf("initialize has %s: %q", k, v)
		}
	}
	for _, r := range ep.requests("")[1:] {
		if got := r.header.Get("Mcp-Session-Id"); got != "sess-1" {
			t.Errorf("%s %s: Mcp-Session-Id = %q", r.method, r.rpc, got)
		}
		if got := r.header.Get("Mcp-Protocol-Version"); got != "2025-11-25" {
			t.Errorf("%s %s: MCP-Protocol-Version = %q", r.method, r.rpc, got)
		}
		if got := r.header.Get("Mcp-Method"); got != "" {
			t.Errorf("%s %s: legacy request has Mcp-Method %q", r.method, r.rpc, got)
		}
	}
	gets := ep.requests(http.MethodGet)
	if len(gets) != 1 || gets[0].header.Get("Accept") != "text/event-stream" || gets[0].header.Get("Last-Event-Id") != "" {
		t.Errorf("standalone GETs = %v, want one, 405 not retried", gets)
	}
	if dels := ep.requests(http.MethodDelete); len(dels) != 1 {
		t.Errorf("got %d DELETEs, want 1", len(dels))
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	var warnings []string
	for _, l := range logs.logs {
		if strings.HasPrefix(l, "WARN") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "400") || !strings.Contains(warnings[0], "not now") {
		t.Errorf("warnings = %q, want one about the 400", warnings)
	}
}

func TestHTTPEventStream(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		startSSE(w)
		event(w, ": a comment\n\n:keep-alive\n")
		event(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/progress\",\ndata:\"params\":{\"progressToken\":1,\"progress\":1}}\r\n\r\n")
		event(w, "event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"ignored\"}\n\n")
		event(w, "id: 1\ndata:\n\n") // priming: no message
		event(w, "retry: 10\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"e-1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n")
		event(w, "data: "+result(req.id, `{"content":[]}`)+"\n\n")
	})
	c := dial(t, ep, HTTP{})
	send(t, c, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)

	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`,
		`{"jsonrpc":"2.0","id":"e-1","method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
	}
	for _, w := range want {
		m := next(t, c)
		if string(m.Data) != w || m.Related != "7" {
			t.Errorf("got %s (related %q), want %s (related 7)", m.Data, m.Related, w)
		}
	}
	quiet(t, c, 100*time.Millisecond)
}

func TestHTTPResumption(t *testing.T) {
	closed := make(chan time.Time, 1)
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "":
			w.WriteHeader(http.StatusMethodNotAllowed) // no standalone stream
		case r.Method == http.MethodGet:
			startSSE(w)
			event(w, `id: e3`+"\ndata: "+result("3", `{"ok":true}`)+"\n\n")
		case req.rpc == "tools/call":
			startSSE(w)
			event(w, "id: e1\nretry: 500\ndata: \n\n")
			event(w, `id: e2`+"\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
			closed <- time.Now() // the handler returns: the stream ends without the response
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2025-11-25", messages.EraLegacy)
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`)

	if m := next(t, c); decode(t, m).Method != "notifications/progress" || m.Related != "3" {
		t.Fatalf("got %s related %q", m.Data, m.Related)
	}
	m := next(t, c)
	if r := decode(t, m); string(r.Result) != `{"ok":true}` || m.Related != "3" {
		t.Fatalf("got %s related %q, want the result on the resumed stream", m.Data, m.Related)
	}
	if waited := time.Since(<-closed); waited < 450*time.Millisecond {
		t.Errorf("resumed after %v, want the server's retry of 500ms", waited)
	}
	var resumed []seenRequest
	for _, r := range ep.requests(http.MethodGet) {
		if r.header.Get("Last-Event-Id") != "" {
			resumed = append(resumed, r)
		}
	}
	if len(resumed) != 1 {
		t.Fatalf("got %d resuming GETs, want 1", len(resumed))
	}
	h := resumed[0].header
	if h.Get("Last-Event-Id") != "e2" || h.Get("Accept") != "text/event-stream" || h.Get("Mcp-Protocol-Version") != "2025-11-25" {
		t.Errorf("resuming GET headers: %v", h)
	}
}

// A stream cut inside an event (its id line arrived, its blank line did
// not) resumes from the last event received whole: the cut event is
// replayed, not skipped.
func TestHTTPResumptionAfterCutEvent(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "e1":
			startSSE(w)
			event(w, "id: e2\ndata: "+result("3", `{"ok":true}`)+"\n\n")
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "tools/call":
			startSSE(w)
			event(w, "id: e1\nretry: 10\ndata: \n\n")
			event(w, "id: e2\ndata: "+result("3", `{"ok":true}`)+"\n") // cut before its blank line
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2025-11-25", messages.EraLegacy)
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow"}}`)

	m := next(t, c)
	if m.Err != nil {
		t.Fatalf("request failed: %v; want the result replayed on the resumed stream", m.Err)
	}
	if r := decode(t, m); string(r.Result) != `{"ok":true}` || m.Related != "3" {
		t.Fatalf("got %s related %q, want the result replayed on the resumed stream", m.Data, m.Related)
	}
	var resumed []string
	for _, r := range ep.requests(http.MethodGet) {
		if id := r.header.Get("Last-Event-Id"); id != "" {
			resumed = append(resumed, id)
		}
	}
	if strings.Join(resumed, ",") != "e1" {
		t.Errorf("resumed with Last-Event-ID %q, want e1 (the last event received whole)", resumed)
	}
}

func TestHTTPResumptionGivesUp(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method == http.MethodGet && strings.HasPrefix(r.Header.Get("Last-Event-ID"), "busy"):
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "":
			w.WriteHeader(http.StatusNotFound)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "busy":
			startSSE(w)
			event(w, "id: busy-1\nretry: 10\ndata:\n\n")
		case req.rpc == "gone":
			startSSE(w)
			event(w, "id: gone-1\nretry: 10\ndata:\n\n")
		case req.rpc == "noid":
			startSSE(w)
			event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n")
		}
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2025-11-25", messages.EraLegacy)

	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"busy"}`)
	if err := nextFailure(t, c, "1"); !strings.Contains(err.Error(), "could not be resumed (5 attempts)") {
		t.Errorf("busy: %v", err)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"gone"}`)
	if err := nextFailure(t, c, "2"); !strings.Contains(err.Error(), "404") {
		t.Errorf("gone: %v", err)
	}
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"noid"}`)
	next(t, c) // the log notification
	if err := nextFailure(t, c, "3"); err.Error() != "transport: the response stream ended before the response" {
		t.Errorf("noid: %v", err)
	}
	busy := 0
	for _, r := range ep.requests(http.MethodGet) {
		if r.header.Get("Last-Event-Id") == "busy-1" {
			busy++
		}
	}
	if busy != maxResumeAttempts {
		t.Errorf("%d resumption attempts, want %d", busy, maxResumeAttempts)
	}
}

// standaloneGets numbers the standalone stream's GETs an endpoint gets.
type standaloneGets struct {
	mu sync.Mutex
	n  int
}

// count accepts a POST (202, ok false), or numbers a GET from 1.
func (g *standaloneGets) count(w http.ResponseWriter, r *http.Request) (int, bool) {
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusAccepted)
		return 0, false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n++
	return g.n, true
}

func TestHTTPStandaloneStream(t *testing.T) {
	var gets standaloneGets
	held := make(chan struct{})
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		n, ok := gets.count(w, r)
		if !ok {
			return
		}
		startSSE(w)
		switch n {
		case 1:
			event(w, "retry: 50\nid: s1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
		case 2:
			event(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"p1\",\"method\":\"ping\"}\n\n")
			<-r.Context().Done() // held open until Close
			close(held)
		}
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2025-06-18", messages.EraLegacy)
	c.SetSession("2025-06-18", messages.EraLegacy) // no second stream

	for _, method := range []string{"notifications/tools/list_changed", "ping"} {
		m := next(t, c)
		if decode(t, m).Method != method || m.Related != "" {
			t.Errorf("got %s related %q, want %s unrelated", m.Data, m.Related, method)
		}
	}
	all := ep.requests(http.MethodGet)
	if len(all) != 2 || all[0].header.Get("Last-Event-Id") != "" || all[1].header.Get("Last-Event-Id") != "s1" {
		t.Errorf("GETs: %v", all)
	}
	c.Close()
	select {
	case <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the standalone stream open")
	}
}

// An event over the limit on the standalone stream has no request to fail:
// the message is lost, and the log says so at warning level.
func TestHTTPStandaloneEventTooLong(t *testing.T) {
	logs := &captureHandler{}
	var gets standaloneGets
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		n, ok := gets.count(w, r)
		if !ok {
			return
		}
		if n > 1 {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		startSSE(w)
		event(w, "retry: 10\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"r1\",\"method\":\"roots/list\",\"params\":{\"x\":\""+strings.Repeat("x", 2000)+"\"}}\n\n")
		<-r.Context().Done()
	})
	c := dial(t, ep, HTTP{MaxEventBytes: 1024, Logger: slog.New(logs)})
	c.SetSession("2025-11-25", messages.EraLegacy)
	eventually(t, func() bool { return len(ep.requests(http.MethodGet)) == 2 })
	c.Close()

	logs.mu.Lock()
	defer logs.mu.Unlock()
	var warnings []string
	for _, l := range logs.logs {
		if strings.HasPrefix(l, "WARN") {
			warnings = append(warnings, l)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "SSE event exceeds the limit of 1 KiB; raise transport.HTTP.MaxEventBytes") {
		t.Errorf("warnings = %q, want one about the event over the limit", warnings)
	}
}

func TestHTTPModernCancellation(t *testing.T) {
	cancelled := make(chan struct{})
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		if req.rpc != "tools/call" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		startSSE(w)
		event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		<-r.Context().Done()
		close(cancelled)
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2026-07-28", messages.EraModern)
	send(t, c, modernReq("9", "tools/call", `"name":"slow"`))
	next(t, c)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"timeout"}}`)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not see the stream close")
	}
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`) // unknown: dropped
	quiet(t, c, 100*time.Millisecond)
	if got := len(ep.requests("")); got != 1 {
		t.Errorf("got %d requests, want only the tools/call: %v", got, ep.requests(""))
	}
}

func TestHTTPLegacyCancellation(t *testing.T) {
	streamDone := make(chan struct{})
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch req.rpc {
		case "tools/call":
			startSSE(w)
			event(w, "id: x1\ndata:\n\n")
			<-r.Context().Done()
			close(streamDone)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	})
	c := dial(t, ep, HTTP{})
	send(t, c, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}`)
	// Cancel only once the server is serving it: a request aborted before
	// the server read it never reaches the handler (a flake under load).
	eventually(t, func() bool { return len(ep.requests(http.MethodPost)) == 1 })
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	if r := ep.request(t, "notifications/cancelled"); r.header.Get("Mcp-Method") != "" {
		t.Errorf("legacy cancellation has Mcp-Method")
	}
	select {
	case <-streamDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled request's stream stayed open")
	}
	quiet(t, c, 100*time.Millisecond)
}

// A request the server answers with a JSON-RPC error, in any HTTP status,
// gets that error (with our id). One that gets anything else fails out of
// band, with the reason: no JSON-RPC frame is made up.
func TestHTTPRequestFailures(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch req.rpc {
		case "e404":
			w.WriteHeader(http.StatusNotFound)
		case "e400":
			writeJSON(w, 400, `{"jsonrpc":"2.0","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2027-01-01"}}}`)
		case "e400null":
			writeJSON(w, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32020,"message":"Header mismatch"}}`)
		case "e200null":
			writeJSON(w, 200, `{"jsonrpc":"2.0","id":null,"error":{"code":-32602,"message":"Invalid params: no such tool"}}`)
		case "e500":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "e418":
			writeJSON(w, 418, `{"not":"json-rpc"}`)
		case "accepted":
			w.WriteHeader(http.StatusAccepted)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html></html>")
		case "short":
			startSSE(w)
			event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		case "other":
			writeJSON(w, 200, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`)
		}
	})
	c := dial(t, ep, HTTP{})
	c.SetSession("2026-07-28", messages.EraModern)

	for _, tc := range []struct {
		method, id string
		code       int
		message    string
		data       string
	}{
		{"e400", `"a"`, -32022, "Unsupported protocol version", `{"supported":["2026-07-28"],"requested":"2027-01-01"}`},
		{"e400null", "3", -32020, "Header mismatch", ``},
		{"e200null", "10", -32602, "Invalid params: no such tool", ``},
	} {
		send(t, c, modernReq(tc.id, tc.method, ""))
		m := next(t, c)
		r := decode(t, m)
		if compactJSON(r.ID) != tc.id || m.Related != tc.id || r.Error == nil || m.Err != nil {
			t.Errorf("%s: got %s related %q err %v", tc.method, m.Data, m.Related, m.Err)
			continue
		}
		if r.Error.Code != tc.code || r.Error.Message != tc.message || compactJSON(r.Error.Data) != tc.data {
			t.Errorf("%s: error %d %q %s, want %d %q %s", tc.method, r.Error.Code, r.Error.Message, r.Error.Data, tc.code, tc.message, tc.data)
		}
	}

	for _, tc := range []struct {
		method, id string
		message    string
		status     *HTTPStatusError // nil: not an HTTP status failure
	}{
		{"e404", "1", "transport: HTTP 404 Not Found", &HTTPStatusError{Status: 404}},
		{"e500", "4", "transport: HTTP 500 Internal Server Error: boom", &HTTPStatusError{Status: 500, ContentType: "text/plain; charset=utf-8", Body: "boom\n"}},
		{"e418", "5", `transport: HTTP 418 I'm a teapot: {"not":"json-rpc"}`, &HTTPStatusError{Status: 418, ContentType: "application/json", Body: `{"not":"json-rpc"}`}},
		{"accepted", "6", "transport: HTTP 202 Accepted: the server sent no response to the request", &HTTPStatusError{Status: 202}},
		{"html", "7", `transport: HTTP 200 OK with Content-Type "text/html", neither JSON nor an event stream`, &HTTPStatusError{Status: 200, ContentType: "text/html", Body: "<html></html>"}},
		{"short", "8", "transport: the response stream ended before the response", nil},
		{"other", "9", "transport: the JSON response body did not answer the request", nil},
	} {
		send(t, c, modernReq(tc.id, tc.method, ""))
		if tc.method == "short" || tc.method == "other" {
			if m := next(t, c); decode(t, m).Method == "" {
				t.Errorf("%s: got %s, want the notification first", tc.method, m.Data)
			}
		}
		err := nextFailure(t, c, tc.id)
		if err.Error() != tc.message {
			t.Errorf("%s: %q, want %q", tc.method, err, tc.message)
		}
		var se *HTTPStatusError
		switch {
		case tc.status == nil && errors.As(err, &se):
			t.Errorf("%s: an HTTPStatusError %+v", tc.method, se)
		case tc.status == nil:
		case !errors.As(err, &se):
			t.Errorf("%s: %v is no HTTPStatusError", tc.method, err)
		default:
			want := *tc.status
			want.URL = ep.URL
			if *se != want {
				t.Errorf("%s: %+v, want %+v", tc.method, *se, want)
			}
		}
	}

	// An endpoint nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dead := dial(t, nil, HTTP{URL: "http://" + addr + "/mcp"})
	send(t, dead, modernReq("1", "server/discover", ""))
	err = nextFailure(t, dead, "1")
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("unreachable: %v, want the dial error", err)
	}
	send(t, dead, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) // logged, not fatal
}

func TestHTTPLimits(t *testing.T) {
	big := strings.Repeat("x", 2000)
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch req.rpc {
		case "bigevent":
			startSSE(w)
			event(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"x\":\""+big+"\"}}\n\n")
			<-r.Context().Done() // the client drops the stream
		case "bigline":
			startSSE(w)
			event(w, ": "+big) // no end of line in sight
			<-r.Context().Done()
		case "bigbody":
			writeJSON(w, 200, result(req.id, `"`+big+`"`))
		case "silent":
			startSSE(w)
			<-r.Context().Done()
		case "keepalive":
			startSSE(w)
			for range 6 {
				time.Sleep(100 * time.Millisecond)
				event(w, ":\n\n")
			}
			event(w, "data: "+result(req.id, "{}")+"\n\n")
		case "server/discover": // the handshake waits ConnectTimeout for headers
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	})
	c := dial(t, ep, HTTP{MaxEventBytes: 1024, MaxBodyBytes: 1024, IdleTimeout: 200 * time.Millisecond, ConnectTimeout: 200 * time.Millisecond})
	c.SetSession("2026-07-28", messages.EraModern)

	cases := []struct{ method, id, message string }{
		{"bigevent", "1", "transport: SSE event exceeds the limit of 1 KiB; raise transport.HTTP.MaxEventBytes"},
		{"bigline", "2", "transport: SSE event exceeds the limit of 1 KiB; raise transport.HTTP.MaxEventBytes"},
		{"bigbody", "3", "transport: JSON response body exceeds the limit of 1 KiB; raise transport.HTTP.MaxBodyBytes"},
		{"silent", "4", "transport: the response stream ended before the response: stream idle for 200ms"},
		{"server/discover", "5", "no response headers within 200ms"},
	}
	for _, tc := range cases {
		send(t, c, modernReq(tc.id, tc.method, ""))
		if err := nextFailure(t, c, tc.id); !strings.Contains(err.Error(), tc.message) {
			t.Errorf("%s: %q, want %q", tc.method, err, tc.message)
		}
	}
	send(t, c, modernReq("6", "keepalive", ""))
	if r := decode(t, next(t, c)); r.Error != nil {
		t.Errorf("keep-alive comments did not keep the stream: %s", r.Error.Message)
	}
}

// A request's answer may come as one JSON body once the work is done, long
// after ConnectTimeout: the request waits for it as long as its call does
// (the call's deadline cancels it, closing the exchange). The handshake,
// which the client never cancels, is still bounded by ConnectTimeout.
func TestHTTPSlowJSONAnswerWaitsBeyondConnectTimeout(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		select {
		case <-r.Context().Done():
		case <-time.After(500 * time.Millisecond): // the work
			writeJSON(w, 200, result(req.id, `{"content":[]}`))
		}
	})
	c := dial(t, ep, HTTP{ConnectTimeout: 100 * time.Millisecond})
	c.SetSession("2026-07-28", messages.EraModern)
	send(t, c, modernReq("1", "tools/call", ""))
	if r := decode(t, next(t, c)); r.Error != nil || string(r.Result) != `{"content":[]}` {
		t.Fatalf("tools/call: %+v, want its result", r)
	}
	send(t, c, modernReq("2", "server/discover", ""))
	if err := nextFailure(t, c, "2"); !strings.Contains(err.Error(), "no response headers within 100ms") {
		t.Errorf("server/discover: %v, want the ConnectTimeout", err)
	}
}

// legacySession initializes c (the endpoint gives it a session) and sets
// it to 2025-11-25.
func legacySession(t *testing.T, c *httpConn) {
	t.Helper()
	send(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
	next(t, c)
	c.SetSession("2025-11-25", messages.EraLegacy)
}

// sessionEnded checks that Read ends with ErrSessionTerminated (an EOF).
func sessionEnded(t *testing.T, c *httpConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m, err := c.Read(ctx); !errors.Is(err, ErrSessionTerminated) || !errors.Is(err, io.EOF) {
		t.Errorf("Read after the session ended = %s, %v; want ErrSessionTerminated", m.Data, err)
	}
}

func TestHTTPSessionTerminated(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			writeJSON(w, 200, result(req.id, `{}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	c := dial(t, ep, HTTP{})
	legacySession(t, c)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	// No error response for id 1: Read ends, and the call fails with it.
	sessionEnded(t, c)
	// A new initialize never carries the old session.
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`)
	eventually(t, func() bool { return len(ep.requests(http.MethodPost)) == 3 })
	inits := 0
	for _, r := range ep.requests(http.MethodPost) {
		if r.rpc == "initialize" {
			inits++
			if r.header.Get("Mcp-Session-Id") != "" || r.header.Get("Mcp-Protocol-Version") != "" {
				t.Errorf("initialize %s carries session headers: %v", r.id, r.header)
			}
		}
	}
	if inits != 2 {
		t.Errorf("%d initialize POSTs, want 2", inits)
	}
}

// A 404 to a GET that carried the session id (the standalone stream, or
// the resumption of a response stream) also means the session is gone: an
// idle client whose only traffic is the standalone stream must learn it.
func TestHTTPSessionTerminatedOnGet(t *testing.T) {
	for _, tc := range []struct{ name, call string }{{"standalone", ""}, {"resumption", "tools/call"}} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
				switch {
				case r.Method == http.MethodGet && tc.call != "" && r.Header.Get("Last-Event-ID") == "":
					w.WriteHeader(http.StatusMethodNotAllowed)
				case r.Method == http.MethodGet:
					w.WriteHeader(http.StatusNotFound)
				case req.rpc == "initialize":
					w.Header().Set("Mcp-Session-Id", "s-1")
					writeJSON(w, 200, result(req.id, `{}`))
				case req.rpc == "tools/call":
					startSSE(w)
					event(w, "id: e1\nretry: 10\ndata:\n\n") // then the stream drops
				default:
					w.WriteHeader(http.StatusAccepted)
				}
			})
			c := dial(t, ep, HTTP{})
			legacySession(t, c)
			if tc.call != "" {
				send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
				if err := nextFailure(t, c, "1"); !strings.Contains(err.Error(), "404") {
					t.Errorf("call: %v, want the failed resumption", err)
				}
			}
			sessionEnded(t, c)
		})
	}
}

func TestHTTPClose(t *testing.T) {
	var mu sync.Mutex
	var deleted http.Header
	handlerDone := make(chan struct{})
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method == http.MethodDelete:
			mu.Lock()
			deleted = r.Header.Clone()
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-9")
			writeJSON(w, 200, result(req.id, `{}`))
		default:
			startSSE(w)
			<-r.Context().Done()
			close(handlerDone)
		}
	})
	c := dial(t, ep, HTTP{})
	legacySession(t, c)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"forever"}}`)

	readErr := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		readErr <- err
	}()
	time.Sleep(50 * time.Millisecond)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Close()
		}()
	}
	wg.Wait()
	if err := <-readErr; !errors.Is(err, ErrClosed) {
		t.Errorf("blocked Read = %v, want ErrClosed", err)
	}
	select {
	case <-handlerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a response stream open")
	}
	mu.Lock()
	if deleted.Get("Mcp-Session-Id") != "s-9" || deleted.Get("Mcp-Protocol-Version") != "2025-11-25" {
		t.Errorf("DELETE headers: %v", deleted)
	}
	mu.Unlock()
	if err := c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v", err)
	}
	if _, err := c.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close = %v", err)
	}
	if err := c.Write(context.Background(), []byte(`not json`)); err == nil {
		t.Error("Write of a non-JSON message succeeded")
	}
}

func TestHTTPReadContext(t *testing.T) {
	c := dial(t, nil, HTTP{URL: "http://127.0.0.1:1/"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Read = %v, want the deadline", err)
	}
}

// The limits default to 64 MiB (the end-to-end tests of the CLI send 50 MB
// through them), and an error names the limit and the field to raise.
func TestHTTPDefaultLimits(t *testing.T) {
	big := `"` + strings.Repeat("x", 2000) + `"`
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch req.rpc {
		case "bigbody":
			writeJSON(w, 200, result(req.id, big))
		case "bigevent":
			startSSE(w)
			event(w, "data: "+result(req.id, big)+"\n\n")
		}
	})
	if c := dial(t, ep, HTTP{}); c.maxBody != 64<<20 || c.maxEvent != 64<<20 {
		t.Errorf("default limits: body %d, event %d; want 64 MiB", c.maxBody, c.maxEvent)
	}

	small := dial(t, ep, HTTP{MaxBodyBytes: 1024, MaxEventBytes: 1024})
	small.SetSession("2026-07-28", messages.EraModern)
	for i, tc := range []struct{ method, what, setting string }{
		{"bigbody", "JSON response body", "transport.HTTP.MaxBodyBytes"},
		{"bigevent", "SSE event", "transport.HTTP.MaxEventBytes"},
	} {
		id := strconv.Itoa(i + 1)
		send(t, small, modernReq(id, tc.method, ""))
		err := nextFailure(t, small, id)
		want := MessageTooLongError{What: tc.what, Limit: 1024, Setting: tc.setting}
		var tooLong *MessageTooLongError
		if !errors.As(err, &tooLong) || *tooLong != want {
			t.Errorf("%s: %#v, want %#v", tc.method, err, want)
		}
	}
}

// queuedBytes is the Data the connection has queued for Read.
func queuedBytes(c *httpConn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.in.items {
		n += len(m.Data)
	}
	return n
}

// A stream is not read on while Read's caller is MaxQueuedBytes behind:
// the server's writes wait (it used to be read whole into the queue, 64 MiB
// here), and everything arrives in order once Read catches up.
func TestHTTPStreamWaitsWhileTheQueueIsFull(t *testing.T) {
	const events, size = 64, 1 << 20
	payload := strings.Repeat("x", size-80)
	var written atomic.Int64
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		startSSE(w)
		for i := range events {
			if _, err := fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"%d %s\"}}\n\n", i, payload); err != nil {
				return
			}
			written.Add(1)
		}
		event(w, "data: "+result(req.id, `{"content":[]}`)+"\n\n")
	})
	c := dial(t, ep, HTTP{})
	send(t, c, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	eventually(t, func() bool { return queuedBytes(c) > MaxQueuedBytes-size })
	time.Sleep(200 * time.Millisecond) // the stream would be read on meanwhile
	if got := queuedBytes(c); got > MaxQueuedBytes+size {
		t.Fatalf("%d MiB queued with nobody reading (%d events written), want at most %d MiB", got>>20, written.Load(), (MaxQueuedBytes+size)>>20)
	}
	for i := range events {
		m := next(t, c)
		if want := fmt.Sprintf(`"data":"%d `, i); !strings.Contains(string(m.Data[:80]), want) || m.Related != "7" {
			t.Fatalf("message %d: got %.80s (related %q)", i, m.Data, m.Related)
		}
	}
	if m := decode(t, next(t, c)); string(m.ID) != "7" || m.Result == nil {
		t.Fatalf("got %+v, want the result of 7", m)
	}
}
