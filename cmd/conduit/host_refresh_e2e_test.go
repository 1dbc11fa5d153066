package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conduit host --json against a go-sdk server that gains a tool once the
// host has it ready, in both eras: the catalog refreshes (on the legacy
// notification, or on the modern listen stream) and the host prints the
// change as an event of its own, then the text line says the same.
func TestHostPrintsACatalogRefreshInBothEras(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			server := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
			tool := func(name string) {
				mcp.AddTool(server, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{}, nil, nil
				})
			}
			tool("first")
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
				&mcp.StreamableHTTPOptions{Stateless: era == "modern"}))
			defer ts.Close()
			config := filepath.Join(t.TempDir(), "mcp.json")
			require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, `{"mcpServers":{"changing":{"url":%q,"conduit":{"era":%q}}}}`, ts.URL, era), 0o600))

			for _, format := range []string{"json", "text"} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				ready := regexp.MustCompile(`"state":"ready"|changing ready, 1 tool`)
				changed := regexp.MustCompile(`"tools_changed":true|changing tools changed: 2 tools`)
				out := &watchedBuffer{match: []*regexp.Regexp{ready}, matched: make(chan struct{})}
				args := []string{"host", "--config", config}
				if format == "json" {
					args = append(args, "--json")
				}
				var stderr bytes.Buffer
				done := make(chan int, 1)
				go func() { done <- run(ctx, args, streams{in: bytes.NewReader(nil), out: out, err: &stderr}) }()
				select {
				case <-out.matched:
				case <-ctx.Done():
					t.Fatalf("%s: never ready:\n%s\n%s", format, out, stderr.String())
				}
				tool("added_" + format)
				require.Eventually(t, func() bool { return changed.MatchString(out.String()) }, 20*time.Second, 10*time.Millisecond,
					"%s: no refresh printed:\n%s\n%s", format, out, stderr.String())
				cancel()
				require.Equal(t, exitOK, <-done, stderr.String())
				server.RemoveTools("added_" + format)

				line := changed.FindString(out.String())
				for l := range strings.Lines(out.String()) {
					if strings.Contains(l, line) {
						line = l
						break
					}
				}
				if format == "text" {
					assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} changing tools changed: 2 tools\n$`, line)
					continue
				}
				var ev hostEvent
				require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
				assert.Equal(t, hostEvent{Time: ev.Time, Server: "changing", State: "ready", Tools: 2, ToolsChanged: true}, ev)
				assert.WithinDuration(t, time.Now(), ev.Time, 30*time.Second)
			}
		})
	}
}
