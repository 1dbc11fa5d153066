package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/conduitmcp/conduit/messages"
)

// What the HTTP transport reads of a JSON-RPC message: just enough to frame
// it (method, id, the params mirrored into headers). Everything else is the
// runtime's business.

const (
	methodInitialize = "initialize"
	methodCancelled  = "notifications/cancelled"
	metaVersionKey   = "io.modelcontextprotocol/protocolVersion"

	// Header sentinel for values that are not plain header-safe ASCII.
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

type msgKind int

const (
	kindRequest msgKind = iota
	kindNotification
	kindResponse
)

// outgoing is a client message as far as the transport needs to know it.
type outgoing struct {
	data        []byte
	kind        msgKind
	method      string
	id          string      // compact raw JSON id; "" for notifications
	key         messages.ID // the id (messages.NamedID); zero for notifications
	params      map[string]json.RawMessage
	metaVersion string // params._meta[io.modelcontextprotocol/protocolVersion]
}

// parseOutgoing reads a message the client is about to send. Keys are
// matched exactly (not case-insensitively as encoding/json does for
// structs), so that a header never mirrors a different field than the one
// the server reads.
func parseOutgoing(data []byte) (*outgoing, error) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("transport: outgoing message is not a JSON object: %w", err)
	}
	m := &outgoing{data: data}
	if raw, ok := env["method"]; ok {
		if err := json.Unmarshal(raw, &m.method); err != nil {
			return nil, errors.New("transport: outgoing message has a method that is not a string")
		}
	}
	key, _, hasID := messages.NamedID(env["id"])
	switch {
	case m.method == "":
		m.kind = kindResponse
	case hasID:
		m.kind = kindRequest
		m.key = key
		m.id = compactJSON(env["id"])
	default:
		m.kind = kindNotification
	}
	if raw, ok := env["params"]; ok {
		_ = json.Unmarshal(raw, &m.params) // not an object: nothing to mirror
		var meta map[string]json.RawMessage
		if json.Unmarshal(m.params["_meta"], &meta) == nil {
			_ = json.Unmarshal(meta[metaVersionKey], &m.metaVersion)
		}
	}
	return m, nil
}

// stringParam returns params[name] when it is a JSON string.
func (m *outgoing) stringParam(name string) (string, bool) {
	var s string
	if raw, ok := m.params[name]; !ok || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// nameParam is the value mirrored into Mcp-Name, if the method has one.
func (m *outgoing) nameParam() (string, bool) {
	switch {
	case m.method == "tools/call", m.method == "prompts/get":
		return m.stringParam("name")
	case m.method == "resources/read":
		return m.stringParam("uri")
	case strings.HasPrefix(m.method, "tasks/"):
		return m.stringParam("taskId")
	}
	return "", false
}

// paramHeaders computes the Mcp-Param-* headers of a tools/call from the
// argument → header-name map of the tool (ToolHeaders). An absent or null
// argument, or one that is not a string, an integer or a boolean, gets no
// header.
func (m *outgoing) paramHeaders(byTool map[string]map[string]string) map[string]string {
	if m.method != "tools/call" {
		return nil
	}
	name, ok := m.stringParam("name")
	if !ok || len(byTool[name]) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(m.params["arguments"], &args) != nil {
		return nil
	}
	out := make(map[string]string)
	for arg, header := range byTool[name] {
		raw, ok := args[arg]
		if !ok || !httpguts.ValidHeaderFieldName("Mcp-Param-"+header) {
			continue
		}
		if v, ok := headerScalar(raw); ok {
			out["Mcp-Param-"+header] = encodeHeaderValue(v)
		}
	}
	return out
}

// headerScalar converts a JSON argument for an Mcp-Param-* header: a string
// as is, an integer in decimal, a boolean as true/false. Anything else
// (null, a fraction, an object...) has no header form.
func headerScalar(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case 't', 'f':
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return "", false
		}
		return strconv.FormatBool(b), true
	case 'n', '[', '{':
		return "", false
	}
	var num json.Number
	if json.Unmarshal(raw, &num) != nil {
		return "", false
	}
	if i, err := strconv.ParseInt(num.String(), 10, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if isDigits(strings.TrimPrefix(num.String(), "-")) {
		return num.String(), true // an integer beyond int64: its own digits
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53-1 {
		return "", false // a fraction, or an integer written as a float beyond exactness
	}
	return strconv.FormatInt(int64(f), 10), true
}

// encodeHeaderValue applies the Mcp-Name / Mcp-Param-* value encoding: a
// value that is not plain header-safe ASCII (a control character, a byte
// outside 0x20-0x7E, leading or trailing whitespace), or that looks like the
// sentinel itself, is sent as =?base64?<standard base64 of its UTF-8>?=.
func encodeHeaderValue(s string) string {
	if needsBase64(s) {
		return base64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + base64Suffix
	}
	return s
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if isSpace(s[0]) || isSpace(s[len(s)-1]) {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, base64Prefix) && strings.HasSuffix(s, base64Suffix)
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' }

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// compactJSON returns raw without insignificant whitespace (as is if it is
// not valid JSON).
func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(bytes.TrimSpace(raw))
	}
	return b.String()
}

// splitMessages turns one SSE data payload or JSON body into messages: a
// JSON array (a batch, from a server older than 2025-06-18) becomes its
// elements; anything else is one message, compacted if it spans lines.
func splitMessages(data []byte) [][]byte {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(data, &batch) == nil && len(batch) > 0 {
			out := make([][]byte, 0, len(batch))
			for _, m := range batch {
				out = append(out, []byte(compactJSON(m)))
			}
			return out
		}
	}
	if bytes.ContainsAny(data, "\r\n") {
		data = []byte(compactJSON(data))
	}
	return [][]byte{data}
}

// rpcErrorObject returns the "error" member of body if body is a JSON-RPC
// error response (an object with an integer code and a string message).
func rpcErrorObject(body []byte) (json.RawMessage, bool) {
	var env map[string]json.RawMessage
	if json.Unmarshal(body, &env) != nil {
		return nil, false
	}
	raw, ok := env["error"]
	if !ok {
		return nil, false
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(raw, &e) != nil {
		return nil, false
	}
	var code int64
	var msg string
	if json.Unmarshal(e["code"], &code) != nil || json.Unmarshal(e["message"], &msg) != nil {
		return nil, false
	}
	return raw, true
}

// unattributedError returns the error object of body when body is a
// JSON-RPC error response whose id is null or absent: an error the server
// did not tie to the request (servers often answer so a request they
// refuse early), which answers the request it came back to.
func unattributedError(body []byte) (json.RawMessage, bool) {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &env) != nil || env.ID != nil && string(env.ID) != "null" {
		return nil, false
	}
	return rpcErrorObject(body)
}

// passError wraps a JSON-RPC error object into a response for request id.
func passError(id string, errObj json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.WriteString(id)
	b.WriteString(`,"error":`)
	b.WriteString(compactJSON(errObj))
	b.WriteString(`}`)
	return b.Bytes()
}

// checkSessionID returns a *SessionIDError unless s may be an
// Mcp-Session-Id: at most limit bytes of visible ASCII.
func checkSessionID(s string, limit int) error {
	if len(s) > limit {
		return &SessionIDError{Length: len(s), Limit: limit}
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return &SessionIDError{Length: len(s), Byte: s[i], Offset: i}
		}
	}
	return nil
}

// checkHeader validates the user's extra headers once, at Connect, rather
// than failing every request later.
func checkHeader(h http.Header) error {
	for name, values := range h {
		if !httpguts.ValidHeaderFieldName(name) {
			return fmt.Errorf("transport: invalid HTTP header name %q", name)
		}
		for _, v := range values {
			if !httpguts.ValidHeaderFieldValue(v) {
				return fmt.Errorf("transport: invalid value for HTTP header %q", name)
			}
		}
	}
	return nil
}
