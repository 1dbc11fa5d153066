package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/tailscale/hujson"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/restart"
)

// Config is a set of MCP servers, by name.
type Config struct {
	Servers map[string]Server
}

// Split splits a namespaced tool name, SERVER + sep + TOOL, by the
// servers of cfg, without asking them for their tools (Host.Resolve reads
// the catalog instead). ok is false when no server of cfg prefixes name,
// or when several do.
func (cfg Config) Split(name, sep string) (server, tool string, ok bool) {
	for s := range cfg.Servers {
		if t, found := strings.CutPrefix(name, s+sep); found && t != "" {
			if ok {
				return "", "", false
			}
			server, tool, ok = s, t, true
		}
	}
	return server, tool, ok
}

// Server is how to start or reach one server: Command for a subprocess
// speaking stdio, URL for Streamable HTTP; exactly one is set.
type Server struct {
	Command string
	Args    []string
	Env     map[string]string // added to the environment it inherits (Settings.InheritEnv)
	Cwd     string
	URL     string
	Headers map[string]string
	// SSE is "type": "sse": the server at URL speaks the deprecated
	// HTTP+SSE transport (transport.SSE). Other URL servers speak
	// Streamable HTTP, falling back to HTTP+SSE when initialize gets a 4xx.
	SSE bool
	// Conduit holds Conduit's own settings: the "conduit" key of the
	// server's entry, which other hosts ignore.
	Conduit Settings
}

// Settings are Conduit's per-server settings. Zero values take defaults.
type Settings struct {
	Era             conduit.Era
	ProtocolVersion string
	Timeout         time.Duration
	MaxTotalTimeout time.Duration
	HandlerTimeout  time.Duration
	// StartTimeout bounds a start: the process or session, the handshake
	// and the first tools/list (DefaultStartTimeout). A server that misses
	// it has failed, and is restarted under its policy.
	StartTimeout      time.Duration
	MaxServerRequests int
	// Roots, when set, are the roots offered to this server (URIs, or
	// directories made file:// URIs) in place of the host's handler.
	Roots    []string
	Restart  RestartPolicy
	Ping     PingPolicy
	Disabled bool
	// Optional is "optional": true: the host is ready (an admin
	// listener's /readyz) without this server being ready.
	Optional bool
	// InheritEnv gives a stdio server the whole environment of the host
	// process under its own env; without it, it gets only InheritedEnv
	// (and its own env), as desktop hosts do: a server need not see every
	// secret the host was started with.
	InheritEnv bool
	// NoPrefix is "prefix": false: a gateway (package gateway) exposes this
	// server's tools and prompts under their own names rather than
	// SERVER__NAME. The host's catalog is unchanged.
	NoPrefix bool
	// OAuth is "oauth": the client identity for a remote server that needs
	// sign-in (docs/auth.md); zero: dynamic registration.
	OAuth OAuthSettings
}

// OAuthSettings are a server's sign-in settings: pre-registered
// credentials ("clientId", "clientSecret") and Conduit's client ID
// metadata document ("clientMetadataUrl", an https URL with a path).
type OAuthSettings struct {
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	// ClientCredentials ("clientCredentials": true) signs in with the
	// client credentials grant (clientId, clientSecret), no person: a
	// daemon's own identity.
	ClientCredentials bool
	// PrivateKeyJWT, JWTBearer and Enterprise ("privateKeyJwt",
	// "jwtBearer", "enterprise"): see oauthsettings.go and docs/auth.md.
	PrivateKeyJWT *PrivateKeyJWT
	JWTBearer     *JWTBearer
	Enterprise    *EnterpriseIdP
	// DPoP ("dpop": true) sends DPoP proofs (RFC 9449) on every token
	// request, advertised or not; servers that advertise DPoP get them
	// without it.
	DPoP bool
}

// RestartPolicy says when a failed server is started again: backoff,
// intensity, reset and revival (see restart.Policy, which it is). Zero
// values take the defaults.
type RestartPolicy = restart.Policy

// PingPolicy is the keep-alive (the client's Options.KeepAlive and
// KeepAliveFailures, which it sets): every Interval, a ping that must be
// answered within half the interval; Failures failed pings in a row (3)
// count as the server lost. A zero Interval is the default: none for a
// stdio server (its exit is seen at once), every 5 s for an HTTP server,
// whose death nothing else reveals; a negative one ("off" in the file)
// sends none.
type PingPolicy struct {
	Interval time.Duration
	Failures int
}

// Defaults of a server's settings (the restart policy's are
// restart.Policy's).
const (
	// DefaultRemotePing is the keep-alive interval of an HTTP server whose
	// configuration sets none.
	DefaultRemotePing = 5 * time.Second
	// DefaultPingFailures is how many failed pings in a row count as the
	// server lost.
	DefaultPingFailures = conduit.DefaultKeepAliveFailures
	// DefaultStartTimeout bounds a start; generous, for `npx -y` fetching
	// a package on its first run.
	DefaultStartTimeout = time.Minute
)

// ConfigError is a configuration the host cannot use. Server and Key are
// empty when the fault is not in one server or key.
type ConfigError struct {
	File   string
	Server string
	Key    string // a dotted path inside the server's entry: "conduit.restart.intensity"
	Msg    string
	Err    error // the JSON syntax error, when there is one
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Load reads and parses the configuration file at path, substituting
// environment variables. Warnings are for keys it ignored and variables it
// could not substitute; they are returned, not printed.
func Load(path string) (Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, &ConfigError{File: path, Msg: "cannot read it: " + errors.Unwrap(err).Error(), Err: err}
	}
	return Parse(path, data, os.LookupEnv)
}

// Parse parses a configuration in the mcpServers format (Claude Desktop,
// Cursor and most hosts: {"mcpServers": {NAME: {...}}}) or in VS Code's
// ({"servers": {NAME: {"type": "stdio"|"http", ...}}}). file names the
// source in errors and warnings; lookup resolves ${VAR} and ${env:VAR} in
// every string.
func Parse(file string, data []byte, lookup func(string) (string, bool)) (Config, []string, error) {
	p := &parser{file: file, lookup: lookup}
	cfg, err := p.parse(data)
	if err != nil {
		return Config{}, nil, err
	}
	return cfg, p.warnings, nil
}

type parser struct {
	file     string
	server   string // the server being parsed
	lookup   func(string) (string, bool)
	warnings []string
}

func (p *parser) fail(key, format string, args ...any) error {
	return &ConfigError{File: p.file, Server: p.server, Key: key, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) warn(key, format string, args ...any) {
	p.warnings = append(p.warnings, (&ConfigError{File: p.file, Server: p.server, Key: key, Msg: fmt.Sprintf(format, args...)}).Error())
}

func (p *parser) parse(data []byte) (Config, error) {
	// VS Code's mcp.json may hold comments and trailing commas: they
	// become spaces, which keeps every offset (and so the line and column
	// of an error) as in the file. A file that is not even that is left
	// as it is, for encoding/json to say where it goes wrong.
	if ast, err := hujson.Parse(data); err == nil {
		if name, at, dup := duplicateKey(ast); dup {
			line, col := position(data, int64(at)+1)
			return Config{}, &ConfigError{File: p.file, Msg: fmt.Sprintf("line %d, column %d: key %s given twice", line, col, name)}
		}
		ast.Standardize()
		data = ast.Pack()
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			line, col := position(data, syntax.Offset)
			return Config{}, &ConfigError{File: p.file, Msg: fmt.Sprintf("not JSON: line %d, column %d: %v", line, col, err), Err: err}
		}
		return Config{}, &ConfigError{File: p.file, Msg: "not a JSON object", Err: err}
	}
	if top == nil {
		return Config{}, &ConfigError{File: p.file, Msg: "not a JSON object"}
	}
	key := ""
	for _, k := range []string{"mcpServers", "servers"} {
		if _, ok := top[k]; !ok {
			continue
		}
		if key != "" {
			return Config{}, p.fail("", `has both "mcpServers" and "servers"; give one`)
		}
		key = k
	}
	if key == "" {
		return Config{}, p.fail("", `no "mcpServers" (or VS Code's "servers") object`)
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != key {
			p.warn(k, "unknown key, ignored")
		}
	}
	var entries map[string]json.RawMessage
	if err := p.object(key, top[key], &entries); err != nil {
		return Config{}, err
	}
	cfg := Config{Servers: make(map[string]Server, len(entries))}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		p.server = name
		if name == "" {
			return Config{}, p.fail("", "a server needs a name")
		}
		if strings.Contains(name, "/") || strings.Contains(name, DefaultSeparator) || strings.ContainsFunc(name, unicode.IsSpace) {
			return Config{}, p.fail("", `a server's name cannot hold "/", %q or spaces: its tools could not be named SERVER/TOOL or SERVER%sTOOL`, DefaultSeparator, DefaultSeparator)
		}
		s, err := p.parseServer(entries[name])
		if err != nil {
			return Config{}, err
		}
		cfg.Servers[name] = s
	}
	p.server = ""
	return cfg, nil
}

// duplicateKey finds the first object member, at any depth, whose name an
// earlier member of the same object already gave (encoding/json would keep
// the last in silence): its name as written and its offset.
func duplicateKey(v hujson.Value) (name string, offset int, ok bool) {
	switch c := v.Value.(type) {
	case *hujson.Object:
		seen := make(map[string]bool, len(c.Members))
		for _, m := range c.Members {
			lit, _ := m.Name.Value.(hujson.Literal)
			key := lit.String()
			if seen[key] {
				return string(lit), m.Name.StartOffset, true
			}
			seen[key] = true
			if name, offset, ok = duplicateKey(m.Value); ok {
				return name, offset, ok
			}
		}
	case *hujson.Array:
		for _, e := range c.Elements {
			if name, offset, ok = duplicateKey(e); ok {
				return name, offset, ok
			}
		}
	}
	return "", 0, false
}

// position turns the offset of a *json.SyntaxError (just past the byte at
// fault) into the 1-based line and column of that byte.
func position(data []byte, offset int64) (line, col int) {
	before := data[:min(int(offset), len(data))]
	line = bytes.Count(before, []byte("\n")) + 1
	return line, len(before) - bytes.LastIndexByte(before, '\n') - 1
}

// jsonType names the JSON type of raw, for errors.
func jsonType(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func (p *parser) object(key string, raw json.RawMessage, into *map[string]json.RawMessage) error {
	if err := json.Unmarshal(raw, into); err != nil || *into == nil {
		return p.fail(key, "want an object, got %s", jsonType(raw))
	}
	return nil
}

func (p *parser) str(key string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", p.fail(key, "want a string, got %s", jsonType(raw))
	}
	return p.expand(key, s), nil
}

func (p *parser) strings(key string, raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return nil, p.fail(key, "want an array of strings, got %s", jsonType(raw))
	}
	out := make([]string, len(list))
	for i, item := range list {
		s, err := p.str(fmt.Sprintf("%s[%d]", key, i), item)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

func (p *parser) stringMap(key string, raw json.RawMessage) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := p.object(key, raw, &m); err != nil {
		return nil, p.fail(key, "want an object of strings, got %s", jsonType(raw))
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s, err := p.str(key+"."+k, m[k])
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

func (p *parser) duration(key string, raw json.RawMessage) (time.Duration, error) {
	s, err := p.str(key, raw)
	if err != nil {
		return 0, p.fail(key, `want a duration such as "500ms" or "30s", got %s`, jsonType(raw))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, p.fail(key, `want a positive duration such as "500ms" or "30s", got %q`, s)
	}
	return d, nil
}

// durationOr is a positive duration, or -1 for the word none (which
// turns off what the duration times).
func (p *parser) durationOr(key string, raw json.RawMessage, none string) (time.Duration, error) {
	if s, err := p.str(key, raw); err == nil && s == none {
		return -1, nil
	}
	d, err := p.duration(key, raw)
	if err != nil {
		return 0, p.fail(key, `want a positive duration such as "500ms" or "30s", or %q`, none)
	}
	return d, nil
}

func (p *parser) count(key string, raw json.RawMessage) (int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n <= 0 {
		return 0, p.fail(key, "want a positive integer, got %s", bytes.TrimSpace(raw))
	}
	return n, nil
}

func (p *parser) boolean(key string, raw json.RawMessage) (bool, error) {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, p.fail(key, "want true or false, got %s", jsonType(raw))
	}
	return b, nil
}

// variable matches ${NAME} and ${env:NAME}; input VS Code's ${input:ID}.
var (
	variable = regexp.MustCompile(`\$\{(env:)?([A-Za-z_][A-Za-z0-9_]*)\}`)
	input    = regexp.MustCompile(`\$\{input:[^}]*\}`)
)

// expand substitutes ${VAR} and ${env:VAR} in s. An unset variable becomes
// "" with a warning: the server may not need it. VS Code's ${input:ID},
// which asks the user, is not supported: it stays as written, with a
// warning.
func (p *parser) expand(key, s string) string {
	for _, m := range input.FindAllString(s, -1) {
		p.warn(key, "%s is not supported (VS Code asks the user for it); the server gets it as written", m)
	}
	return variable.ReplaceAllStringFunc(s, func(m string) string {
		name := variable.FindStringSubmatch(m)[2]
		v, ok := p.lookup(name)
		if !ok {
			p.warn(key, "%s is not set; replaced by an empty string", m)
		}
		return v
	})
}

// serverKeys are the keys of a server entry this parser reads; the value
// says for which transport ("" for both).
var serverKeys = map[string]string{
	"type": "", "conduit": "", "disabled": "",
	"command": "stdio", "args": "stdio", "env": "stdio", "cwd": "stdio",
	"url": "http", "headers": "http",
}

func (p *parser) parseServer(raw json.RawMessage) (Server, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Server{}, p.fail("", "want an object, got %s", jsonType(raw))
	}
	_, hasCommand := m["command"]
	_, hasURL := m["url"]
	kind, sse := "", false
	switch {
	case hasCommand && hasURL:
		return Server{}, p.fail("", `has both "command" and "url"; give one`)
	case hasCommand:
		kind = "stdio"
	case hasURL:
		kind = "http"
	}
	if raw, ok := m["type"]; ok {
		t, err := p.str("type", raw)
		if err != nil {
			return Server{}, err
		}
		as := t
		if t == "sse" {
			as, sse = "http", true // the URL's keys
		}
		switch {
		case t != "stdio" && t != "http" && t != "sse":
			return Server{}, p.fail("type", `unknown type %q: want "stdio", "http" or "sse"`, t)
		case kind == "" && t == "stdio":
			return Server{}, p.fail("command", `missing: a "stdio" server needs a command`)
		case kind == "":
			return Server{}, p.fail("url", `missing: an %q server needs a url`, t)
		case kind != as:
			return Server{}, p.fail("type", "%q does not match the server's %s", t, map[string]string{"stdio": "command", "http": "url"}[kind])
		}
	}
	if kind == "" {
		return Server{}, p.fail("", `needs "command" (stdio) or "url" (HTTP)`)
	}

	s := Server{SSE: sse}
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		only, known := serverKeys[k]
		switch {
		case !known:
			p.warn(k, "unknown key, ignored")
			continue
		case only != "" && only != kind:
			p.warn(k, "only used by %s servers, ignored", only)
			continue
		}
		switch k {
		case "command":
			if s.Command, err = p.str(k, v); err == nil && s.Command == "" {
				err = p.fail(k, "empty")
			}
		case "args":
			s.Args, err = p.strings(k, v)
		case "env":
			s.Env, err = p.stringMap(k, v)
		case "cwd":
			s.Cwd, err = p.str(k, v)
		case "url":
			s.URL, err = p.str(k, v)
			if err == nil && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
				err = p.fail(k, "want an http:// or https:// URL, got %q", s.URL)
			}
		case "headers":
			s.Headers, err = p.stringMap(k, v)
		case "conduit":
			s.Conduit, err = p.parseSettings(v)
		case "disabled": // Cline's; after "conduit", whose own it joins
			var off bool
			off, err = p.boolean(k, v)
			s.Conduit.Disabled = s.Conduit.Disabled || off
		}
		if err != nil {
			return Server{}, err
		}
	}
	return s, nil
}

func (p *parser) parseSettings(raw json.RawMessage) (Settings, error) {
	var m map[string]json.RawMessage
	if err := p.object("conduit", raw, &m); err != nil {
		return Settings{}, err
	}
	var s Settings
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key, v := "conduit."+k, m[k]
		switch k {
		case "era":
			var e string
			if e, err = p.str(key, v); err == nil {
				s.Era = conduit.Era(e)
				if e != "" && s.Era != conduit.EraLegacy && s.Era != conduit.EraModern {
					err = p.fail(key, `want "legacy" or "modern", got %q`, e)
				}
			}
		case "protocolVersion":
			if s.ProtocolVersion, err = p.str(key, v); err == nil {
				if _, ok := era.Of(s.ProtocolVersion); !ok {
					err = p.fail(key, "unknown protocol version %q", s.ProtocolVersion)
				}
			}
		case "timeout":
			s.Timeout, err = p.duration(key, v)
		case "maxTotalTimeout":
			s.MaxTotalTimeout, err = p.duration(key, v)
		case "handlerTimeout":
			s.HandlerTimeout, err = p.duration(key, v)
		case "startTimeout":
			s.StartTimeout, err = p.duration(key, v)
		case "maxServerRequests":
			s.MaxServerRequests, err = p.count(key, v)
		case "roots":
			s.Roots, err = p.strings(key, v)
		case "restart":
			s.Restart, err = p.parseRestart(key, v)
		case "ping":
			s.Ping, err = p.parsePing(key, v)
		case "disabled":
			s.Disabled, err = p.boolean(key, v)
		case "inheritEnv":
			s.InheritEnv, err = p.boolean(key, v)
		case "optional":
			s.Optional, err = p.boolean(key, v)
		case "prefix":
			var prefix bool
			prefix, err = p.boolean(key, v)
			s.NoPrefix = !prefix
		case "oauth":
			s.OAuth, err = p.parseOAuth(key, v)
		default:
			p.warn(key, "unknown key, ignored")
		}
		if err != nil {
			return Settings{}, err
		}
	}
	return s, nil
}

func (p *parser) parseOAuth(key string, raw json.RawMessage) (OAuthSettings, error) {
	var m map[string]json.RawMessage
	if err := p.object(key, raw, &m); err != nil {
		return OAuthSettings{}, err
	}
	var o OAuthSettings
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sub, v := key+"."+k, m[k]
		switch k {
		case "clientId":
			o.ClientID, err = p.str(sub, v)
		case "clientSecret":
			o.ClientSecret, err = p.str(sub, v)
		case "clientCredentials":
			o.ClientCredentials, err = p.boolean(sub, v)
		case "privateKeyJwt":
			o.PrivateKeyJWT, err = p.parsePrivateKeyJWT(sub, v)
		case "jwtBearer":
			o.JWTBearer, err = p.parseJWTBearer(sub, v)
		case "enterprise":
			o.Enterprise, err = p.parseEnterprise(sub, v)
		case "dpop":
			o.DPoP, err = p.boolean(sub, v)
		case "clientMetadataUrl":
			if o.ClientMetadataURL, err = p.str(sub, v); err == nil && !strings.HasPrefix(o.ClientMetadataURL, "https://") {
				err = p.fail(sub, "want an https URL, got %q", o.ClientMetadataURL)
			}
		default:
			p.warn(sub, "unknown key, ignored")
		}
		if err != nil {
			return OAuthSettings{}, err
		}
	}
	return o, p.checkOAuth(key, o)
}

func (p *parser) parseRestart(key string, raw json.RawMessage) (RestartPolicy, error) {
	var m map[string]json.RawMessage
	if err := p.object(key, raw, &m); err != nil {
		return RestartPolicy{}, err
	}
	var r RestartPolicy
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		sub, v := key+"."+k, m[k]
		switch k {
		case "backoff":
			var b map[string]json.RawMessage
			if err = p.object(sub, v, &b); err != nil {
				break
			}
			for _, bk := range slices.Sorted(maps.Keys(b)) {
				switch bk {
				case "initial":
					r.InitialBackoff, err = p.duration(sub+".initial", b[bk])
				case "max":
					r.MaxBackoff, err = p.duration(sub+".max", b[bk])
				default:
					p.warn(sub+"."+bk, "unknown key, ignored")
				}
				if err != nil {
					return RestartPolicy{}, err
				}
			}
		case "intensity":
			r.Intensity, err = p.count(sub, v)
		case "period":
			r.Period, err = p.duration(sub, v)
		case "resetAfter":
			r.ResetAfter, err = p.duration(sub, v)
		case "revive":
			r.Revive, err = p.durationOr(sub, v, "never")
		default:
			p.warn(sub, "unknown key, ignored")
		}
		if err != nil {
			return RestartPolicy{}, err
		}
	}
	return r, nil
}

func (p *parser) parsePing(key string, raw json.RawMessage) (PingPolicy, error) {
	var m map[string]json.RawMessage
	if err := p.object(key, raw, &m); err != nil {
		return PingPolicy{}, err
	}
	var r PingPolicy
	var err error
	for _, k := range slices.Sorted(maps.Keys(m)) {
		switch k {
		case "interval":
			r.Interval, err = p.durationOr(key+"."+k, m[k], "off")
		case "failures":
			r.Failures, err = p.count(key+"."+k, m[k])
		default:
			p.warn(key+"."+k, "unknown key, ignored")
		}
		if err != nil {
			return PingPolicy{}, err
		}
	}
	return r, nil
}
