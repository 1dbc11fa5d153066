package transport

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/messages"
)

// sdkServer serves server over Streamable HTTP with the go-sdk handler and
// records the HTTP methods it receives.
func sdkServer(t *testing.T, server *mcp.Server, opts *mcp.StreamableHTTPOptions) (url string, methods func() []string) {
	t.Helper()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, opts)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Mcp-Session-Id"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// readResponse reads until the response to id, returning it and what came
// before.
func readResponse(t *testing.T, c Conn, id string) (rpcMsg, []Message) {
	t.Helper()
	var before []Message
	for {
		m := next(t, c)
		r := decode(t, m)
		if r.Method == "" && compactJSON(r.ID) == id {
			return r, before
		}
		before = append(before, m)
	}
}

func TestHTTPWithSDKModern(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{
		Name: "deploy",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"region":{"type":"string","x-mcp-header":"Region"},
			"count":{"type":"integer","x-mcp-header":"Count"},
			"note":{"type":"string"}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Region string `json:"region"`
		}
		json.Unmarshal(req.Params.Arguments, &args)
		req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "p1", Progress: 1})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed to " + args.Region}}}, nil
	})
	url, methods := sdkServer(t, server, &mcp.StreamableHTTPOptions{Stateless: true})
	c := dial(t, nil, HTTP{URL: url})

	send(t, c, modernReq(`"probe"`, "server/discover", ""))
	r, _ := readResponse(t, c, `"probe"`)
	if r.Error != nil || !strings.Contains(string(r.Result), "2026-07-28") {
		t.Fatalf("server/discover: %s %+v", r.Result, r.Error)
	}
	c.SetSession("2026-07-28", messages.EraModern)

	call := func(id string) string {
		return modernReq(id, "tools/call", `"name":"deploy","arguments":{"region":"Zürich ünd 東京","count":3,"note":null}`)
	}
	// Without the tool's header map the server sees no Mcp-Param-Region:
	// its -32020 comes through as the answer.
	send(t, c, call("1"))
	if r, _ := readResponse(t, c, "1"); r.Error == nil || r.Error.Code != -32020 {
		t.Fatalf("call without Mcp-Param-*: %s %+v", r.Result, r.Error)
	}
	c.SetToolHeaders(map[string]map[string]string{"deploy": {"region": "Region", "count": "Count"}})
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy",
		"arguments":{"region":"Zürich ünd 東京","count":3,"note":null},
		"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	r, before := readResponse(t, c, "2")
	if r.Error != nil || !strings.Contains(string(r.Result), "deployed to Zürich ünd 東京") {
		t.Fatalf("tools/call: %s %+v", r.Result, r.Error)
	}
	if len(before) != 1 || decode(t, before[0]).Method != "notifications/progress" {
		t.Errorf("before the result: %d messages, want the progress notification", len(before))
	}
	for _, m := range before {
		if m.Related != "2" {
			t.Errorf("%s related %q, want 2", m.Data, m.Related)
		}
	}
	// A method the server lacks: 404 with -32601 passes through.
	send(t, c, modernReq("3", "nope/nothing", ""))
	if r, _ := readResponse(t, c, "3"); r.Error == nil || r.Error.Code != -32601 {
		t.Fatalf("unknown method: %s %+v", r.Result, r.Error)
	}
	c.Close()
	for _, m := range methods() {
		if m != "POST " {
			t.Errorf("modern era sent %q", m)
		}
	}
}

func TestHTTPWithSDKLegacy(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Bounded: the SDK's session Close (our DELETE) waits for this
			// handler, so a test that fails before answering must not hang.
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         "name?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + res.Content["name"].(string)}}}, nil
		})
	url, methods := sdkServer(t, server, &mcp.StreamableHTTPOptions{})
	c := dial(t, nil, HTTP{URL: url})

	send(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`)
	if r, _ := readResponse(t, c, "0"); r.Error != nil {
		t.Fatalf("initialize: %+v", r.Error)
	}
	c.SetSession("2025-11-25", messages.EraLegacy)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)

	m := next(t, c)
	ask := decode(t, m)
	if ask.Method != "elicitation/create" || m.Related != "1" {
		t.Fatalf("got %s related %q, want elicitation/create related to 1", m.Data, m.Related)
	}
	send(t, c, `{"jsonrpc":"2.0","id":`+compactJSON(ask.ID)+`,"result":{"action":"accept","content":{"name":"Ada"}}}`)
	r, _ := readResponse(t, c, "1")
	if r.Error != nil || !strings.Contains(string(r.Result), "hello Ada") {
		t.Fatalf("tools/call: %s %+v", r.Result, r.Error)
	}
	// The standalone stream is opened in the background: it may still be
	// on its way when the call is done.
	eventually(t, func() bool {
		return slices.ContainsFunc(methods(), func(m string) bool { return strings.HasPrefix(m, "GET ") })
	})
	c.Close()

	seen := methods()
	if seen[0] != "POST " {
		t.Errorf("initialize carried a session id: %q", seen[0])
	}
	sid := strings.TrimPrefix(seen[len(seen)-1], "DELETE ")
	if !strings.HasPrefix(seen[len(seen)-1], "DELETE ") || sid == "" {
		t.Fatalf("last request %q, want a DELETE of the session", seen[len(seen)-1])
	}
	gets := 0
	for _, s := range seen[1:] {
		if !strings.HasSuffix(s, " "+sid) {
			t.Errorf("request %q without the session id %s", s, sid)
		}
		if strings.HasPrefix(s, "GET ") {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d GETs, want the one standalone stream", gets)
	}
}

func TestHTTPWithSDKResumption(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sdk", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 100 * time.Millisecond})
			select { // the answer is ready while the client waits to resume
			case <-time.After(50 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	url, methods := sdkServer(t, server, &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	c := dial(t, nil, HTTP{URL: url})

	send(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	readResponse(t, c, "0")
	c.SetSession("2025-11-25", messages.EraLegacy)
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":"slow-1","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
	m := next(t, c)
	if r := decode(t, m); r.Error != nil || !strings.Contains(string(r.Result), "done") || m.Related != `"slow-1"` {
		t.Fatalf("got %s related %q", m.Data, m.Related)
	}
	c.Close()
	gets := 0
	for _, s := range methods() {
		if strings.HasPrefix(s, "GET ") {
			gets++
		}
	}
	if gets < 2 {
		t.Errorf("%d GETs, want the standalone stream and a resumption", gets)
	}
}
