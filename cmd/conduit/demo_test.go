package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// The demo end to end, in process: every step's header and result, clean
// logs, and a summary row per input request with its outcome.
func TestDemo(t *testing.T) {
	for _, tc := range []struct {
		era  string
		want []string // era-specific lines
	}{
		{"modern", []string{
			"era      modern, protocol 2026-07-28 (pinned with --era modern)",
			"[key profile]",
			"two rounds of input_required, the first answer carried in the sealed requestState (modern)",
			"task     task-1 working (Preparing the export)",
			"ran as task task-1",
			"error    tools/call: protocol: input request \"plan\" refused: jsonrpc error -32602",
		}},
		{"legacy", []string{
			"era      legacy, protocol 2025-11-25 (pinned with --era legacy: initialize, no probe)",
			`[request "demo-1"]`,
			"two elicitation/create requests while the call was open (legacy)",
			"ran as a plain tool call",
			"The client refused the completion with tools (it did not declare sampling.tools): -32602",
		}},
	} {
		t.Run(tc.era, func(t *testing.T) {
			start := time.Now()
			r := runInProcess(t, "demo", "--era", tc.era)
			require.Equal(t, exitOK, r.code, r.String())
			assert.Less(t, time.Since(start), 10*time.Second)
			assert.Empty(t, r.stderr)
			for i, st := range demoSteps {
				assert.Contains(t, r.stdout, fmt.Sprintf("[%d/10] %s: %s\n", i+1, st.tool, st.about))
			}
			for _, want := range append(tc.want,
				"Profile saved:\n             name        \"Ada Lovelace\"\n             email       \"ada@example.com\"",
				"             height      1.5\n",
				"             channels    [\"email\"]\n",
				"host xn--80ak6aa92e.com: punycode (IDN), off the server's origin",
				"host dashboard.conduit-demo.example.com.session-7f3a.example: off the server's origin",
				"The client declined to open https://xn--80ak6aa92e.com/connect: nothing was opened.",
				"(maxTokens 4096, includeContext none)",
				"Summary (by conduit-demo-scripted): Conduit answers",
				"refused  -32602 Invalid params: tools require the sampling.tools capability",
				"=> refused by the client, as expected",
				"The client shares 1 root(s):\n             file://",
				`answer   accept {"name":"analytical-engine"}`,
				`answer   accept {"create":true,"visibility":"private"}`,
				`answer   accept {"approve":true}`,
				"Export finished: 3 tables, 1,234 rows (approved;",
				"progress 1/4 Indexing conduit.go\n  log      [info] indexer: indexed conduit.go\n",
				"progress 4/4 Indexing guards/form.go\n",
				"Indexed 4 files.",
				// The noisy logs, cleaned.
				"log      [error] disk: ERROR disk almost full (and the screen was cleared)\n",
				"log      [warning] term: an OSC sequence set the window title; this link hid a URL\n",
				"log      [notice] auth: access level: user // admin only",
				`log      [info] {"file":"invisible.txt","msg":"one entry [error] conduit: a forged second line and a carriage return"}`,
				"10 steps, all as expected (9 ok, 1 refused). 9 input requests: 8 answered, 1 refused.",
			) {
				assert.Contains(t, r.stdout, want)
			}
			assert.Equal(t, 9, strings.Count(r.stdout, "=> ok\n"))
			for _, bad := range []string{"\x1b", "\x07", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u2060", "\r"} {
				assert.NotContains(t, r.stdout+r.stderr, bad, "%+q in the output", bad)
			}
			summary := r.stdout[strings.Index(r.stdout, "\nSummary ("):]
			for _, row := range []string{
				`profile_form +ok +elicitation \(form\) +answered +accept \(12 fields\)`,
				`link_account +ok +elicitation \(url\) +answered +decline`,
				`open_dashboard +ok +elicitation \(url\) +answered +decline`,
				`summarise +ok +sampling +answered +"Conduit answers`,
				`plan_with_tools +refused +sampling +refused +-32602 `,
				`workspace +ok +roots +answered +file://`,
				`two_step +ok +elicitation \(form\) +answered +accept \{"name"`,
				`\n +elicitation \(form\) +answered +accept \{"create"`,
				`background_job +ok +elicitation \(form\) +answered +accept \{"approve":true\}`,
				`progress +ok +- +- +4 progress notifications, 4 log entries, sanitised`,
				`noisy_logs +ok +- +- +4 log entries, sanitised`,
			} {
				assert.Regexp(t, regexp.MustCompile(row), summary)
			}
		})
	}
}

// --era auto finds the modern era by the probe; the task ran as a task.
func TestDemoAutoIsModern(t *testing.T) {
	r := runInProcess(t, "demo")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "era      modern, protocol 2026-07-28 (found by server/discover, which the demo server answers)")
	assert.Contains(t, r.stdout, "conduit demo --era legacy")
	assert.Contains(t, r.stdout, "(ran as a task)")
}

// With an answers file that only has sampling, the other kinds are not
// offered: the server says so (-32021 modern, a tool error legacy), and
// that is not a failure of the demo.
func TestDemoAnswersFile(t *testing.T) {
	answers := writeFile(t, "answers.json", `{"sampling": {"result": {"content": {"type": "text", "text": "scripted summary"}}}}`)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			r := runInProcess(t, "demo", "--era", era, "--answers", answers, "--log-level", "error")
			require.Equal(t, exitOK, r.code, r.String())
			assert.Contains(t, r.stdout, "handler  scripted from "+answers)
			assert.Contains(t, r.stdout, "Summary (by scripted): scripted summary")
			assert.Contains(t, r.stdout, "This tool needs elicitation (form mode), which the client did not declare.")
			assert.Contains(t, r.stdout, "This tool needs roots, which the client did not declare.")
			assert.Contains(t, r.stdout, "log      [error] disk: ERROR disk almost full")
			assert.NotContains(t, r.stdout, "[warning] term")
			assert.Contains(t, r.stdout, "10 steps, all as expected (3 ok, 1 refused, 6 not offered). 2 input requests: 1 answered, 1 refused.")
			assert.Regexp(t, `workspace +not offered +- +- +needs \{"roots":\{\}\}\n`, r.stdout)
			assert.Contains(t, r.stdout, `=> not offered: the server needs {"elicitation":{"url":{}}}, which this client does not declare`)
		})
	}
}

// An answers file whose form answer does not fit: the guards refuse it,
// and the task whose approval was refused is cancelled.
func TestDemoRefusedTaskInputIsCancelled(t *testing.T) {
	answers := writeFile(t, "answers.json", `{"elicitation": {"action": "accept", "content": {"username": "ada"}}}`)
	r := runInProcess(t, "demo", "--answers", answers)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, `refused  -32603 Internal error: elicitation answer does not fit the schema: field "username" is not in the schema`)
	assert.Contains(t, r.stdout, "task     task-1 cancelled with tasks/cancel: its input was not given")
}

func TestDemoUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "extra"},
		{"demo", "--json"},
		{"demo", "--era", "ancient"},
		{"demo", "--answers", "/nonexistent/answers.json"},
	} {
		r := runInProcess(t, args...)
		assert.Equal(t, exitUsage, r.code, "%v\n%s", args, r)
		assert.Empty(t, r.stdout, "%v", args)
	}
	r := runInProcess(t, "demo", "--help")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "--era legacy shows the legacy flow")
	assert.NotContains(t, r.stdout, "--json")
}

// The built-in handler's form answers fit the forms of the demo server,
// in every revision that has them.
func TestDemoFormAnswerFits(t *testing.T) {
	for _, v := range []string{messages.Version20251125, messages.Version20260728} {
		form, err := guards.ParseForm(v, json.RawMessage(profileSchema))
		require.NoError(t, err)
		content, err := form.Complete(demoFormAnswer(json.RawMessage(profileSchema)))
		require.NoError(t, err)
		assert.Len(t, content, len(profileFields))
	}
	for _, schema := range []string{
		`{"type":"object","properties":{"code":{"type":"string","minLength":8,"maxLength":8}},"required":["code"]}`,
		`{"type":"object","properties":{"n":{"type":"string","minLength":20}},"required":["n"]}`,
		`{"type":"object","properties":{"n":{"type":"string","maxLength":3}},"required":["n"]}`,
		`{"type":"object","properties":{"when":{"type":"string","format":"date-time"}},"required":["when"]}`,
		`{"type":"object","properties":{"i":{"type":"integer","minimum":7}},"required":["i"]}`,
		`{"type":"object","properties":{"i":{"type":"integer","maximum":-3}},"required":["i"]}`,
		`{"type":"object","properties":{"x":{"type":"number","minimum":0.01,"maximum":0.02}},"required":["x"]}`,
		`{"type":"object","properties":{"m":{"type":"array","minItems":3,"items":{"type":"string","enum":["a","b","c","d"]}}},"required":["m"]}`,
		`{"type":"object","properties":{"m":{"type":"array","maxItems":1,"items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}},"required":["m"]}`,
	} {
		form, err := guards.ParseForm(messages.Version20251125, json.RawMessage(schema))
		require.NoError(t, err, schema)
		_, err = form.Complete(demoFormAnswer(json.RawMessage(schema)))
		assert.NoError(t, err, schema)
	}
}

// rawPeer drives the demo server with raw JSON-RPC over a memory pair.
type rawPeer struct {
	t    *testing.T
	conn transport.Conn
	done chan error
}

func startDemoServer(t *testing.T) *rawPeer {
	t.Helper()
	client, server := transport.NewMemoryPair()
	p := &rawPeer{t: t, conn: client, done: make(chan error, 1)}
	srv := newDemoServer(server)
	go func() { p.done <- srv.Serve(context.Background()) }()
	t.Cleanup(func() {
		_ = client.Close()
		select {
		case err := <-p.done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("the demo server did not stop")
		}
	})
	return p
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

func TestDemoServerModern(t *testing.T) {
	p := startDemoServer(t)
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
	assert.Len(t, tools, len(demoSteps))

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
	assert.Contains(t, ir["inputRequests"], taskApprovalKey)
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

func TestDemoServerLegacy(t *testing.T) {
	p := startDemoServer(t)
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
