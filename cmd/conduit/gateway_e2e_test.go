package main

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conduit gateway refuses to listen beyond loopback without a token.
func TestGatewayRefusesOpenListen(t *testing.T) {
	t.Setenv("CONDUIT_GATEWAY_TOKEN", "")
	cfg := writeFile(t, "mcp.json", `{"mcpServers":{}}`)
	r := runInProcess(t, "gateway", "--config", cfg, "--listen", "0.0.0.0:0")
	assert.Equal(t, exitUsage, r.code, r.String())
	assert.Equal(t, "conduit: refusing to listen on 0.0.0.0:0 (0.0.0.0) without a bearer token: set --token or CONDUIT_GATEWAY_TOKEN, or listen on 127.0.0.1\nRun 'conduit gateway --help' for usage.\n", r.stderr)
}

// conduit call through conduit gateway, both eras: a legacy server's
// sampling request and a modern server's input_required round, each
// answered from an answers file.
func TestGatewayCallsRelayInput(t *testing.T) {
	cli, server := binaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"a":{"command":%q,"conduit":{"era":"legacy"}},"b":{"command":%q,"conduit":{"era":"modern"}}}}`, server, server))
	ans := writeFile(t, "answers.json", `{"sampling":{"result":{"role":"assistant","content":{"type":"text","text":"Paris-42"},"model":"scripted"}}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gw := exec.CommandContext(ctx, cli, "gateway", "--config", cfg, "--listen", "127.0.0.1:0")
	stderr, err := gw.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, gw.Start())
	defer func() { cancel(); _ = gw.Wait() }()
	lines := bufio.NewScanner(stderr)
	var m []string
	for m == nil && lines.Scan() { // after the warnings of the catalog (the two servers' resources collide)
		m = regexp.MustCompile(`^conduit gateway: 2 servers at (http://127\.0\.0\.1:\d+/mcp)$`).FindStringSubmatch(lines.Text())
	}
	require.NotNil(t, m, "the gateway says where it listens")
	go func() {
		for lines.Scan() { // drain
		}
	}()
	url := m[1]
	// It serves once its servers are ready: both are listed at once.
	r := runCLI(t, "tools", "--url", url)
	assert.Contains(t, r.stdout, "a__test_sampling ", r.String())
	assert.Contains(t, r.stdout, "b__test_input_required_result_sampling", r.String())
	for _, era := range []string{"legacy", "modern"} {
		r := runCLI(t, "call", "--era", era, "--url", url, "--answers", ans, "a__test_sampling", `{"prompt":"capital?"}`)
		assert.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "LLM response: Paris-42\n", r.stdout, era)
		r = runCLI(t, "call", "--era", era, "--url", url, "--answers", ans, "b__test_input_required_result_sampling", `{}`)
		assert.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "Sampling response: Paris-42\n", r.stdout, era)
	}
}

// --server-variants bounds the connections a legacy server runs for the
// capability sets of the gateway's clients: a modern client that declares
// less than the gateway does reaches a variant of its own (counted on
// /metrics), and with 0 the server's one connection. --server-variant-idle
// closes a variant without calls that long.
func TestGatewayServerVariantsFlag(t *testing.T) {
	_, server := binaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"a":{"command":%q,"conduit":{"era":"legacy"}}}}`, server))
	variants := func(base string) string {
		_, body := adminGet(t, base+"/metrics", "")
		return regexp.MustCompile(`\nconduit_server_variants\{server="a"\} (\d+)\n`).FindStringSubmatch(body)[1]
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{{nil, "1"}, {[]string{"--server-variants", "0"}, "0"}, {[]string{"--server-variant-idle", "300ms"}, "1"}} {
		port := freePorts(t, 1)[0]
		args := append([]string{"gateway", "--config", cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--admin", "127.0.0.1:0"}, c.flags...)
		base := startAdmin(t, nil, `^conduit gateway: 1 servers at `, args...)
		r := runCLI(t, "call", "--era", "modern", "--url", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), "a__test_simple_text", `{}`)
		require.Equal(t, 0, r.code, r.String())
		assert.Equal(t, "This is a simple text response for testing.\n", r.stdout)
		assert.Equal(t, c.want, variants(base), "%v", c.flags)
		if len(c.flags) > 0 && c.flags[0] == "--server-variant-idle" {
			start := time.Now()
			require.Eventually(t, func() bool { return variants(base) == "0" }, 10*time.Second, 20*time.Millisecond, "the idle variant closes")
			t.Logf("the variant closed %v after the call", time.Since(start).Round(time.Millisecond))
		}
	}
	for flag, msg := range map[string]string{"--server-variants=-1": "--server-variants must be 0 or more", "--server-variant-idle=0s": "--server-variant-idle must be more than 0"} {
		r := runInProcess(t, "gateway", "--config", cfg, flag)
		assert.Equal(t, exitUsage, r.code, r.String())
		assert.Equal(t, "conduit: "+msg+"\nRun 'conduit gateway --help' for usage.\n", r.stderr)
	}
}
