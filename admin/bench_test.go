package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
)

// memServers is a transport whose every Connect starts an in-memory
// legacy server listing tools (answering tools/call with ok).
type memServers struct{ tools []map[string]any }

func (m memServers) Connect(context.Context) (transport.Conn, error) {
	client, server := transport.NewMemoryPair()
	go func() {
		defer server.Close()
		for {
			msg, err := server.Read(context.Background())
			if err != nil {
				return
			}
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(msg.Data, &req) != nil || req.ID == nil {
				continue
			}
			var result any = map[string]any{}
			switch req.Method {
			case "initialize":
				result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "mem", "version": "1"}}
			case "tools/list":
				result = map[string]any{"tools": m.tools}
			case "tools/call":
				result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
			if server.Write(context.Background(), b) != nil {
				return
			}
		}
	}()
	return client, nil
}

// bigHost is a host of servers × tools in-memory servers, with its admin
// server: every tool called once (all), or the first of each server.
func bigHost(tb testing.TB, servers, tools int, all bool) *httptest.Server {
	m := NewMetrics()
	var list []map[string]any
	for i := range tools {
		list = append(list, map[string]any{"name": fmt.Sprintf("tool_with_a_longish_name_%02d", i), "inputSchema": map[string]any{"type": "object"}})
	}
	cfg := host.Config{Servers: map[string]host.Server{}}
	for i := range servers {
		cfg.Servers[fmt.Sprintf("server-%03d", i)] = host.Server{Command: "mem", Conduit: host.Settings{Era: conduit.EraLegacy}}
	}
	h, err := host.New(cfg, host.Options{ServerOptions: m.ServerOptions,
		Transport: func(string, host.Server) (transport.Transport, error) { return memServers{tools: list}, nil }})
	require.NoError(tb, err)
	until(tb, h, func(sts []host.Status) bool {
		for _, st := range sts {
			if st.State != host.StateReady {
				return false
			}
		}
		return true
	})
	for _, t := range h.Tools() {
		if !all && t.ServerTool != list[0]["name"] {
			continue
		}
		_, err := h.CallTool(context.Background(), t.Server, t.ServerTool, map[string]any{})
		require.NoError(tb, err)
	}
	srv := New(h, m, Options{})
	web := httptest.NewServer(srv.Handler())
	tb.Cleanup(func() { web.Close(); srv.Close(); _ = h.Close() })
	return web
}

// BenchmarkMetrics200x50 scrapes /metrics of a host of 200 servers of 50
// tools each, every tool called once (10 000 series of
// conduit_tool_calls_total): the time per scrape and its size, plain and
// gzipped as Prometheus asks for it (docs/benchmarks.md).
func BenchmarkMetrics200x50(b *testing.B) {
	web := bigHost(b, 200, 50, true)
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			var size int
			for b.Loop() {
				size = scrapeSize(b, web.URL, enc)
			}
			b.ReportMetric(float64(size), "bytes/scrape")
		})
	}
}

// scrapeSize reads /metrics with Accept-Encoding enc and returns its size
// on the wire.
func scrapeSize(tb testing.TB, base, enc string) int {
	req, _ := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Accept-Encoding", enc)
	res, err := http.DefaultTransport.RoundTrip(req) // no transparent gunzip
	require.NoError(tb, err)
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	require.NoError(tb, err)
	return int(n)
}

// The exposition of 200 servers × 50 tools stays under 1 MB: plain with
// one tool of each server called; gzipped (as Prometheus scrapes) with
// every tool called. Its time is BenchmarkMetrics200x50's.
func TestMetricsSize200x50(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 400 in-memory servers")
	}
	some := bigHost(t, 200, 50, false)
	plain := scrapeSize(t, some.URL, "identity")
	t.Logf("one tool of each called: %d bytes", plain)
	assert.Less(t, plain, 1<<20)
	all := bigHost(t, 200, 50, true)
	_, body := get(t, all.URL+"/metrics")
	assert.Contains(t, body, `conduit_tool_calls_total{outcome="ok",server="server-199",tool="tool_with_a_longish_name_49"} 1`)
	zipped := scrapeSize(t, all.URL, "gzip")
	t.Logf("every tool called: %d bytes, %d gzipped", len(body), zipped)
	assert.Less(t, zipped, 1<<20)
}
