package demoserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// rawPeer drives the server with raw JSON-RPC over a connection from its
// Connect.
type rawPeer struct {
	t    *testing.T
	srv  *demoserver.Server
	conn transport.Conn
}

// start returns a peer connected to a new server; the test's cleanup
// closes the client's end, then the server, which must report no error.
func start(t *testing.T) *rawPeer {
	t.Helper()
	srv := demoserver.New()
	conn, err := srv.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		assert.NoError(t, srv.Close())
	})
	return &rawPeer{t: t, srv: srv, conn: conn}
}

func (p *rawPeer) send(msg string) {
	p.t.Helper()
	require.NoError(p.t, p.conn.Write(context.Background(), []byte(msg)))
}

// next reads the next message from the server.
func (p *rawPeer) next() map[string]any {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := p.conn.Read(ctx)
	require.NoError(p.t, err)
	var v map[string]any
	require.NoError(p.t, json.Unmarshal(m.Data, &v), string(m.Data))
	return v
}

// call sends a request and returns its response, skipping notifications.
func (p *rawPeer) call(id int, method, params string) map[string]any {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	for {
		v := p.next()
		if v["method"] == nil {
			require.EqualValues(p.t, id, v["id"], "%v", v)
			return v
		}
	}
}

func rawResult(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	r, ok := resp["result"].(map[string]any)
	require.True(t, ok, "not a result: %v", resp)
	return r
}

func rawErrorCode(t *testing.T, resp map[string]any) float64 {
	t.Helper()
	e, ok := resp["error"].(map[string]any)
	require.True(t, ok, "not an error: %v", resp)
	return e["code"].(float64)
}

func modernMeta(caps string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// The modern era: discovery, version and capability errors, MRTR with a
// sealed requestState, a task, logs and progress only when asked for.
func TestModern(t *testing.T) {
	p := start(t)
	form := `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

	// Before anything: a request that is neither modern nor after initialize.
	assert.EqualValues(t, messages.CodeInvalidRequest, rawErrorCode(t, p.call(1, "tools/list", `{}`)))

	d := rawResult(t, p.call(2, "server/discover", `{`+modernMeta(`{}`)+`}`))
	assert.Equal(t, "complete", d["resultType"])
	assert.Contains(t, d["supportedVersions"], "2026-07-28")
	assert.Equal(t, "conduit-demo", d["_meta"].(map[string]any)["io.modelcontextprotocol/serverInfo"].(map[string]any)["name"])

	bad := p.call(3, "server/discover", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`)
	assert.EqualValues(t, messages.CodeUnsupportedProtocolVersion, rawErrorCode(t, bad))
	assert.Equal(t, []any{"2026-07-28"}, bad["error"].(map[string]any)["data"].(map[string]any)["supported"])

	tools := rawResult(t, p.call(4, "tools/list", `{`+modernMeta(`{}`)+`}`))["tools"].([]any)
	assert.Len(t, tools, 10)

	// A tool needing a capability the request does not declare: -32021.
	missing := p.call(5, "tools/call", `{"name":"profile_form",`+modernMeta(`{}`)+`}`)
	assert.EqualValues(t, messages.CodeMissingClientCapability, rawErrorCode(t, missing))

	// MRTR: two rounds, the first answer carried in requestState.
	r1 := rawResult(t, p.call(6, "tools/call", `{"name":"two_step",`+modernMeta(form)+`}`))
	assert.Equal(t, "input_required", r1["resultType"])
	req := r1["inputRequests"].(map[string]any)["project"].(map[string]any)
	assert.Equal(t, "elicitation/create", req["method"])
	state1, _ := json.Marshal(r1["requestState"])
	r2 := rawResult(t, p.call(7, "tools/call", `{"name":"two_step","inputResponses":{"project":{"action":"accept","content":{"name":"loom"}}},"requestState":`+string(state1)+`,`+modernMeta(form)+`}`))
	assert.Equal(t, "input_required", r2["resultType"])
	assert.Contains(t, r2["inputRequests"].(map[string]any)["confirm"].(map[string]any)["params"].(map[string]any)["message"], `"loom"`)
	state2, _ := json.Marshal(r2["requestState"])
	r3 := rawResult(t, p.call(8, "tools/call", `{"name":"two_step","inputResponses":{"confirm":{"action":"accept","content":{"create":true,"visibility":"public"}}},"requestState":`+string(state2)+`,`+modernMeta(form)+`}`))
	assert.Equal(t, "complete", r3["resultType"])
	assert.Contains(t, r3["content"].([]any)[0].(map[string]any)["text"], `Created the public project "loom"`)

	// A requestState that was tampered with, or belongs to another tool.
	tampered := strings.Replace(string(state2), "demo1.", "demo1.x", 1)
	assert.EqualValues(t, messages.CodeInvalidParams, rawErrorCode(t, p.call(9, "tools/call", `{"name":"two_step","requestState":`+tampered+`,`+modernMeta(form)+`}`)))
	assert.EqualValues(t, messages.CodeInvalidParams, rawErrorCode(t, p.call(10, "tools/call", `{"name":"background_job","requestState":`+string(state2)+`,`+modernMeta(`{"elicitation":{}}`)+`}`)))

	// Tasks: created, polled to input_required, updated, polled to completed.
	task := rawResult(t, p.call(11, "tools/call", `{"name":"background_job",`+modernMeta(form)+`}`))
	assert.Equal(t, "task", task["resultType"])
	id := task["taskId"].(string)
	get := func(n int) map[string]any {
		return rawResult(t, p.call(n, "tasks/get", `{"taskId":"`+id+`",`+modernMeta(form)+`}`))
	}
	assert.Equal(t, "working", get(12)["status"])
	ir := get(13)
	assert.Equal(t, "input_required", ir["status"])
	assert.Contains(t, ir["inputRequests"], "approve-export")
	rawResult(t, p.call(14, "tasks/update", `{"taskId":"`+id+`","inputResponses":{"approve-export":{"action":"accept","content":{"approve":true}}},`+modernMeta(form)+`}`))
	assert.Equal(t, "working", get(15)["status"])
	done := get(16)
	assert.Equal(t, "completed", done["status"])
	assert.Contains(t, done["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"], "Export finished")
	assert.EqualValues(t, messages.CodeMissingClientCapability, rawErrorCode(t, p.call(17, "tasks/get", `{"taskId":"`+id+`",`+modernMeta(`{}`)+`}`)))

	// Logs and progress only when the request asks for them.
	p.send(`{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"progress","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info","progressToken":"p1"}}}`)
	var methods []string
	for {
		v := p.next()
		if v["method"] == nil {
			break
		}
		methods = append(methods, v["method"].(string))
	}
	assert.Equal(t, []string{"notifications/progress", "notifications/message", "notifications/progress", "notifications/message", "notifications/progress", "notifications/message", "notifications/progress", "notifications/message"}, methods)
	quiet := p.call(19, "tools/call", `{"name":"noisy_logs",`+modernMeta(`{}`)+`}`)
	assert.Contains(t, rawResult(t, quiet)["content"].([]any)[0].(map[string]any)["text"], "asked for no logs")

	// No ping, no logging/setLevel in the modern era.
	assert.EqualValues(t, messages.CodeMethodNotFound, rawErrorCode(t, p.call(20, "ping", `{`+modernMeta(`{}`)+`}`)))
}

// The legacy era: initialize, the server's own requests inside a call, a
// refusal, a missing capability, a cancelled call.
func TestLegacy(t *testing.T) {
	p := start(t)
	init := rawResult(t, p.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"roots":{},"sampling":{}},"clientInfo":{"name":"raw","version":"0"}}`))
	assert.Equal(t, "2025-11-25", init["protocolVersion"])
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	rawResult(t, p.call(2, "ping", `{}`))
	rawResult(t, p.call(3, "logging/setLevel", `{"level":"debug"}`))

	// The tool sends roots/list as a request of its own, then answers.
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"workspace"}}`)
	req := p.next()
	assert.Equal(t, "roots/list", req["method"])
	reqID, _ := json.Marshal(req["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,"result":{"roots":[{"uri":"file:///srv/repo","name":"repo"}]}}`)
	res := rawResult(t, p.next())
	assert.Equal(t, "The client shares 1 root(s):\n  file:///srv/repo (repo)", res["content"].([]any)[0].(map[string]any)["text"])
	assert.Nil(t, res["resultType"])

	// The client refuses a sampling request: the tool reports it.
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"plan_with_tools"}}`)
	req = p.next()
	assert.Equal(t, "sampling/createMessage", req["method"])
	assert.NotNil(t, req["params"].(map[string]any)["tools"])
	reqID, _ = json.Marshal(req["id"])
	p.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,"error":{"code":-32602,"message":"no tools here"}}`)
	res = rawResult(t, p.next())
	assert.Equal(t, true, res["isError"])
	assert.Contains(t, res["content"].([]any)[0].(map[string]any)["text"], "-32602 no tools here")

	// Elicitation was not declared: a tool error naming what is needed.
	res = rawResult(t, p.call(6, "tools/call", `{"name":"profile_form"}`))
	assert.Equal(t, true, res["isError"])
	assert.Equal(t, map[string]any{"requiredCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}}, res["structuredContent"])

	// The client cancels a call waiting for its answer: no response comes.
	p.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"summarise"}}`)
	req = p.next()
	assert.Equal(t, "sampling/createMessage", req["method"])
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)
	cancelled := p.next()
	assert.Equal(t, "notifications/cancelled", cancelled["method"])
	assert.Equal(t, req["id"], cancelled["params"].(map[string]any)["requestId"])
	rawResult(t, p.call(8, "ping", `{}`)) // the next message is ping's answer, not tool 7's
}
