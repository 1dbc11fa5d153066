package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// A tool of a server --config does not run (unknown, or disabled) is a
// usage error: exit 2, kind "usage", not a closed client (exit 1).
func TestCallOfAServerNotRunIsUsage(t *testing.T) {
	config := writeFile(t, "mcp.json", `{"mcpServers": {"off": {"command": "sh", "args": ["-c", "exit 1"], "conduit": {"disabled": true}}}}`)
	for _, tc := range []struct{ tool, want string }{
		{"nosuch/tool", `tools/call: usage: no server "nosuch": host: unknown server`},
		{"off/tool", `tools/call: usage: server "off" is disabled in the configuration: host: server stopped`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r := runInProcess(t, "call", "--config", config, tc.tool, "--json")
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Empty(t, r.stdout)
			var rep errorReport
			require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
			assert.Equal(t, errorReport{Error: tc.want, Exit: exitUsage, Kind: conduit.KindUsage}, rep)

			r = runInProcess(t, "call", "--config", config, tc.tool)
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Equal(t, "conduit: "+tc.want+"\nRun 'conduit call --help' for usage.\n", r.stderr)
		})
	}
}
