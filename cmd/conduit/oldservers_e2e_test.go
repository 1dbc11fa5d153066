package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stdio server that speaks only 2024-11-05: the call works, the
// elicitation/create it sends (which that revision does not have) is
// refused -32601 although --answers declares elicitation, and audited as
// refused; the structuredContent it sends anyway is not kept.
func TestE2E20241105Server(t *testing.T) {
	env, server := scripted(t, "old:0")
	dir := t.TempDir()
	answers := filepath.Join(dir, "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"elicitation": {"action": "accept", "content": {"name": "Ada"}}}`), 0o600))
	audit := filepath.Join(dir, "audit.jsonl")
	var out bytes.Buffer
	code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--json", "--answers", answers, "--audit", audit, "probe"}, server...)...)
	require.Equal(t, exitOK, code, stderr)
	var res map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &res), out.String())
	assert.Equal(t, "old-ok, elicitation refused -32601", res["content"].([]any)[0].(map[string]any)["text"])
	assert.NotContains(t, res, "structuredContent", "no structured content in 2024-11-05")
	rec, err := os.ReadFile(audit)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(rec)), "\n")
	require.Len(t, lines, 1)
	var a map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &a))
	assert.Equal(t, "elicitation/create", a["method"])
	assert.Equal(t, "refused", a["outcome"])
}

// sseURL serves the go-sdk server on its HTTP+SSE handler, in process.
func sseURL(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "sse-server", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sse-first-ok"}}}, nil, nil
	})
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// --transport sse reaches an HTTP+SSE server; --url alone reaches it by
// the fallback; --transport http does not fall back; a config file's
// "type": "sse" server is used like any other.
func TestE2EHTTPSSE(t *testing.T) {
	u := sseURL(t)
	r := runInProcess(t, "call", "--transport", "sse", "--url", u, "first", "{}")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "sse-first-ok\n", r.stdout)

	r = runInProcess(t, "call", "--url", u, "first")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "sse-first-ok\n", r.stdout)

	r = runInProcess(t, "call", "--transport", "http", "--url", u, "first")
	require.Equal(t, exitConnect, r.code, r)
	assert.Contains(t, r.stderr, "HTTP 400 Bad Request: sessionid must be provided")

	cfg := writeFile(t, "servers.json", `{"servers": {"old": {"type": "sse", "url": "`+u+`"}}}`)
	r = runInProcess(t, "call", "--config", cfg, "old/first")
	require.Equal(t, exitOK, r.code, r)
	assert.Equal(t, "sse-first-ok\n", r.stdout)

	for _, tc := range []struct{ args []string }{
		{[]string{"call", "--transport", "sse", "first", "--", "srv"}},
		{[]string{"call", "--transport", "stdio", "--url", u, "first"}},
		{[]string{"call", "--transport", "sse", "--era", "modern", "--url", u, "first"}},
		{[]string{"call", "--transport", "ws", "--url", u, "first"}},
	} {
		r = runInProcess(t, tc.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", tc.args, r)
	}
}
