package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseFormats(t *testing.T) {
	lookup := env(map[string]string{"TOKEN": "s3cret", "HOME": "/home/ada"})
	tests := []struct {
		name     string
		json     string
		want     Config
		warnings []string
	}{{
		name: "mcpServers stdio and http",
		json: `{"mcpServers": {
			"fs": {"command": "npx", "args": ["-y", "server-fs", "${HOME}/notes"], "env": {"TOKEN": "${env:TOKEN}"}, "cwd": "/tmp"},
			"web": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
		want: Config{Servers: map[string]Server{
			"fs":  {Command: "npx", Args: []string{"-y", "server-fs", "/home/ada/notes"}, Env: map[string]string{"TOKEN": "s3cret"}, Cwd: "/tmp"},
			"web": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		}},
	}, {
		name: "VS Code servers with type",
		json: `{"inputs": [], "servers": {
			"fs": {"type": "stdio", "command": "server-fs"},
			"web": {"type": "http", "url": "http://127.0.0.1:8080/mcp"}}}`,
		want: Config{Servers: map[string]Server{
			"fs":  {Command: "server-fs"},
			"web": {URL: "http://127.0.0.1:8080/mcp"},
		}},
		warnings: []string{`c.json: key "inputs": unknown key, ignored`},
	}, {
		name: "conduit settings",
		json: `{"mcpServers": {"fs": {"command": "s", "conduit": {
			"era": "legacy", "protocolVersion": "2025-06-18", "timeout": "10s", "maxTotalTimeout": "5m",
			"handlerTimeout": "1m", "maxServerRequests": 4, "roots": ["/srv"], "disabled": true,
			"ping": {"interval": "15s", "failures": 2},
			"restart": {"backoff": {"initial": "100ms", "max": "2s"}, "intensity": 3, "period": "10s", "resetAfter": "20s"}}}}}`,
		want: Config{Servers: map[string]Server{"fs": {Command: "s", Conduit: Settings{
			Era: conduit.EraLegacy, ProtocolVersion: "2025-06-18", Timeout: 10 * time.Second, MaxTotalTimeout: 5 * time.Minute,
			HandlerTimeout: time.Minute, MaxServerRequests: 4, Roots: []string{"/srv"}, Disabled: true,
			Ping:    PingPolicy{Interval: 15 * time.Second, Failures: 2},
			Restart: RestartPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, Intensity: 3, Period: 10 * time.Second, ResetAfter: 20 * time.Second},
		}}}},
	}, {
		name: "VS Code's mcp.json: comments, trailing commas, ${input:…}; Cline's disabled",
		json: `{
			// my servers
			"servers": {
				"fs": {"type": "stdio", "command": "server-fs", "args": ["${input:dir}"],}, /* trailing comma above */
				"old": {"command": "s", "disabled": true, "autoApprove": []},
			},
		}`,
		want: Config{Servers: map[string]Server{
			"fs":  {Command: "server-fs", Args: []string{"${input:dir}"}},
			"old": {Command: "s", Conduit: Settings{Disabled: true}},
		}},
		warnings: []string{
			`c.json: server "fs": key "args[0]": ${input:dir} is not supported (VS Code asks the user for it); the server gets it as written`,
			`c.json: server "old": key "autoApprove": unknown key, ignored`,
		},
	}, {
		name: "no keep-alive, never revived; revived after 10m",
		json: `{"mcpServers": {"a": {"url": "http://h/mcp", "conduit": {"ping": {"interval": "off"}, "restart": {"revive": "never"}}},
			"b": {"command": "s", "conduit": {"restart": {"revive": "10m"}}}}}`,
		want: Config{Servers: map[string]Server{
			"a": {URL: "http://h/mcp", Conduit: Settings{Ping: PingPolicy{Interval: -1}, Restart: RestartPolicy{Revive: -1}}},
			"b": {Command: "s", Conduit: Settings{Restart: RestartPolicy{Revive: 10 * time.Minute}}},
		}},
	}, {
		name: "unknown keys and unset variables warn",
		json: `{"mcpServers": {"a": {"command": "s", "url2": 1, "headers": {"X": "y"}, "args": ["${NOPE}", "${input:x}"],
			"conduit": {"colour": "red", "restart": {"backoff": {"min": "1s"}, "tries": 3}}}}, "globalShortcut": "x"}`,
		want: Config{Servers: map[string]Server{"a": {Command: "s", Args: []string{"", "${input:x}"}}}},
		warnings: []string{
			`c.json: key "globalShortcut": unknown key, ignored`,
			`c.json: server "a": key "args[0]": ${NOPE} is not set; replaced by an empty string`,
			`c.json: server "a": key "args[1]": ${input:x} is not supported (VS Code asks the user for it); the server gets it as written`,
			`c.json: server "a": key "conduit.colour": unknown key, ignored`,
			`c.json: server "a": key "conduit.restart.backoff.min": unknown key, ignored`,
			`c.json: server "a": key "conduit.restart.tries": unknown key, ignored`,
			`c.json: server "a": key "headers": only used by http servers, ignored`,
			`c.json: server "a": key "url2": unknown key, ignored`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, warnings, err := Parse("c.json", []byte(tt.json), lookup)
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
			assert.Equal(t, tt.warnings, warnings)
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ json, err string }{
		{`{"mcpServers": {`, `c.json: not JSON: line 1, column 16: unexpected end of JSON input`},
		{"{\n\"mcpServers\": {,}}", `c.json: not JSON: line 2, column 16: invalid character ',' looking for beginning of object key string`},
		{`[1]`, `c.json: not a JSON object`},
		{`{}`, `c.json: no "mcpServers" (or VS Code's "servers") object`},
		{`{"mcpServers": {}, "servers": {}}`, `c.json: has both "mcpServers" and "servers"; give one`},
		{`{"mcpServers": []}`, `c.json: key "mcpServers": want an object, got an array`},
		{`{"mcpServers": {"a": "npx"}}`, `c.json: server "a": want an object, got a string`},
		{`{"mcpServers": {"a": {}}}`, `c.json: server "a": needs "command" (stdio) or "url" (HTTP)`},
		{`{"mcpServers": {"a": {"command": "s", "url": "http://x"}}}`, `c.json: server "a": has both "command" and "url"; give one`},
		{`{"servers": {"a": {"type": "websocket", "url": "ws://x"}}}`, `c.json: server "a": key "type": unknown type "websocket": want "stdio", "http" or "sse"`},
		{`{"servers": {"a": {"type": "sse"}}}`, `c.json: server "a": key "url": missing: an "sse" server needs a url`},
		{`{"servers": {"a": {"type": "sse", "command": "s"}}}`, `c.json: server "a": key "type": "sse" does not match the server's command`},
		{`{"servers": {"a": {"type": "stdio"}}}`, `c.json: server "a": key "command": missing: a "stdio" server needs a command`},
		{`{"servers": {"a": {"type": "http"}}}`, `c.json: server "a": key "url": missing: an "http" server needs a url`},
		{`{"servers": {"a": {"type": "http", "command": "s"}}}`, `c.json: server "a": key "type": "http" does not match the server's command`},
		{`{"servers": {"a": {"type": 1, "command": "s"}}}`, `c.json: server "a": key "type": want a string, got a number`},
		{`{"mcpServers": {"a": {"command": ["s"]}}}`, `c.json: server "a": key "command": want a string, got an array`},
		{`{"mcpServers": {"a": {"command": ""}}}`, `c.json: server "a": key "command": empty`},
		{`{"mcpServers": {"a": {"command": "s", "args": "-v"}}}`, `c.json: server "a": key "args": want an array of strings, got a string`},
		{`{"mcpServers": {"a": {"command": "s", "args": ["-v", 2]}}}`, `c.json: server "a": key "args[1]": want a string, got a number`},
		{`{"mcpServers": {"a": {"command": "s", "env": {"A": true}}}}`, `c.json: server "a": key "env.A": want a string, got a boolean`},
		{`{"mcpServers": {"a": {"command": "s", "env": []}}}`, `c.json: server "a": key "env": want an object of strings, got an array`},
		{`{"mcpServers": {"a": {"url": "ftp://x"}}}`, `c.json: server "a": key "url": want an http:// or https:// URL, got "ftp://x"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": 1}}}`, `c.json: server "a": key "conduit": want an object, got a number`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"era": "old"}}}}`, `c.json: server "a": key "conduit.era": want "legacy" or "modern", got "old"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"protocolVersion": "1999-01-01"}}}}`, `c.json: server "a": key "conduit.protocolVersion": unknown protocol version "1999-01-01"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"timeout": 30}}}}`, `c.json: server "a": key "conduit.timeout": want a duration such as "500ms" or "30s", got a number`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"timeout": "-1s"}}}}`, `c.json: server "a": key "conduit.timeout": want a positive duration such as "500ms" or "30s", got "-1s"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"maxServerRequests": 0}}}}`, `c.json: server "a": key "conduit.maxServerRequests": want a positive integer, got 0`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"disabled": "yes"}}}}`, `c.json: server "a": key "conduit.disabled": want true or false, got a string`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"restart": {"intensity": 1.5}}}}}`, `c.json: server "a": key "conduit.restart.intensity": want a positive integer, got 1.5`},
		{"{\"mcpServers\": {\"a\": {\"command\": \"s\"},\n \"a\": {\"command\": \"t\"}}}", `c.json: line 2, column 2: key "a" given twice`},
		{`{"mcpServers": {"a": {"command": "s", "command": "t"}}}`, `c.json: line 1, column 39: key "command" given twice`},
		{`{"mcpServers": {"x/y": {"command": "s"}}}`, `c.json: server "x/y": a server's name cannot hold "/", "__" or spaces: its tools could not be named SERVER/TOOL or SERVER__TOOL`},
		{`{"mcpServers": {"a__b": {"command": "s"}}}`, `c.json: server "a__b": a server's name cannot hold "/", "__" or spaces: its tools could not be named SERVER/TOOL or SERVER__TOOL`},
		{`{"mcpServers": {"my server": {"command": "s"}}}`, `c.json: server "my server": a server's name cannot hold "/", "__" or spaces: its tools could not be named SERVER/TOOL or SERVER__TOOL`},
		{`{"mcpServers": {"a": {"command": "s", "disabled": "yes"}}}`, `c.json: server "a": key "disabled": want true or false, got a string`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"restart": {"revive": "soon"}}}}}`, `c.json: server "a": key "conduit.restart.revive": want a positive duration such as "500ms" or "30s", or "never"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"ping": {"interval": 5}}}}}`, `c.json: server "a": key "conduit.ping.interval": want a positive duration such as "500ms" or "30s", or "off"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"restart": {"backoff": {"max": "soon"}}}}}}`, `c.json: server "a": key "conduit.restart.backoff.max": want a positive duration such as "500ms" or "30s", got "soon"`},
		{`{"mcpServers": {"a": {"command": "s", "conduit": {"ping": {"failures": -1}}}}}`, `c.json: server "a": key "conduit.ping.failures": want a positive integer, got -1`},
	}
	for _, tt := range tests {
		t.Run(tt.err, func(t *testing.T) {
			_, _, err := Parse("c.json", []byte(tt.json), env(nil))
			require.Error(t, err)
			assert.Equal(t, tt.err, err.Error())
			var ce *ConfigError
			assert.ErrorAs(t, err, &ce)
		})
	}
}

func TestLoad(t *testing.T) {
	t.Setenv("CONDUIT_TEST_ARG", "from-env")
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "s", "args": ["${CONDUIT_TEST_ARG}"]}}}`), 0o600))
	cfg, warnings, err := Load(path)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.Equal(t, []string{"from-env"}, cfg.Servers["a"].Args)

	missing := filepath.Join(filepath.Dir(path), "missing.json")
	_, _, err = Load(missing)
	assert.EqualError(t, err, missing+": cannot read it: no such file or directory")
}

// Split finds the server of a namespaced name among the configured ones,
// and refuses a name no server, or more than one, prefixes.
func TestConfigSplit(t *testing.T) {
	cfg := Config{Servers: map[string]Server{"files": {}, "a": {}, "a__b": {}}}
	for _, tt := range []struct {
		name, server, tool string
		ok                 bool
	}{
		{name: "files__read", server: "files", tool: "read", ok: true},
		{name: "files__read__twice", server: "files", tool: "read__twice", ok: true},
		{name: "a__x", server: "a", tool: "x", ok: true},
		{name: "a__b__c"}, // a / b__c or a__b / c
		{name: "files__"},
		{name: "nobody__read"},
		{name: "read"},
	} {
		server, tool, ok := cfg.Split(tt.name, DefaultSeparator)
		assert.Equal(t, []any{tt.server, tt.tool, tt.ok}, []any{server, tool, ok}, tt.name)
	}
}

// Connection gives the transport and client options a Host would use for
// one server: its command, args, env and cwd; its settings over the base
// options; its name as ServerID.
func TestConfigConnection(t *testing.T) {
	cfg := Config{Servers: map[string]Server{
		"fs":  {Command: "srv", Args: []string{"-v"}, Env: map[string]string{"K": "v"}, Cwd: "/tmp", Conduit: Settings{Era: conduit.EraLegacy, Timeout: time.Second, Roots: []string{"file:///only"}}},
		"web": {URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
	}}
	base := conduit.Options{ServerID: "flag", Timeout: time.Minute, MaxServerRequests: 7}
	tr, o, err := cfg.Connection("fs", base)
	require.NoError(t, err)
	cmd, ok := tr.(*transport.Command)
	require.True(t, ok, "%T", tr)
	assert.Equal(t, []string{"srv", "-v", "/tmp", "K=v"}, []string{cmd.Path, cmd.Args[0], cmd.Dir, cmd.Env[len(cmd.Env)-1]})
	assert.Equal(t, "fs", o.ServerID)
	assert.Equal(t, conduit.EraLegacy, o.Era)
	assert.Equal(t, time.Second, o.Timeout)
	assert.Equal(t, 7, o.MaxServerRequests)
	require.NotNil(t, o.Handlers.Roots)
	roots, err := o.Handlers.Roots(context.Background(), &conduit.RootsRequest{})
	require.NoError(t, err)
	assert.Equal(t, []conduit.Root{{URI: "file:///only"}}, roots.Roots)
	assert.Nil(t, o.Handlers.Notification, "no catalog to refresh")

	tr, o, err = cfg.Connection("web", base)
	require.NoError(t, err)
	web, ok := tr.(*transport.HTTP)
	require.True(t, ok, "%T", tr)
	assert.Equal(t, "https://example.com/mcp", web.URL)
	assert.Equal(t, "Bearer x", web.Header.Get("Authorization"))
	assert.Equal(t, time.Minute, o.Timeout)

	assert.True(t, web.SSEFallback, "a URL server falls back to HTTP+SSE when initialize gets a 4xx")

	cfg, _, err = Parse("c.json", []byte(`{"servers": {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse", "headers": {"X-K": "v"}}}}`), nil)
	require.NoError(t, err)
	assert.Equal(t, Server{URL: "http://127.0.0.1:1/sse", Headers: map[string]string{"X-K": "v"}, SSE: true}, cfg.Servers["old"])
	tr, _, err = cfg.Connection("old", base)
	require.NoError(t, err)
	old, ok := tr.(*transport.SSE)
	require.True(t, ok, "%T", tr)
	assert.Equal(t, "http://127.0.0.1:1/sse", old.URL)
	assert.Equal(t, "v", old.Header.Get("X-K"))

	_, _, err = cfg.Connection("nobody", base)
	assert.ErrorIs(t, err, ErrUnknownServer)
	assert.EqualError(t, err, `host: unknown server "nobody"`)
}

// An HTTP server gets a keep-alive by default (nothing else reveals its
// death); a stdio one none; "off" turns it off.
func TestRemoteServersHaveAKeepAlive(t *testing.T) {
	h, err := New(Config{}, Options{Transport: func(string, Server) (transport.Transport, error) { return &fakeTransport{}, nil }})
	require.NoError(t, err)
	defer h.Close()
	ping := func(s Server) PingPolicy {
		srv, err := h.newServer("x", s)
		require.NoError(t, err)
		return srv.ping
	}
	assert.Equal(t, PingPolicy{Interval: 5 * time.Second, Failures: 3}, ping(Server{URL: "http://h/mcp"}))
	assert.Equal(t, PingPolicy{}, ping(Server{Command: "s"}))
	assert.Equal(t, PingPolicy{Interval: -1}, ping(Server{URL: "http://h/mcp", Conduit: Settings{Ping: PingPolicy{Interval: -1}}}))
	assert.Equal(t, PingPolicy{Interval: time.Second, Failures: 3}, ping(Server{URL: "http://h/mcp", Conduit: Settings{Ping: PingPolicy{Interval: time.Second}}}))
}

// A stdio server gets only the variables a program needs to run, and its
// own env over them; with inheritEnv, the whole environment.
func TestServerEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/home/ada", "AWS_SECRET_ACCESS_KEY=s3cret", "USER=ada", "GITHUB_TOKEN=ghp"}
	assert.Equal(t, []string{"PATH=/bin", "HOME=/home/ada", "USER=ada", "LOG=warn", "PATH=/opt/bin"},
		serverEnv(Server{Env: map[string]string{"PATH": "/opt/bin", "LOG": "warn"}}, environ), "the server's own env comes last, so it wins")
	assert.Equal(t, environ, serverEnv(Server{Conduit: Settings{InheritEnv: true}}, environ))
	assert.Equal(t, []string{}, serverEnv(Server{}, nil), "never nil: os/exec would inherit everything")
	assert.Equal(t, []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}, inheritedEnv("linux"))
	assert.Contains(t, inheritedEnv("windows"), "SYSTEMROOT")

	cfg, _, err := Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "s", "conduit": {"inheritEnv": true}}}}`), nil)
	require.NoError(t, err)
	assert.True(t, cfg.Servers["a"].Conduit.InheritEnv)
}

// The ping policy is the client's keep-alive (Options.KeepAlive and
// KeepAliveFailures); without a policy, the host's client options keep
// theirs, and "off" turns any off.
func TestPingPolicyIsTheClientsKeepAlive(t *testing.T) {
	h, err := New(Config{}, Options{Client: conduit.Options{KeepAlive: time.Minute, KeepAliveFailures: 7},
		Transport: func(string, Server) (transport.Transport, error) { return &fakeTransport{}, nil }})
	require.NoError(t, err)
	defer h.Close()
	keepAlive := func(s Server) [2]any {
		srv, err := h.newServer("x", s)
		require.NoError(t, err)
		return [2]any{srv.opts.KeepAlive, srv.opts.KeepAliveFailures}
	}
	assert.Equal(t, [2]any{5 * time.Second, 3}, keepAlive(Server{URL: "http://h/mcp"}))
	assert.Equal(t, [2]any{time.Minute, 7}, keepAlive(Server{Command: "s"}))
	assert.Equal(t, [2]any{time.Duration(0), 7}, keepAlive(Server{URL: "http://h/mcp", Conduit: Settings{Ping: PingPolicy{Interval: -1}}}))
	assert.Equal(t, [2]any{10 * time.Second, 2}, keepAlive(Server{Command: "s", Conduit: Settings{Ping: PingPolicy{Interval: 10 * time.Second, Failures: 2}}}))
}

func TestOAuthSettings(t *testing.T) {
	p := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"mcpServers":{"web":{"url":"https://example.com/mcp","conduit":{"oauth":{"clientId":"c1","clientSecret":"s1","clientMetadataUrl":"https://conduit.example/client.json","clientCredentials":true,"dpop":true,"x":1}}}}}`), 0o600))
	cfg, warnings, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, OAuthSettings{ClientID: "c1", ClientSecret: "s1", ClientMetadataURL: "https://conduit.example/client.json", ClientCredentials: true, DPoP: true}, cfg.Servers["web"].Conduit.OAuth)
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "conduit.oauth.x")
	require.NoError(t, os.WriteFile(p, []byte(`{"mcpServers":{"web":{"url":"https://example.com/mcp","conduit":{"oauth":{"clientMetadataUrl":"http://x/c.json"}}}}}`), 0o600))
	_, _, err = Load(p)
	assert.ErrorContains(t, err, `want an https URL, got "http://x/c.json"`)
}
