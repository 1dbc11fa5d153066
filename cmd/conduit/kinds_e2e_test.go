package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A tool of a server --config does not run (unknown, or disabled) is a
// usage error, exit 2, found before anything starts; not a closed client
// (exit 1).
func TestCallOfAServerNotRunIsUsage(t *testing.T) {
	config := writeFile(t, "mcp.json", `{"mcpServers": {"off": {"command": "sh", "args": ["-c", "exit 1"], "conduit": {"disabled": true}}}}`)
	for _, tc := range []struct{ tool, want string }{
		{"nosuch/tool", `"nosuch/tool": want SERVER/TOOL or SERVER__TOOL, with SERVER one of ` + config + `'s servers: off`},
		{"off/tool", `server "off" is disabled in ` + config},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			// Found in the file before anything starts: a usage error, with
			// no call (and so no kind) behind it.
			r := runInProcess(t, "call", "--config", config, tc.tool, "--json")
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Empty(t, r.stdout)
			var rep errorReport
			require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
			assert.Equal(t, errorReport{Error: tc.want, Exit: exitUsage}, rep)

			r = runInProcess(t, "call", "--config", config, tc.tool)
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Equal(t, "conduit: "+tc.want+"\nRun 'conduit call --help' for usage.\n", r.stderr)
		})
	}
}
