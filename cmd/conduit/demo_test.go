package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
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
			"error    tools/call: refused: input request \"plan\" refused: jsonrpc error -32602",
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

// --sampling-command answers the demo's sampling with --answers, as for
// conduit call (it was ignored).
func TestDemoSamplingCommand(t *testing.T) {
	answers := writeFile(t, "answers.json", `{"roots": ["/srv/repo"]}`)
	r := runInProcess(t, "demo", "--era", "legacy", "--answers", answers, "--sampling-command", "echo Written by a command.", "--yes")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "Summary (by sampling-command): Written by a command.")
	assert.Regexp(t, `summarise +ok +sampling +answered +"Written by a command." \(model sampling-command\)`, r.stdout)
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
		// The built-in handler answers sampling itself: a command given
		// to it would be ignored.
		{"demo", "--sampling-command", "echo hi"},
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
		form, err := guards.ParseForm(v, json.RawMessage(demoserver.ProfileSchema))
		require.NoError(t, err)
		content, err := form.Complete(demoFormAnswer(form.FormFields()))
		require.NoError(t, err)
		assert.Len(t, content, len(demoserver.ProfileFields()))
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
		_, err = form.Complete(demoFormAnswer(form.FormFields()))
		assert.NoError(t, err, schema)
	}
}
