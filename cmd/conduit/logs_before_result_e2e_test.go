package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// logsThenResult is a Streamable HTTP server of either era whose every
// tools/call is answered by one SSE body: three log entries, then the
// result.
func logsThenResult(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&m)
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, m.ID, result)
		}
		switch {
		case m.ID == nil || m.Method == "":
			w.WriteHeader(http.StatusAccepted)
		case m.Method == "server/discover":
			reply(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"logging":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"logs","version":"1"}}}`)
		case m.Method == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"logs","version":"1"}}`)
		case m.Method == "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 1; i <= 3; i++ {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"entry %d\"}}\n\n", i)
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n", m.ID)
		default:
			reply(`{}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// conduit call shows the log entries a server sent before the result, in
// both eras over HTTP: the result used to overtake them and the close on
// return discarded them (16 of 60 modern runs, 3 of 60 legacy).
func TestE2ELogsSentBeforeTheResultAreShown(t *testing.T) {
	url := logsThenResult(t)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			for i := range 60 {
				r := runInProcess(t, "call", "--url", url, "--era", era, "t")
				require.Equal(t, exitOK, r.code, "run %d: %s", i, r)
				require.Equal(t, "done\n", r.stdout, "run %d", i)
				require.Equal(t, "[info] entry 1\n[info] entry 2\n[info] entry 3\n", r.stderr, "run %d", i)
			}
		})
	}
}
