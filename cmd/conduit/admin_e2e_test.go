package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --admin beyond loopback without a token is refused (exit 2), on both
// commands.
func TestAdminRefusesOpenListen(t *testing.T) {
	t.Setenv("CONDUIT_ADMIN_TOKEN", "")
	cfg := writeFile(t, "mcp.json", `{"mcpServers":{}}`)
	for _, cmd := range []string{"host", "gateway"} {
		r := runInProcess(t, cmd, "--config", cfg, "--admin", "0.0.0.0:0")
		assert.Equal(t, exitUsage, r.code, r.String())
		assert.Equal(t, "conduit: refusing to serve the admin listener on 0.0.0.0:0 (0.0.0.0) without a bearer token: set --admin-token or CONDUIT_ADMIN_TOKEN, or use 127.0.0.1\nRun 'conduit "+cmd+" --help' for usage.\n", r.stderr)
	}
}

// startAdmin runs conduit with args and returns the base URL of its admin
// listener, as it prints it on stderr, once it has printed a line that
// then matches (when then is set).
func startAdmin(t *testing.T, env []string, then string, args ...string) string {
	cli, _ := binaries(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := exec.CommandContext(ctx, cli, args...)
	c.Env = append(c.Environ(), env...)
	stderr, err := c.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	t.Cleanup(func() { cancel(); _ = c.Wait() })
	lines := bufio.NewScanner(stderr)
	var m []string
	for m == nil && lines.Scan() {
		m = regexp.MustCompile(`^conduit (?:host|gateway): admin at (http://127\.0\.0\.1:\d+)/ `).FindStringSubmatch(lines.Text())
	}
	require.NotNil(t, m, "it says where the admin listener is")
	for then != "" && lines.Scan() {
		if regexp.MustCompile(then).MatchString(lines.Text()) {
			break
		}
	}
	go func() {
		for lines.Scan() { // drain
		}
	}()
	return m[1]
}

func adminGet(t *testing.T, url, token string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// conduit host --admin and conduit gateway --admin serve the paths; the
// gateway's metrics count its sessions; CONDUIT_ADMIN_TOKEN is required
// on every path when set.
func TestAdminHostAndGateway(t *testing.T) {
	_, server := binaries(t)
	cfg := writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers":{"a":{"command":%q,"conduit":{"era":"legacy"}}}}`, server))
	base := startAdmin(t, nil, "", "host", "--config", cfg, "--admin", "127.0.0.1:0")
	code, body := adminGet(t, base+"/healthz", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	// The listener serves from the host's start; the server's start is
	// counted once its process runs, which a loaded machine may delay.
	require.Eventually(t, func() bool {
		code, body = adminGet(t, base+"/metrics", "")
		return code == http.StatusOK && strings.Contains(body, `conduit_server_starts_total{server="a"} 1`)
	}, 20*time.Second, 20*time.Millisecond, "starts never counted: %s", body)
	assert.NotContains(t, body, "conduit_gateway_sessions_open")

	gw := startAdmin(t, []string{"CONDUIT_ADMIN_TOKEN=s3cret"}, `^conduit gateway: 1 servers at `, "gateway", "--config", cfg, "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0")
	code, _ = adminGet(t, gw+"/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, code)
	code, body = adminGet(t, gw+"/metrics", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "conduit_gateway_sessions_open 0\n")
	code, body = adminGet(t, gw+"/readyz", "s3cret")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = adminGet(t, gw+"/", "s3cret")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "<title>conduit gateway</title>")
}
