package era

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
)

// _meta keys of 2026-07-28 requests.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaProgressToken      = "progressToken"
	// TasksExtension is the id of the tasks extension.
	TasksExtension = "io.modelcontextprotocol/tasks"
)

// Result types of 2026-07-28.
const (
	ResultComplete      = "complete"
	ResultInputRequired = "input_required"
	ResultTask          = "task"
)

// ModernCapabilities is Capabilities in the 2026 shape, with the tasks
// extension when tasks were accepted.
func (d Declared) ModernCapabilities(version string) map[string]any {
	caps := d.Capabilities(version)
	if d.Tasks {
		caps["extensions"] = map[string]any{TasksExtension: map[string]any{}}
	}
	return caps
}

// Meta is the _meta every modern request carries, in two parts: the
// members fixed for a session (protocol version, client capabilities,
// client info), encoded once by NewMeta, and those each request adds
// (Request). A Meta does not change once made: concurrent calls share it.
type Meta struct {
	version string
	session []Member
}

// NewMeta encodes the _meta members fixed for a session of version.
func NewMeta(version string, capabilities map[string]any, info messages.Implementation) (Meta, error) {
	m := Meta{version: version}
	for _, f := range []struct {
		key string
		v   any
	}{{MetaProtocolVersion, version}, {MetaClientCapabilities, capabilities}, {MetaClientInfo, info}} {
		b, err := json.Marshal(f.v)
		if err != nil {
			return Meta{}, fmt.Errorf("_meta %s: %w", f.key, err)
		}
		m.session = append(m.session, Member{Key: f.key, Value: b})
	}
	return m, nil
}

// Version is the protocol version m carries.
func (m Meta) Version() string { return m.version }

// Request returns the _meta members of one request: the session's, with
// the log level ("" sends none: the server then sends no logs) and the
// progress token (nil sends none). The members may be shared with other
// requests: they are read, not changed.
func (m Meta) Request(logLevel string, progressToken any) ([]Member, error) {
	if logLevel == "" && progressToken == nil {
		// Nothing of the request's own: the session's members as they
		// are, full, so that an append copies them (every round of
		// every call would otherwise copy them).
		return m.session[:len(m.session):len(m.session)], nil
	}
	out := make([]Member, len(m.session), len(m.session)+2)
	copy(out, m.session)
	if logLevel != "" {
		out = append(out, Member{Key: MetaLogLevel, Value: jsonscan.AppendString(nil, logLevel)})
	}
	if progressToken != nil {
		t, err := ProgressToken(progressToken)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ProgressToken returns the _meta member that asks for progress
// notifications under token.
func ProgressToken(token any) (Member, error) {
	b, err := json.Marshal(token)
	if err != nil {
		return Member{}, fmt.Errorf("_meta %s: %w", MetaProgressToken, err)
	}
	return Member{Key: MetaProgressToken, Value: b}, nil
}

// ResultType reads a modern result's resultType: absent means complete; a
// value Conduit does not know is an error, as is "task" where tasks were not
// declared or the method is not tools/call.
//
// raw must be valid JSON, as the result of a decoded frame is
// (messages.Decode checked it): ResultType does not check it again. It
// reads resultType with a scan of the top-level members and decodes raw in
// full only where the scan cannot tell what json.Unmarshal would make of it
// (not an object, a key with an escape, a resultType that is not a plain
// string), so its answers and errors are json.Unmarshal's.
func ResultType(raw json.RawMessage, method string, tasks bool) (string, error) {
	t, present, err := readResultType(raw)
	if err != nil {
		return "", err
	}
	return classifyResultType(string(t), present, method, tasks)
}

// classifyResultType applies ResultType's rules to the resultType read
// (present reports whether there was one).
func classifyResultType(t string, present bool, method string, tasks bool) (string, error) {
	if !present {
		return ResultComplete, nil
	}
	switch t {
	case ResultComplete:
		return ResultComplete, nil
	case ResultInputRequired:
		if method != messages.MethodCallTool && method != messages.MethodReadResource && method != messages.MethodGetPrompt {
			return "", fmt.Errorf("resultType %q is not allowed for %s", t, method)
		}
		return ResultInputRequired, nil
	case ResultTask:
		if strings.HasPrefix(method, "tasks/") {
			// Some examples show "task" on tasks/* answers, where the
			// spec says "complete" (one of the contradictions listed in
			// docs/protocol.md): accept both there.
			return ResultComplete, nil
		}
		if !tasks {
			return "", errors.New(`resultType "task" but the client did not declare the tasks extension`)
		}
		if method != messages.MethodCallTool {
			return "", fmt.Errorf(`resultType "task" is not allowed for %s`, method)
		}
		return ResultTask, nil
	default:
		return "", fmt.Errorf("unknown resultType %q", t)
	}
}

// readResultType returns a result's resultType, and false when it is
// absent or null.
func readResultType(raw json.RawMessage) (t []byte, present bool, err error) {
	if t, present, ok := stringMember(raw, "resultType"); ok {
		return t, present, nil
	}
	var r struct {
		ResultType *string `json:"resultType"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false, fmt.Errorf("result is not an object: %w", err)
	}
	if r.ResultType == nil {
		return nil, false, nil
	}
	return []byte(*r.ResultType), true, nil
}

// InputRequired is what an input_required result asks: the input
// requests by key, and the request state as received (nil when none came).
type InputRequired struct {
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage            `json:"requestState"`
}

// inputRequired is the type the full decode of ReadInputRequired fills:
// json.Unmarshal names it in its errors.
type inputRequired InputRequired

// ReadInputRequired reads an input_required result as json.Unmarshal
// reads it into an InputRequired; the values alias raw. As for
// ResultType, raw must be valid JSON: it is read with a scan, and decoded
// in full only where the scan cannot tell what json.Unmarshal would make
// of it.
func ReadInputRequired(raw json.RawMessage) (InputRequired, error) {
	var ir InputRequired
	addRequest := func(key, v []byte) bool {
		ir.InputRequests[string(key)] = v
		return true
	}
	scanned := scanObject(raw, func(key, v []byte) bool {
		switch {
		case equalFoldASCII(key, "inputRequests"):
			switch {
			case isNull(v):
				ir.InputRequests = nil
			case v[0] == '{':
				if ir.InputRequests == nil { // a repeated member adds to the map, as Unmarshal does
					ir.InputRequests = map[string]json.RawMessage{}
				}
				return scanObject(v, addRequest)
			default:
				return false
			}
		case equalFoldASCII(key, "requestState"):
			ir.RequestState = v
		}
		return true
	})
	if scanned {
		return ir, nil
	}
	var full inputRequired
	if err := json.Unmarshal(raw, &full); err != nil {
		return InputRequired{}, err
	}
	return InputRequired(full), nil
}

// LegacyHTTPStatus reports whether an HTTP status that answered the probe
// over Streamable HTTP, with no JSON-RPC error in its body, means a legacy
// server: any 4xx, since a legacy server answers 400, 404 or 405 to a
// request it does not know outside a session. No other status is an answer:
// a 5xx is a failing server, a 2xx that is not JSON-RPC not an MCP endpoint.
func LegacyHTTPStatus(status int) bool { return status >= 400 && status <= 499 }

// DiscoverResult is the answer to server/discover.
type DiscoverResult struct {
	ResultType        string          `json:"resultType"`
	SupportedVersions []string        `json:"supportedVersions"`
	Capabilities      json.RawMessage `json:"capabilities"`
	Instructions      string          `json:"instructions,omitempty"`
	Meta              struct {
		ServerInfo messages.Implementation `json:"io.modelcontextprotocol/serverInfo"`
	} `json:"_meta"`
}

// Probe is what the server/discover probe concluded.
type Probe struct {
	// Era is modern when the server speaks 2026-07-28 (then Version is the
	// version to use); legacy means fall back to initialize.
	Era     messages.Era
	Version string
	// Retry is set when the server answered -32022 with a version list:
	// discover again with Retry.
	Retry string
	// Result is the parsed discover result (modern only).
	Result *DiscoverResult
}

// Mutual returns the newest version of ours that is in theirs, or "".
func Mutual(ours, theirs []string) string {
	for _, v := range ours {
		if slices.Contains(theirs, v) {
			return v
		}
	}
	return ""
}

// ReadProbe interprets the answer to a server/discover probe (see "Finding
// the era" in docs/protocol.md):
// a DiscoverResult with a mutual modern version → modern; -32022 with
// data.supported → retry with a listed version we speak; anything else —
// another error, a bare {} or no mutual version → legacy. The fallback is
// never keyed to one error code.
// It reads answers only: a probe that got none (the server could not be
// reached, or answered HTTP without JSON-RPC) is the caller's to judge,
// with LegacyHTTPStatus.
func ReadProbe(raw json.RawMessage, rpcErr *messages.RPCError) Probe {
	legacy := Probe{Era: messages.EraLegacy}
	if rpcErr != nil {
		if rpcErr.Code != messages.CodeUnsupportedProtocolVersion || len(rpcErr.Data) == 0 {
			return legacy
		}
		var data struct {
			Supported []string `json:"supported"`
		}
		if json.Unmarshal(rpcErr.Data, &data) != nil || len(data.Supported) == 0 {
			return legacy
		}
		if v := Mutual(ModernVersions, data.Supported); v != "" {
			return Probe{Era: messages.EraModern, Retry: v}
		}
		return legacy
	}
	var res DiscoverResult
	if json.Unmarshal(raw, &res) != nil || len(res.SupportedVersions) == 0 {
		return legacy
	}
	if v := Mutual(ModernVersions, res.SupportedVersions); v != "" {
		return Probe{Era: messages.EraModern, Version: v, Result: &res}
	}
	return legacy
}
