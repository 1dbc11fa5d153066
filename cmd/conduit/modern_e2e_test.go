package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modernAnswers = `{"sampling":    {"result": {"role": "assistant", "content": {"type": "text", "text": "Bonjour"}, "model": "scripted"}},
 "elicitation": {"action": "accept", "content": {"name": "Ada"}},
 "roots":       ["file:///home/me/notes"]}`

// conduit call runs MRTR against the everything-server at 2026-07-28: the
// era is found by the probe (--era auto), all three kinds of input are
// answered in one round, and each is audited with its key.
func TestE2EModernMRTR(t *testing.T) {
	answers := writeFile(t, "answers.json", modernAnswers)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	r := runCLI(t, "call", "--era", "auto", "-v", "--answers", answers, "--audit", audit,
		"test_input_required_result_multiple_inputs", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Bonjour Ada — 1 root(s) visible\n", r.stdout)
	assert.Contains(t, r.stderr, "protocol_version=2026-07-28 era=modern")
	recs := readAudit(t, audit)
	require.Len(t, recs, 3)
	keys := map[string]string{}
	for _, rec := range recs {
		assert.Equal(t, "modern", rec["era"])
		assert.Equal(t, "answered", rec["outcome"])
		keys[rec["key"].(string)] = rec["method"].(string)
	}
	assert.Equal(t, map[string]string{"user_name": "elicitation/create", "greeting": "sampling/createMessage", "client_roots": "roots/list"}, keys)
}

func TestE2EModernTwoRoundsAndPinnedVersion(t *testing.T) {
	answers := writeFile(t, "answers.json", `{"elicitation": {"action": "accept", "content": {"name": "Ada", "color": "blue"}}}`)
	// The answers file gives both fields; each round's schema asks for one,
	// and the guards refuse fields outside the schema: so this fails on the
	// first round, with exit 1 and the field named.
	r := runCLI(t, "call", "--era", "modern", "--answers", answers, "test_input_required_result_multi_round", "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Contains(t, r.stderr, `field "color" is not in the schema`)

	answers = writeFile(t, "answers.json", `{"elicitation": {"action": "decline"}}`)
	r = runCLI(t, "call", "--era", "auto", "--protocol-version", "2026-07-28", "--answers", answers, "test_input_required_result_multi_round", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Multi-round complete: unknown likes unknown\n", r.stdout)
}

func TestE2EModernLogLevelRidesInMeta(t *testing.T) {
	r := runCLI(t, "call", "--era", "modern", "--log-level", "info", "--json", "test_tool_with_logging", "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stderr, `{"level":"info","logger":"","data":"Tool execution started"}`)
}
