// Package messages holds every value that crosses an actor boundary in
// Conduit: JSON-RPC frames and ids, the MCP types the client reads and
// writes, the handler set (Handlers) and the request values it receives,
// typed form fields, and the errors callers inspect. It imports only the
// standard library (and Conduit's internal JSON scanner).
//
// A host rarely imports it: the root package conduit re-exports what
// everyday use needs. Import it for the wire types and JSON-RPC frames
// that are not re-exported, for instance to write a transport or a test
// server.
package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/conduitmcp/conduit/internal/jsonscan"
)

// Version is the JSON-RPC version every frame carries.
const Version = "2.0"

// ID is a JSON-RPC request id: a string or an integer, never null. The zero
// ID means "no id" (a notification, or an error that cannot be attributed).
// IDs are comparable and usable as map keys: two ids are equal when their
// JSON is equal, so the integer 7 and the string "7" differ, as they must.
// An integer id is kept as a number: making, decoding and encoding one
// allocates nothing (every call and response has one).
type ID struct {
	raw string // a string id's JSON text (quoted), intID for an integer id, "" for none
	num int64  // an integer id
}

// intID marks an integer id in ID.raw; a string id's text starts with a
// quote. (A flag of its own would make every map keyed by ids a third
// bigger.)
const intID = "\x00"

// IntID returns the integer id n.
func IntID(n int64) ID { return ID{raw: intID, num: n} }

// StringID returns the string id s.
func StringID(s string) ID {
	b, _ := json.Marshal(s) // a string always marshals
	return ID{raw: string(b)}
}

// IsZero reports whether id is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// String returns the id's JSON text, or "null" for the zero ID.
func (id ID) String() string {
	if id.raw == intID {
		return strconv.FormatInt(id.num, 10)
	}
	if id.raw == "" {
		return "null"
	}
	return id.raw
}

// appendJSON appends the id's JSON text, or null for the zero ID.
func (id ID) appendJSON(b []byte) []byte {
	switch {
	case id.raw == intID:
		return strconv.AppendInt(b, id.num, 10)
	case id.raw == "":
		return append(b, "null"...)
	}
	return append(b, id.raw...)
}

// MarshalJSON writes the id, or null for the zero ID.
func (id ID) MarshalJSON() ([]byte, error) { return id.appendJSON(nil), nil }

// UnmarshalJSON accepts a string or an integer. null, fractions, exponents,
// booleans, arrays and objects are refused: the spec allows only strings and
// integers, and a float id could not be echoed back exactly. A string with
// an unpaired surrogate escape ("\ud800") is refused too: decoding would
// make it U+FFFD, an id the peer never sent. (Invalid UTF-8 never gets
// here: a message that is not UTF-8 is not JSON, see DecodeInto.)
func (id *ID) UnmarshalJSON(data []byte) error {
	named, exact, err := parseID(data)
	if err != nil {
		return err
	}
	if !exact {
		return fmt.Errorf("jsonrpc: id %s is not an integer (ids are strings or integers)", truncate(bytes.TrimSpace(data), 32))
	}
	*id = named
	return nil
}

// NamedID is Conduit's one rule of id equality, shared by the runtime and
// the transports: it returns the id raw names. A string names the string
// id of equal value (escapes resolved: "a" and "\u0061" are one id); an
// integer names the integer id, and so does a number written with a zero
// fraction or an exponent whose value is that integer (3.0, 3e0, 30e-1
// all name 3). exact is false for those: they name an id but are not one
// as written, so a message carrying one is malformed (its id is not a
// string or an integer) even though it is known which call it answers.
// ok is false for null, a fraction (1.5), a number beyond int64, a
// boolean, an array, an object, and a string that is not valid UTF-8 or
// holds an unpaired surrogate escape.
func NamedID(raw []byte) (id ID, exact, ok bool) {
	id, exact, err := parseID(raw)
	return id, exact, err == nil
}

// parseID is NamedID, with the reason when raw names no id.
func parseID(data []byte) (id ID, exact bool, err error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return ID{}, false, errors.New("jsonrpc: empty id")
	}
	switch data[0] {
	case '"':
		if plainString(data) {
			// Already in StringID's canonical form: its text is the id.
			return ID{raw: string(data)}, true, nil
		}
		if !utf8.Valid(data) || unpairedSurrogate(data) {
			return ID{}, false, errors.New("jsonrpc: string id is not valid Unicode")
		}
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return ID{}, false, fmt.Errorf("jsonrpc: bad string id: %w", err)
		}
		return StringID(s), true, nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if n, ok := parseInt64(data); ok {
			return IntID(n), true, nil
		}
		if n, ok := integralNumber(data); ok {
			return IntID(n), false, nil
		}
		return ID{}, false, fmt.Errorf("jsonrpc: id %s is not a 64-bit integer", truncate(data, 32))
	}
	return ID{}, false, fmt.Errorf("jsonrpc: id must be a string or an integer, got %s", truncate(data, 32))
}

// plainString reports whether b is a JSON string of printable ASCII that
// json.Marshal writes as it is: no escape, no quote, none of the HTML
// characters it escapes (<, >, &). Such a string id needs no decoding and
// re-encoding: the ids servers send (counters, UUIDs) are all of this kind,
// and that round trip was four allocations per server request.
func plainString(b []byte) bool {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return false
	}
	for _, c := range b[1 : len(b)-1] {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// integralNumber reads a JSON number with a fraction or an exponent whose
// value is an integer within int64 (3.0, -2.50e1, 4e2), exactly: no float
// rounding, so 9007199254740993.0 is 9007199254740993.
func integralNumber(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	i := 0
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	intPart := b[:i]
	var frac []byte
	if i < len(b) && b[i] == '.' {
		j := i + 1
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j == i+1 {
			return 0, false // "1.": no digit after the point
		}
		frac, i = b[i+1:j], j
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		expNeg := i < len(b) && b[i] == '-'
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			i++
		}
		start := i
		for i < len(b) && isDigit(b[i]) {
			if exp < 1<<20 { // beyond, the value is 0 or overflows anyway
				exp = exp*10 + int(b[i]-'0')
			}
			i++
		}
		if i == start {
			return 0, false
		}
		if expNeg {
			exp = -exp
		}
	}
	if len(intPart) == 0 || i != len(b) {
		return 0, false
	}
	// The digits of intPart and frac, with the decimal point exp places
	// right of intPart's end: an integer when every digit right of the
	// point is zero.
	digits := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	point := len(intPart) + exp
	first := 0 // the first digit that is not 0
	for first < digits && digit(first) == '0' {
		first++
	}
	switch {
	case first == digits:
		return 0, true // 0.0, -0e5
	case point-first > 19:
		return 0, false // beyond int64 (or a fraction): no need to count
	}
	var n uint64
	for k := 0; k < max(digits, point); k++ {
		d := byte('0')
		if k < digits {
			d = digit(k)
		}
		if k >= point {
			if d != '0' {
				return 0, false // a fraction
			}
			continue
		}
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(d-'0')
		if n > 1<<63 {
			return 0, false
		}
	}
	switch {
	case neg:
		return int64(-n), true
	case n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// unpairedSurrogate reports whether the JSON string s has a \uD800-\uDFFF
// escape that is not a high surrogate followed by a low one.
func unpairedSurrogate(s []byte) bool {
	for i := 0; i+5 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // an escaped character: skip it (it may be a backslash)
			continue
		}
		r := hex4(s[i+2 : i+6])
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 < len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo := hex4(s[i+8 : i+12]); lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return true
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		}
		i += 5
	}
	return false
}

// hex4 reads four hex digits (-1 when they are not).
func hex4(b []byte) int {
	n := 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			n = n<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			n = n<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return n
}

// parseInt64 reads a decimal integer, an optional minus sign and digits
// only, as strconv.ParseInt does (which would make the text a string, an
// allocation per id decoded); it reports false for anything else and for a
// value beyond int64.
func parseInt64(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' || n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return int64(-n), true
	case !neg && n < 1<<63:
		return int64(n), true
	}
	return 0, false
}

// Frame is one JSON-RPC 2.0 message on the wire: a request (ID and Method), a
// notification (Method, no ID) or a response (ID and Result or Error).
type Frame struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id,omitzero"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// IsRequest reports whether f is a request (it expects a response).
func (f *Frame) IsRequest() bool { return f.Method != "" && !f.ID.IsZero() }

// IsNotification reports whether f is a notification.
func (f *Frame) IsNotification() bool { return f.Method != "" && f.ID.IsZero() }

// IsResponse reports whether f is a response.
func (f *Frame) IsResponse() bool { return f.Method == "" }

// NewRequest builds a request frame; params is marshalled unless it is nil.
func NewRequest(id ID, method string, params any) (*Frame, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return &Frame{JSONRPC: Version, ID: id, Method: method, Params: raw}, nil
}

// NewNotification builds a notification frame.
func NewNotification(method string, params any) (*Frame, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return &Frame{JSONRPC: Version, Method: method, Params: raw}, nil
}

// NewResult builds a success response; a nil result is sent as {}.
func NewResult(id ID, result any) (*Frame, error) {
	raw := json.RawMessage(`{}`)
	if result != nil {
		b, err := json.Marshal(result)
		if err != nil {
			return nil, fmt.Errorf("jsonrpc: marshal result: %w", err)
		}
		raw = b
	}
	return &Frame{JSONRPC: Version, ID: id, Result: raw}, nil
}

// NewErrorResponse builds an error response. id may be zero (sent as null)
// when the failing message could not be attributed.
func NewErrorResponse(id ID, e *RPCError) *Frame {
	return &Frame{JSONRPC: Version, ID: id, Error: e}
}

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("jsonrpc: marshal params: %w", err)
	}
	return b, nil
}

// Encode writes f as one line of JSON (encoding/json never emits a raw
// newline: it escapes them inside strings). The output is byte for byte
// what json.Marshal(f) gives, with "id": null in a response without an id
// (an unattributable error response), but the envelope is written by hand
// and a raw member that is already compact and needs no HTML escaping is
// appended as is: Marshal would re-validate and compact every raw payload
// through reflection.
func (f *Frame) Encode() ([]byte, error) { return f.encode(appendRaw) }

// EncodeAsIs is Encode with Params written as they are, only compacted
// (jsonscan.Compacted): no <, >, & or U+2028/9 in them is escaped. It is
// for params that carry a peer's bytes to be returned exactly as received
// (a modern retry's requestState); invalid JSON is an error.
func (f *Frame) EncodeAsIs() ([]byte, error) { return f.encode(appendCompacted) }

func (f *Frame) encode(appendParams func([]byte, json.RawMessage) ([]byte, error)) ([]byte, error) {
	b := make([]byte, 0, 64+len(f.Method)+len(f.Params)+len(f.Result))
	b = append(b, `{"jsonrpc":`...)
	b = jsonscan.AppendString(b, f.JSONRPC)
	if !f.ID.IsZero() || f.Method == "" {
		// A response must carry "id", null when it cannot be attributed.
		b = f.ID.appendJSON(append(b, `,"id":`...))
	}
	var err error
	if f.Method != "" {
		b = jsonscan.AppendString(append(b, `,"method":`...), f.Method)
	}
	if len(f.Params) > 0 {
		if b, err = appendParams(append(b, `,"params":`...), f.Params); err != nil {
			return nil, err
		}
	}
	if len(f.Result) > 0 {
		if b, err = appendRaw(append(b, `,"result":`...), f.Result); err != nil {
			return nil, err
		}
	}
	return appendError(b, f.Error)
}

// appendError appends the error member, if any, and closes the frame.
func appendError(b []byte, e *RPCError) ([]byte, error) {
	if e != nil {
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"error":`...), raw...)
	}
	return append(b, '}'), nil
}

// EncodeObject encodes members as json.Marshal encodes a
// map[string]json.RawMessage, byte for byte (keys sorted, values compacted
// and HTML-escaped, invalid JSON refused), without reflection: a value
// that is already compact and needs no escaping is appended as is.
func EncodeObject(members map[string]json.RawMessage) ([]byte, error) {
	keys := make([]string, 0, len(members))
	n := 2
	for k, v := range members {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonscan.AppendString(b, k), ':')
		var err error
		if b, err = appendRaw(b, members[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// appendRaw appends raw as json.Marshal appends a json.RawMessage
// (jsonscan.Marshaled: null for nil); invalid JSON is an error.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	v, ok := jsonscan.Marshaled(raw)
	if !ok {
		return nil, errors.New("jsonrpc: a raw member is not valid JSON")
	}
	return append(b, v...), nil
}

// appendCompacted appends raw compacted, its strings byte for byte
// (jsonscan.Compacted); invalid JSON is an error.
func appendCompacted(b []byte, raw json.RawMessage) ([]byte, error) {
	v, ok := jsonscan.Compacted(raw)
	if !ok {
		return nil, errors.New("jsonrpc: a raw member is not valid JSON")
	}
	return append(b, v...), nil
}

// Decode parses one wire message. It returns a *RPCError carrying the code
// the peer should get: -32700 for text that is not JSON, -32600 for JSON that
// is not a valid JSON-RPC 2.0 message (with the id when one could be read).
func Decode(data []byte) (*Frame, *DecodeError) {
	f := new(Frame)
	if err := DecodeInto(data, f); err != nil {
		return nil, err
	}
	return f, nil
}

// DecodeInto is Decode into a Frame of the caller's (which need not be on
// the heap: a connection decodes every message it reads). On error f is
// left partly set.
//
// A message that is not valid UTF-8 is not JSON (RFC 8259 §8.1): it is a
// parse error, answered with a null id, whatever id it seems to carry
// (decoding would replace its bad bytes with U+FFFD, an id the peer never
// sent). When it is a response that names a call, Answers says which, so
// that the call fails at once.
func DecodeInto(data []byte, f *Frame) *DecodeError {
	var m frameMembers
	if !jsonscan.Valid(data) || !jsonscan.Object(data, m.set) {
		return decodeMap(data, f)
	}
	return m.decode(data, f)
}

// decodeMap is DecodeInto through a map of data's members (mapMembers).
func decodeMap(data []byte, f *Frame) *DecodeError {
	m, derr := mapMembers(data)
	if derr != nil {
		return derr
	}
	return m.decode(data, f)
}

// decode builds the Frame of data, whose members m are, in f.
func (m *frameMembers) decode(data []byte, f *Frame) *DecodeError {
	if !utf8.Valid(data) {
		*f = Frame{}
		return &DecodeError{Err: &RPCError{Code: CodeParseError, Message: "Parse error: the message is not valid UTF-8"}, Answers: m.answers()}
	}
	return m.frame(f)
}

// ResponseTo reports the id of the call a message answers: when it is a
// JSON object without "method" (a response, well formed or not) whose "id"
// names an id (NamedID). The transports and the runtime agree through it
// on which call a message ends: the call it names gets it, as its answer
// or as its failure.
func ResponseTo(data []byte) (ID, bool) {
	var m frameMembers
	if !jsonscan.Valid(data) || !jsonscan.Object(data, m.set) {
		var derr *DecodeError
		if m, derr = mapMembers(data); derr != nil {
			return ID{}, false
		}
	}
	id := m.answers()
	return id, !id.IsZero()
}

// answers is the id a response names (zero for a request or notification,
// or an id that names none).
func (m *frameMembers) answers() ID {
	if m.method != nil || m.id == nil {
		return ID{}
	}
	id, _, ok := NamedID(m.id)
	if !ok {
		return ID{}
	}
	return id
}

// wireStrings are the strings of a frame's envelope that every message
// repeats: decoding them allocates nothing.
var wireStrings = jsonscan.NewInterner(Version,
	MethodInitialize, MethodInitialized, MethodPing, MethodCancelled, MethodProgress, MethodLog,
	MethodSetLevel, MethodCreateMessage, MethodElicit, MethodListRoots, MethodRootsListChanged,
	MethodElicitationComplete, MethodListTools, MethodCallTool, MethodListResources,
	MethodReadResource, MethodListPrompts, MethodGetPrompt, MethodDiscover,
	MethodGetTask, MethodUpdateTask, MethodCancelTask, MethodTaskResult, MethodTaskStatus)

// frameMembers are the members of a message that make its Frame, each nil
// when absent; a repeated key keeps its last value, as in decoding.
type frameMembers struct {
	jsonrpc, id, method, params, result, error json.RawMessage
}

// set keeps value when key names a frame member.
func (m *frameMembers) set(key, value []byte) bool {
	switch string(key) {
	case "jsonrpc":
		m.jsonrpc = value
	case "id":
		m.id = value
	case "method":
		m.method = value
	case "params":
		m.params = value
	case "result":
		m.result = value
	case "error":
		m.error = value
	}
	return true
}

// mapMembers reads the members of data through a map: the general way,
// taken when a key must be unescaped or data is not a JSON object, and the
// one that words a parse error.
func mapMembers(data []byte) (frameMembers, *DecodeError) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) || (len(bytes.TrimSpace(data)) > 0 && json.Valid(data)) {
			return frameMembers{}, &DecodeError{Err: &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: not a JSON object (batches are not supported)"}}
		}
		return frameMembers{}, &DecodeError{Err: &RPCError{Code: CodeParseError, Message: "Parse error: " + err.Error()}}
	}
	return frameMembers{
		jsonrpc: fields["jsonrpc"], id: fields["id"], method: fields["method"],
		params: fields["params"], result: fields["result"], error: fields["error"],
	}, nil
}

// frame checks the members of a message and builds its Frame in f.
func (m *frameMembers) frame(f *Frame) *DecodeError {
	*f = Frame{}
	var id ID
	idErr := error(nil)
	if m.id != nil && !IsNull(m.id) {
		idErr = id.UnmarshalJSON(m.id)
		if idErr == nil {
			f.ID = id
		}
	}
	invalid := func(why string) *DecodeError {
		e := &DecodeError{ID: f.ID, Err: &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: " + why}, Answers: m.answers()}
		if m.method == nil {
			// A response's id is one of ours: answered with it, the error
			// would read as an answer to the peer's own request of that id.
			e.ID = ID{}
		}
		return e
	}
	var ok bool
	if f.JSONRPC, ok = wireStrings.String(m.jsonrpc); !ok || f.JSONRPC != Version {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	if idErr != nil {
		return invalid(idErr.Error())
	}
	if m.method != nil {
		if f.Method, ok = wireStrings.String(m.method); !ok || f.Method == "" {
			return invalid(`"method" must be a non-empty string`)
		}
		if p := m.params; p != nil && !IsNull(p) {
			if t := FirstByte(p); t != '{' && t != '[' {
				return invalid(`"params" must be an object`)
			}
			f.Params = p
		}
		return nil
	}
	// A response.
	if m.id == nil {
		return invalid(`a message needs "method" or "id"`)
	}
	if (m.result != nil) == (m.error != nil) {
		return invalid(`a response needs exactly one of "result" and "error"`)
	}
	if m.result != nil {
		f.Result = m.result
		return nil
	}
	var rpcErr RPCError
	if err := json.Unmarshal(m.error, &rpcErr); err != nil {
		return invalid(`"error" must be an object with an integer "code" and a string "message"`)
	}
	f.Error = &rpcErr
	return nil
}

// Members splits a JSON object into its top-level members in one scan,
// without reflection; each member's value aliases data. The map is what
// json.Unmarshal into a map[string]json.RawMessage gives (a repeated key
// keeps its last value) whenever Members reports true; it reports false
// when data is not valid JSON, not an object, or has a key with an escape
// or a byte beyond ASCII in it, where the caller unmarshals instead.
func Members(data []byte) (map[string]json.RawMessage, bool) {
	if !jsonscan.Valid(data) {
		return nil, false
	}
	fields := make(map[string]json.RawMessage, 4)
	if !jsonscan.Object(data, func(key, value []byte) bool {
		fields[string(key)] = value
		return true
	}) {
		return nil, false
	}
	return fields, true
}

// DecodeError is a message that could not be decoded, with the id to answer
// (zero when none could be read) and the JSON-RPC error to answer with.
type DecodeError struct {
	ID  ID
	Err *RPCError
	// Answers is the call a malformed response names (ResponseTo), zero
	// when it is no response or names none: that call has had its answer,
	// a malformed one, and fails rather than wait for another.
	Answers ID
}

func (e *DecodeError) Error() string { return e.Err.Error() }

// IsNull reports whether raw is the JSON literal null (surrounding space
// allowed).
func IsNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// FirstByte returns the first byte of raw after any leading space (0 when
// there is none): '{' for an object, '[' for an array, '"' for a string.
func FirstByte(raw json.RawMessage) byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
