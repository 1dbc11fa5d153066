package admin

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/host"
)

// program finds an installed program the test needs: missing, the test
// fails when CI is set (.ci/run installs it) and is skipped otherwise.
func program(t *testing.T, name, debian string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (Debian package %s; .ci/run installs it)", name, debian)
	}
	t.Skipf("%s is not installed (apt-get install %s)", name, debian)
	return ""
}

// freePort is a loopback port nothing listens on (for a program that
// cannot report the one it took).
func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// eventually polls an external program's state until ok, 60 s at most:
// Prometheus scrapes on its own clock, no event says it has.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for !ok() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// promQuery runs an instant PromQL query through Prometheus' HTTP API and
// returns each series' value by its labels.
func promQuery(t *testing.T, base, query string) map[string]string {
	res, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {query}}.Encode())
	require.NoError(t, err)
	defer res.Body.Close()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, "success", body.Status)
	out := map[string]string{}
	for _, r := range body.Data.Result {
		out[r.Metric["server"]] = fmt.Sprint(r.Value[1])
	}
	return out
}

// A real Prometheus scrapes the admin listener of a host with two servers,
// one crash-looping: PromQL sees its restarts rise, then its state gauge
// say parked; promtool check metrics passes on the exposition.
func TestPrometheusScrapes(t *testing.T) {
	prom := program(t, "prometheus", "prometheus")
	promtool := program(t, "promtool", "prometheus")
	broken := crashing()
	broken.Conduit.Restart = host.RestartPolicy{InitialBackoff: 400 * time.Millisecond, MaxBackoff: 400 * time.Millisecond, Intensity: 8, Period: time.Minute}
	// The host starts once Prometheus is ready, on the port it scrapes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	target := ln.Addr().String()

	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, "global: {scrape_interval: 500ms, scrape_timeout: 500ms}\nscrape_configs: [{job_name: conduit, static_configs: [{targets: [%q]}]}]\n", target), 0o600))
	port := freePort(t)
	cmd := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))
	log, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	eventually(t, "Prometheus to be ready", func() bool {
		res, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	// Its scrape loop starts a few seconds after it is ready: the
	// target's first scrape (nothing answers yet) says it has.
	eventually(t, "Prometheus to scrape", func() bool {
		_, ok := promQuery(t, base, `up{job="conduit"}`)[""]
		return ok
	})
	f := startOn(t, ln, map[string]host.Server{"every": pyServer(t, "echo"), "broken": broken}, Options{})
	var seen []string // the restarts Prometheus saw, each new value
	eventually(t, "Prometheus to see the broken server parked", func() bool {
		restarts := promQuery(t, base, `conduit_server_restarts_total{server="broken"}`)["broken"]
		if restarts != "" && (len(seen) == 0 || seen[len(seen)-1] != restarts) {
			seen = append(seen, restarts)
		}
		return promQuery(t, base, `conduit_server_state{state="parked"} == 1`)["broken"] == "1"
	})
	logged, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
	assert.Greater(t, len(seen), 1, "the restarts counter rose while scraped: %v\n%s", seen, logged)
	assert.Equal(t, map[string]string{"broken": "7"}, promQuery(t, base, `conduit_server_restarts_total{server="broken"}`))
	assert.Equal(t, map[string]string{"broken": "7"}, promQuery(t, base, `max_over_time(conduit_server_restarts_total{server="broken"}[1m])`))
	until(t, f.h, func(sts []host.Status) bool { return state(sts, "every") == host.StateReady })
	eventually(t, "Prometheus to see the other server ready", func() bool {
		return promQuery(t, base, `conduit_server_state{state="ready"} == 1`)["every"] == "1"
	})
	assert.Equal(t, map[string]string{"broken": "8", "every": "1"}, promQuery(t, base, `conduit_server_starts_total`))

	_, body := get(t, f.web.URL+"/metrics")
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(body)
	out, err := check.CombinedOutput()
	assert.NoError(t, err, "promtool check metrics: %s", out)
	assert.Empty(t, string(out))
}
