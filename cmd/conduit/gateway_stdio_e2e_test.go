package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// conduit call launching conduit gateway as its stdio server, both eras:
// a plain call, a legacy server's sampling request and a modern server's
// input_required round, each answered from an answers file.
func TestGatewayOverStdioBothEras(t *testing.T) {
	cli, server := binaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"a":{"command":%q,"conduit":{"era":"legacy"}},"b":{"command":%q,"conduit":{"era":"modern"}}}}`, server, server))
	ans := writeFile(t, "answers.json", `{"sampling":{"result":{"role":"assistant","content":{"type":"text","text":"Paris-42"},"model":"scripted"}}}`)
	for _, era := range []string{"legacy", "modern"} {
		gw := []string{"--", cli, "gateway", "--config", cfg}
		r := runCLI(t, append([]string{"call", "--era", era, "b__test_simple_text", `{}`}, gw...)...)
		assert.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "This is a simple text response for testing.\n", r.stdout, era)
		r = runCLI(t, append([]string{"call", "--era", era, "--answers", ans, "a__test_sampling", `{"prompt":"capital?"}`}, gw...)...)
		assert.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "LLM response: Paris-42\n", r.stdout, era)
		r = runCLI(t, append([]string{"call", "--era", era, "--answers", ans, "b__test_input_required_result_sampling", `{}`}, gw...)...)
		assert.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "Sampling response: Paris-42\n", r.stdout, era)
	}
}
