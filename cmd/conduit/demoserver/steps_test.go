package demoserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/transport"
)

// allCaps declares every capability but the tasks extension, so every tool
// asks for its input (background_job as a plain tool).
const allCaps = `{"roots":{},"sampling":{"tools":{}},"elicitation":{"form":{},"url":{}}}`

// answer is what a client answers to one input request in these tests:
// URLs declined, forms filled in, a tool call from the model when tools
// are offered, one root.
func answer(t *testing.T, method string, params map[string]any) string {
	t.Helper()
	switch method {
	case "elicitation/create":
		if params["mode"] == "url" {
			return `{"action":"decline"}`
		}
		msg, _ := params["message"].(string)
		switch {
		case msg == "Set up your demo profile.":
			return `{"action":"accept","content":{"name":"Ada Lovelace","email":"ada@example.com","language":"en","topics":["go"]}}`
		case strings.HasPrefix(msg, "Step 1 of 2"):
			return `{"action":"accept","content":{"name":"loom"}}`
		case strings.HasPrefix(msg, "Step 2 of 2"):
			return `{"action":"accept","content":{"create":true,"visibility":"public"}}`
		case strings.HasPrefix(msg, "Approve the nightly export"):
			return `{"action":"accept","content":{"approve":true}}`
		}
	case "sampling/createMessage":
		if params["tools"] != nil {
			return `{"role":"assistant","content":{"type":"tool_use","id":"u1","name":"read_file","input":{"path":"README.md"}},"model":"m1"}`
		}
		return `{"role":"assistant","content":{"type":"text","text":"Short."},"model":"m1"}`
	case "roots/list":
		return `{"roots":[{"uri":"file:///srv/repo","name":"repo"}]}`
	}
	t.Fatalf("unexpected input request %s %v", method, params)
	return ""
}

// session is one era's way to call a tool, answering its input requests.
type session struct {
	p      *rawPeer
	modern bool
	nextID int
}

func newSession(t *testing.T, modern bool) *session {
	s := &session{p: start(t), modern: modern, nextID: 1}
	if !modern {
		rawResult(t, s.p.call(s.id(), "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+allCaps+`,"clientInfo":{"name":"raw","version":"0"}}`))
		s.p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return s
}

func (s *session) id() int { s.nextID++; return s.nextID }

// callTool calls tool until it completes and returns its first text block
// and how many input requests and notifications the server sent for it.
func (s *session) callTool(t *testing.T, tool string) (text string, inputs, notes int) {
	t.Helper()
	extra := ""
	for {
		id := s.id()
		params := fmt.Sprintf(`{"name":%q%s}`, tool, extra)
		if s.modern {
			params = fmt.Sprintf(`{"name":%q%s,%s}`, tool, extra, modernMeta(allCaps))
		}
		s.p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params))
		var resp map[string]any
		for resp == nil {
			v := s.p.next()
			method, _ := v["method"].(string)
			switch {
			case method != "" && v["id"] != nil: // a legacy server request
				inputs++
				params, _ := v["params"].(map[string]any)
				reqID, _ := json.Marshal(v["id"])
				s.p.send(`{"jsonrpc":"2.0","id":` + string(reqID) + `,"result":` + answer(t, method, params) + `}`)
			case method != "":
				notes++
			default:
				require.EqualValues(t, id, v["id"], "%v", v)
				resp = v
			}
		}
		r := rawResult(t, resp)
		if r["resultType"] != "input_required" {
			if s.modern {
				assert.Equal(t, "complete", r["resultType"])
			} else {
				assert.Nil(t, r["resultType"])
			}
			return r["content"].([]any)[0].(map[string]any)["text"].(string), inputs, notes
		}
		require.True(t, s.modern, "input_required in the legacy era: %v", r)
		responses := map[string]json.RawMessage{}
		for key, req := range r["inputRequests"].(map[string]any) {
			inputs++
			req := req.(map[string]any)
			params, _ := req["params"].(map[string]any)
			responses[key] = json.RawMessage(answer(t, req["method"].(string), params))
		}
		rs, _ := json.Marshal(responses)
		state, _ := json.Marshal(r["requestState"])
		extra = `,"inputResponses":` + string(rs) + `,"requestState":` + string(state)
	}
}

// Every tool in each era, as the demo calls them: the result, how many
// input requests it took, and Counts agreeing with what the client saw.
func TestEveryToolInEachEra(t *testing.T) {
	profile := "Profile saved:\n" +
		"  name        \"Ada Lovelace\"\n" +
		"  email       \"ada@example.com\"\n" +
		"  language    \"en\"\n" +
		"  topics      [\"go\"]"
	for _, tc := range []struct {
		tool          string
		want          string // both eras, unless wantLegacy is set
		wantLegacy    string
		inputs        int
		notesLegacy   int // the legacy session logs at info; modern requests ask for no logs
		noisyLogsTail bool
	}{
		{tool: "profile_form", want: profile, inputs: 1},
		{tool: "link_account", want: "The client declined to open https://xn--80ak6aa92e.com/connect: nothing was opened.", inputs: 1},
		{tool: "open_dashboard", want: "The client declined to open https://dashboard.conduit-demo.example.com.session-7f3a.example/home: nothing was opened.", inputs: 1},
		{tool: "summarise", want: "Summary (by m1): Short.", inputs: 1},
		{tool: "plan_with_tools", want: `The model (m1) wants to call read_file {"path":"README.md"}.`, inputs: 1},
		{tool: "workspace", want: "The client shares 1 root(s):\n  file:///srv/repo (repo)", inputs: 1},
		{tool: "two_step",
			want:       `Created the public project "loom", asked in two rounds of input_required, the first answer carried in the sealed requestState (modern).`,
			wantLegacy: `Created the public project "loom", asked in two elicitation/create requests while the call was open (legacy).`,
			inputs:     2},
		{tool: "background_job", want: "Export finished: 3 tables, 1,234 rows (approved; ran as a plain tool call).", inputs: 1},
		{tool: "progress", want: "Indexed 4 files. (No progressToken was given, so no progress was reported.)", notesLegacy: 4},
		{tool: "noisy_logs", want: "Sent these log entries (escaped here); the lines above are what the client showed:", notesLegacy: 4, noisyLogsTail: true},
	} {
		for _, modern := range []bool{true, false} {
			name := map[bool]string{true: "modern", false: "legacy"}[modern]
			t.Run(tc.tool+"/"+name, func(t *testing.T) {
				s := newSession(t, modern)
				text, inputs, notes := s.callTool(t, tc.tool)
				want, wantNotes := tc.want, tc.notesLegacy
				if !modern && tc.wantLegacy != "" {
					want = tc.wantLegacy
				}
				if modern {
					wantNotes = 0
				}
				if tc.noisyLogsTail {
					lines := strings.Split(text, "\n")
					assert.Equal(t, want, lines[0])
					assert.Len(t, lines, 5+map[bool]int{true: 1, false: 0}[modern], text)
					assert.Equal(t, modern, strings.HasSuffix(text, "\n(The request asked for no logs, so none were sent.)"), text)
				} else {
					assert.Equal(t, want, text)
				}
				assert.Equal(t, tc.inputs, inputs, "input requests")
				assert.Equal(t, wantNotes, notes, "notifications")
				assert.Equal(t, demoserver.Counts{Notifications: int64(wantNotes), InputRequests: int64(tc.inputs)}, s.p.srv.Counts())
			})
		}
	}
}

// Close cancels a tool call waiting for the client's answer (the client is
// told with notifications/cancelled), ends the connection and waits; a
// later Connect fails.
func TestCloseCancelsWaitingCalls(t *testing.T) {
	srv := demoserver.New()
	conn, err := srv.Connect(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	p := &rawPeer{t: t, srv: srv, conn: conn}
	rawResult(t, p.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"0"}}`))
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"summarise"}}`)
	req := p.next()
	require.Equal(t, "sampling/createMessage", req["method"])

	require.NoError(t, srv.Close())
	cancelled := p.next()
	assert.Equal(t, "notifications/cancelled", cancelled["method"])
	assert.Equal(t, req["id"], cancelled["params"].(map[string]any)["requestId"])
	_, err = conn.Read(context.Background())
	assert.ErrorIs(t, err, io.EOF, "the server's end is closed")

	_, err = srv.Connect(context.Background())
	assert.ErrorIs(t, err, transport.ErrClosed)
	assert.NoError(t, srv.Close(), "a second Close")
}
