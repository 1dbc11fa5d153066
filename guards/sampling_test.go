package guards

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

const userMsg = `{"role":"user","content":{"type":"text","text":"hi"}}`

func samplingParams(extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return `{"messages":[` + userMsg + `]` + extra + `}`
}

func TestSamplingMaxTokens(t *testing.T) {
	cases := []struct {
		name, maxTokens string // "" = absent
		cfg             SamplingConfig
		want            int // 0 = refused with -32602
	}{
		{"missing", "", SamplingConfig{}, 0},
		{"null", `null`, SamplingConfig{}, 0},
		{"zero", `0`, SamplingConfig{}, 0},
		{"minus zero", `-0`, SamplingConfig{}, 0},
		{"negative", `-5`, SamplingConfig{}, 0},
		{"fraction", `1.5`, SamplingConfig{}, 0},
		{"integral fraction", `100.0`, SamplingConfig{}, 0},
		{"exponent", `1e3`, SamplingConfig{}, 0},
		{"string", `"100"`, SamplingConfig{}, 0},
		{"bool", `true`, SamplingConfig{}, 0},
		{"array", `[100]`, SamplingConfig{}, 0},
		{"small", `100`, SamplingConfig{}, 100},
		{"one", `1`, SamplingConfig{}, 1},
		{"at limit", `4096`, SamplingConfig{}, 4096},
		{"clamped", `5000`, SamplingConfig{}, 4096},
		{"huge clamped", `99999999999999999999999999`, SamplingConfig{}, 4096},
		{"custom clamp", `100`, SamplingConfig{MaxTokens: 50}, 50},
		{"custom below", `10`, SamplingConfig{MaxTokens: 50}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			extra := ""
			if c.maxTokens != "" {
				extra = `"maxTokens":` + c.maxTokens
			}
			p := New(Config{Sampling: c.cfg})
			req, r := p.Before(legacyIn(messages.MethodCreateMessage, samplingParams(extra)))
			if c.want == 0 {
				wantRefusal(t, r, codeInvalid, "")
				if !strings.Contains(r.Err.Message, "maxTokens") {
					t.Fatalf("message %q does not name maxTokens", r.Err.Message)
				}
				return
			}
			wantOK(t, r)
			if got := req.(*messages.SamplingRequest).Params.MaxTokens; got != c.want {
				t.Fatalf("MaxTokens = %d, want %d", got, c.want)
			}
		})
	}
}

func TestSamplingShape(t *testing.T) {
	cases := []struct {
		name, params string
	}{
		{"params not an object", `[1,2]`},
		{"params a string", `"x"`},
		{"messages missing", `{"maxTokens":10}`},
		{"messages null", `{"messages":null,"maxTokens":10}`},
		{"messages object", `{"messages":{"role":"user"},"maxTokens":10}`},
		{"messages string", `{"messages":"hi","maxTokens":10}`},
		{"role system", `{"messages":[{"role":"system","content":{"type":"text","text":"x"}}],"maxTokens":10}`},
		{"role missing", `{"messages":[{"content":{"type":"text","text":"x"}}],"maxTokens":10}`},
		{"content missing", `{"messages":[{"role":"user"}],"maxTokens":10}`},
		{"content null", `{"messages":[{"role":"user","content":null}],"maxTokens":10}`},
		{"content string", `{"messages":[{"role":"user","content":"hi"}],"maxTokens":10}`},
		{"includeContext number", samplingParams(`"maxTokens":10,"includeContext":3`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, r := New(Config{}).Before(legacyIn(messages.MethodCreateMessage, c.params))
			wantRefusal(t, r, codeInvalid, "")
		})
	}
	// Absent params are {}: messages missing.
	_, r := New(Config{}).Before(legacyIn(messages.MethodCreateMessage, ``))
	wantRefusal(t, r, codeInvalid, "Invalid params: messages must be an array")
	// An empty array is an array.
	_, r = New(Config{}).Before(legacyIn(messages.MethodCreateMessage, `{"messages":[],"maxTokens":5}`))
	wantOK(t, r)
}

func TestSamplingIncludeContext(t *testing.T) {
	cases := []struct {
		value   string // "" = absent
		context bool
		want    string
	}{
		{"", false, ""},
		{"", true, ""},
		{`"none"`, false, "none"},
		{`"thisServer"`, false, "none"},
		{`"allServers"`, false, "none"},
		{`"thisServer"`, true, "thisServer"},
		{`"allServers"`, true, "allServers"},
		{`"everything"`, false, "none"},
		{`"everything"`, true, "none"},
		{`""`, false, ""},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.value, c.context), func(t *testing.T) {
			extra := `"maxTokens":10`
			if c.value != "" {
				extra += `,"includeContext":` + c.value
			}
			raw := samplingParams(extra)
			p := New(Config{Sampling: SamplingConfig{Context: c.context}})
			req, r := p.Before(legacyIn(messages.MethodCreateMessage, raw))
			wantOK(t, r)
			sr := req.(*messages.SamplingRequest)
			if sr.Params.IncludeContext != c.want {
				t.Fatalf("includeContext = %q, want %q", sr.Params.IncludeContext, c.want)
			}
			if string(sr.Raw) != raw {
				t.Fatalf("Raw changed: %s", sr.Raw)
			}
		})
	}
}

func TestSamplingIdle(t *testing.T) {
	const msg = "Sampling rejected: no call in flight"
	in := legacyIn(messages.MethodCreateMessage, okSampling)
	in.CallsInFlight = 0
	_, r := New(Config{}).Before(in)
	wantRefusal(t, r, -1, msg)
	if r.Outcome != OutcomeRefused {
		t.Fatalf("outcome %q", r.Outcome)
	}

	_, r = New(Config{Sampling: SamplingConfig{RejectionCode: -32099}}).Before(in)
	wantRefusal(t, r, -32099, msg)

	_, r = New(Config{Sampling: SamplingConfig{AllowIdle: true}}).Before(in)
	wantOK(t, r)

	in.CallsInFlight = 1
	_, r = New(Config{}).Before(in)
	wantOK(t, r)

	// Modern input always belongs to a call.
	mod := input(messages.MethodCreateMessage, v0728, messages.EraModern, okSampling)
	mod.CallsInFlight = 0
	_, r = New(Config{}).Before(mod)
	wantOK(t, r)
}

func TestSamplingTools(t *testing.T) {
	tools := `"tools":[{"name":"read","inputSchema":{"type":"object"}}]`
	choice := `"toolChoice":{"mode":"auto"}`
	cases := []struct {
		name, extra string
		declared    bool
		ok          bool
	}{
		{"tools undeclared", tools, false, false},
		{"toolChoice undeclared", choice, false, false},
		{"both undeclared", tools + "," + choice, false, false},
		{"empty tools undeclared", `"tools":[]`, false, false},
		{"null tools", `"tools":null,"toolChoice":null`, false, true},
		{"tools declared", tools + "," + choice, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(Config{Sampling: SamplingConfig{Tools: c.declared}})
			_, r := p.Before(legacyIn(messages.MethodCreateMessage, samplingParams(`"maxTokens":10,`+c.extra)))
			if c.ok {
				wantOK(t, r)
			} else {
				wantRefusal(t, r, codeInvalid, "")
			}
		})
	}
}

// encoding/json matches keys ignoring case, so "Tools" reaches Params.Tools
// as "tools" does: the capability check must see it too, or the handler
// gets tools the client never declared.
func TestSamplingToolsAnyCase(t *testing.T) {
	const (
		toolsMsg  = "Invalid params: tools require the sampling.tools capability, which this client did not declare"
		choiceMsg = "Invalid params: toolChoice requires the sampling.tools capability, which this client did not declare"
	)
	cases := []struct{ extra, msg string }{
		{`"Tools":[{"name":"read","inputSchema":{"type":"object"}}]`, toolsMsg},
		{`"TOOLS":[]`, toolsMsg},
		{`"tools":null,"tOOls":[{"name":"read","inputSchema":{"type":"object"}}]`, toolsMsg},
		{`"ToolChoice":{"mode":"auto"}`, choiceMsg},
		{`"toolChoice":null,"TOOLCHOICE":{"mode":"required"}`, choiceMsg},
	}
	for _, c := range cases {
		in := legacyIn(messages.MethodCreateMessage, samplingParams(`"maxTokens":10,`+c.extra))
		v, r := New(Config{}).Before(in)
		if r == nil {
			req := v.(*messages.SamplingRequest)
			t.Fatalf("%s: accepted, the handler gets tools %s, toolChoice %s", c.extra, req.Params.Tools, req.Params.ToolChoice)
		}
		wantRefusal(t, r, codeInvalid, c.msg)
	}
}

// sampling.tools does not exist in 2025-06-18, so a client that declares it
// does not advertise it there (era.Declared.Capabilities): tools in a
// 2025-06-18 session are refused as undeclared.
func TestSamplingTools0618(t *testing.T) {
	p := New(Config{Sampling: SamplingConfig{Tools: true}})
	extra := `"maxTokens":10,"tools":[{"name":"read","inputSchema":{"type":"object"}}]`
	_, r := p.Before(input(messages.MethodCreateMessage, v0618, messages.EraLegacy, samplingParams(extra)))
	wantRefusal(t, r, codeInvalid, "Invalid params: tools require the sampling.tools capability, which this client did not declare")
	_, r = p.Before(input(messages.MethodCreateMessage, v0618, messages.EraLegacy, samplingParams(`"maxTokens":10,"toolChoice":{"mode":"auto"}`)))
	wantRefusal(t, r, codeInvalid, "Invalid params: toolChoice requires the sampling.tools capability, which this client did not declare")
	_, r = p.Before(input(messages.MethodCreateMessage, v1125, messages.EraLegacy, samplingParams(extra)))
	wantOK(t, r)
}

// toolLoop builds messages with n assistant tool_use turns.
func toolLoop(n int) string {
	parts := []string{userMsg}
	for i := range n {
		parts = append(parts,
			fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"t%d","name":"read","input":{}}]}`, i),
			fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","toolUseId":"t%d","content":[{"type":"text","text":"ok"}]}]}`, i))
	}
	// Assistant turns without tool_use do not count.
	parts = append(parts, `{"role":"assistant","content":{"type":"text","text":"thinking"}}`, userMsg)
	return `{"messages":[` + strings.Join(parts, ",") + `],"maxTokens":10,"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`
}

func TestSamplingToolIterations(t *testing.T) {
	p := New(Config{Sampling: SamplingConfig{Tools: true}})
	_, r := p.Before(legacyIn(messages.MethodCreateMessage, toolLoop(5)))
	wantOK(t, r)
	_, r = p.Before(legacyIn(messages.MethodCreateMessage, toolLoop(6)))
	wantRefusal(t, r, -1, "Sampling rejected: more than 5 tool iterations")

	p = New(Config{Sampling: SamplingConfig{Tools: true, MaxToolIterations: 2, RejectionCode: -32042}})
	_, r = p.Before(legacyIn(messages.MethodCreateMessage, toolLoop(2)))
	wantOK(t, r)
	_, r = p.Before(legacyIn(messages.MethodCreateMessage, toolLoop(3)))
	wantRefusal(t, r, -32042, "Sampling rejected: more than 2 tool iterations")

	// tool_use in user turns is not an assistant iteration.
	userTools := `{"messages":[` + strings.Repeat(`{"role":"user","content":[{"type":"tool_use","id":"x","name":"n","input":{}}]},`, 8) + userMsg + `],"maxTokens":10}`
	_, r = New(Config{}).Before(legacyIn(messages.MethodCreateMessage, userTools))
	wantOK(t, r)
}

func TestSamplingRequestValue(t *testing.T) {
	in := legacyIn(messages.MethodCreateMessage, samplingParams(`"maxTokens":9000,"systemPrompt":"be nice","includeContext":"allServers","temperature":0.5`))
	in.Context.RelatedRequestID = messages.IntID(7)
	req, r := New(Config{}).Before(in)
	wantOK(t, r)
	sr := req.(*messages.SamplingRequest)
	if sr.ServerID != "srv" || sr.RelatedRequestID != messages.IntID(7) || sr.Era != messages.EraLegacy {
		t.Fatalf("context lost: %+v", sr.RequestContext)
	}
	p := sr.Params
	if p.MaxTokens != 4096 || p.IncludeContext != "none" || p.SystemPrompt != "be nice" || *p.Temperature != 0.5 || len(p.Messages) != 1 || p.Messages[0].Content.Blocks[0].Text != "hi" {
		t.Fatalf("params: %+v", p)
	}
	if string(sr.Raw) != string(in.Params) {
		t.Fatalf("Raw changed")
	}
}

func TestSamplingAfter(t *testing.T) {
	p := New(Config{})
	in := legacyIn(messages.MethodCreateMessage, okSampling)
	req, _ := p.Before(in)

	_, r := p.After(in, req, (*messages.CreateMessageResult)(nil))
	wantRefusal(t, r, codeInt, "")
	_, r = p.After(in, req, nil)
	wantRefusal(t, r, codeInt, "")
	_, r = p.After(in, req, &messages.CreateMessageResult{Role: "assistant", Content: messages.Text("x")})
	wantRefusal(t, r, codeInt, "Internal error: sampling result has no model")
	_, r = p.After(in, req, &messages.CreateMessageResult{Role: "assistant", Model: "m"})
	wantRefusal(t, r, codeInt, "Internal error: sampling result has no content")

	orig := &messages.CreateMessageResult{Model: "m", Content: messages.Text("x"), StopReason: "endTurn"}
	res, r := p.After(in, req, orig)
	wantOK(t, r)
	got := res.(*messages.CreateMessageResult)
	if got.Role != "assistant" || got.Model != "m" || got.StopReason != "endTurn" {
		t.Fatalf("result: %+v", got)
	}
	if orig.Role != "" {
		t.Fatalf("handler's value mutated")
	}
	if want := `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m","stopReason":"endTurn"}`; mustJSON(t, got) != want {
		t.Fatalf("wire = %s", mustJSON(t, got))
	}
	// A complete result is sent as it is: no copy.
	whole := &messages.CreateMessageResult{Role: "user", Model: "m", Content: messages.Text("x")}
	if res, r := p.After(in, req, whole); r != nil || res != any(whole) {
		t.Fatalf("a complete result: got %p (%v), want the handler's %p", res, r, whole)
	}
}

// TestJSONIntegerIsTheGrammar holds jsonInteger to the grammar it
// implements, -?(0|[1-9][0-9]*), over every string of up to 3 bytes from
// an alphabet of the interesting ones.
func TestJSONIntegerIsTheGrammar(t *testing.T) {
	grammar := regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	alphabet := []string{"", "-", "0", "1", "9", ".", "e", "+", " ", "a"}
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range alphabet {
				for _, d := range alphabet {
					s := a + b + c + d
					if got, want := jsonInteger(s), grammar.MatchString(s); got != want {
						t.Errorf("jsonInteger(%q) = %v, want %v", s, got, want)
					}
				}
			}
		}
	}
}
