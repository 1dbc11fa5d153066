package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everythingConfig is a --config file whose server "every" is the
// reference TypeScript server.
func everythingConfig(t *testing.T) string {
	t.Helper()
	cmd := everythingTS(t)
	args, _ := json.Marshal(cmd[1:])
	return writeFile(t, "mcp.json", fmt.Sprintf(`{"mcpServers": {"every": {"command": %q, "args": %s}}}`, cmd[0], args))
}

func TestE2ETemplatesListsTheURITemplates(t *testing.T) {
	t.Parallel()
	r := runCLI(t, append([]string{"templates", "--"}, everythingTS(t)...)...)
	require.Equal(t, exitOK, r.code, r.String())
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, r.stdout)
	assert.True(t, strings.HasPrefix(lines[0], "demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource  Plaintext dynamic resource"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "demo://resource/dynamic/blob/{resourceId}  Dynamic Blob Resource  "), lines[1])

	r = runCLI(t, append([]string{"templates", "--json", "--"}, everythingTS(t)...)...)
	require.Equal(t, exitOK, r.code, r.String())
	var templates []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &templates), r.stdout)
	require.Len(t, templates, 2)
	assert.Equal(t, "text/plain", templates[0]["mimeType"])

	r = runCLI(t, "templates", "--config", everythingConfig(t), "every")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, "every  demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource", r.stdout)
}

func TestE2ECompletePromptAndTemplate(t *testing.T) {
	t.Parallel()
	r := runCLI(t, append([]string{"complete", "--prompt", "completable-prompt", "department", "E", "--"}, everythingTS(t)...)...)
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Engineering\n", r.stdout)

	r = runCLI(t, append([]string{"complete", "--json", "--resource", "demo://resource/dynamic/text/{resourceId}", "resourceId", "1", "--"}, everythingTS(t)...)...)
	require.Equal(t, exitOK, r.code, r.String())
	assert.JSONEq(t, `{"completion":{"values":["1"],"total":1}}`, r.stdout)

	r = runCLI(t, "complete", "--config", everythingConfig(t), "every", "--prompt", "completable-prompt", "department", "S")
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "Sales\nSupport\n", r.stdout)
}

func TestCompleteUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"complete", "a", "b", "--", "x"}, "missing --prompt NAME or --resource TEMPLATE"},
		{[]string{"complete", "--prompt", "p", "--resource", "r", "a", "b", "--", "x"}, "give --prompt NAME or --resource TEMPLATE, not both"},
		{[]string{"complete", "--prompt", "p", "a", "--", "x"}, "missing ARG VALUE"},
		{[]string{"complete", "--prompt", "p", "a", "b", "c", "--", "x"}, `too many arguments before --: ["c"]`},
		{[]string{"complete", "--prompt", "p", "--context", "novalue", "a", "b", "--", "x"}, `--context "novalue": want NAME=VALUE`},
		{[]string{"complete", "--config", "nope.json", "--prompt", "p"}, "missing SERVER"},
		{[]string{"complete", "--config", "nope.json", "s", "--prompt", "p", "a", "b"}, "nope.json: cannot read it"},
		{[]string{"templates", "extra", "--", "x"}, "extra"},
	} {
		r := runCLI(t, tc.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", tc.args, r)
		assert.Contains(t, r.stderr, tc.want, "%v", tc.args)
	}
}

// A scripted server's escape sequences and newlines never reach the output
// raw, and the listing follows its pages.
func TestE2ETemplatesAndCompleteSanitiseTheServersText(t *testing.T) {
	t.Parallel()
	env, server := scripted(t, "lists:3")
	var out bytes.Buffer
	code, stderr := runCLIEnv(t, env, &out, append([]string{"templates", "--era", "legacy"}, server...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "file:///t0/{x}  t0  line one\nfile:///t1/{x}  t1  line one\nfile:///t2/{x}  t2  line one\n", out.String())

	out.Reset()
	code, stderr = runCLIEnv(t, env, &out, append([]string{"complete", "--era", "legacy", "--prompt", "p", "a", "b"}, server...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "red\ntwo lines\n", out.String())
	assert.Equal(t, "(more)\n", stderr)
}

// Both eras against the go-sdk everything-server: its one template, and a
// completion it answers with no values (an empty output, exit 0).
func TestE2ETemplatesAndCompleteInBothEras(t *testing.T) {
	t.Parallel()
	_, server := binaries(t)
	for _, era := range []string{"modern", "legacy"} {
		r := runCLI(t, "templates", "--era", era, "--", server)
		require.Equal(t, exitOK, r.code, r.String())
		assert.Equal(t, "test://template/{id}/data  template  A resource template with parameter substitution\n", r.stdout, era)
		r = runCLI(t, "complete", "--era", era, "--json", "--resource", "test://template/{id}/data", "id", "1", "--", server)
		require.Equal(t, exitOK, r.code, r.String())
		var res struct {
			Completion struct{ Values []string }
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
		assert.Equal(t, []string{}, res.Completion.Values, era)
	}
}
