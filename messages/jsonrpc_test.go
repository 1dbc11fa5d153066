package messages

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/internal/testpeer"
)

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		code int    // 0: decodes
		id   string // id to answer with, for errors
		kind string // request, notification, response
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0, "", "request"},
		{"string id", `{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`, 0, "", "request"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/x"}`, 0, "", "notification"},
		{"result", `{"jsonrpc":"2.0","id":3,"result":{}}`, 0, "", "response"},
		{"error response", `{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}}`, 0, "", "response"},
		{"null id error response", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, 0, "", "response"},
		{"not json", `{"jsonrpc":`, CodeParseError, "null", ""},
		{"empty", ``, CodeParseError, "null", ""},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, CodeInvalidRequest, "null", ""},
		{"scalar", `42`, CodeInvalidRequest, "null", ""},
		{"null", `null`, CodeInvalidRequest, "null", ""},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, CodeInvalidRequest, "7", ""},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, CodeInvalidRequest, "null", ""},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, CodeInvalidRequest, "null", ""},
		{"huge id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, CodeInvalidRequest, "null", ""},
		{"method not string", `{"jsonrpc":"2.0","id":2,"method":5}`, CodeInvalidRequest, "2", ""},
		{"params scalar", `{"jsonrpc":"2.0","id":2,"method":"x","params":"s"}`, CodeInvalidRequest, "2", ""},
		{"both result and error", `{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}`, CodeInvalidRequest, "null", ""},
		{"neither", `{"jsonrpc":"2.0","id":2}`, CodeInvalidRequest, "null", ""},
		{"no id no method", `{"jsonrpc":"2.0","result":{}}`, CodeInvalidRequest, "null", ""},
		{"error of wrong type", `{"jsonrpc":"2.0","id":2,"error":"bad"}`, CodeInvalidRequest, "null", ""},
		{"deep nesting", `{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}}`, CodeParseError, "null", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, derr := Decode([]byte(tc.in))
			if tc.code != 0 {
				require.NotNil(t, derr)
				assert.Equal(t, tc.code, derr.Err.Code)
				assert.Equal(t, tc.id, derr.ID.String())
				return
			}
			require.Nil(t, derr)
			switch tc.kind {
			case "request":
				assert.True(t, f.IsRequest())
			case "notification":
				assert.True(t, f.IsNotification())
			case "response":
				assert.True(t, f.IsResponse())
			}
		})
	}
}

// A malformed response names the call it answers, by the same rule of id
// equality the transports use; a message that is not UTF-8 is a parse
// error with a null id, never an id decoded with U+FFFD in it.
func TestDecodeMalformedResponseNamesItsCall(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		code     int
		id       string // the id answered with (never a response's own)
		answers  string // the call it names ("null": none)
		message  string
	}{
		{"both", `{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}`, CodeInvalidRequest, "null", "3", `Invalid Request: a response needs exactly one of "result" and "error"`},
		{"neither", `{"jsonrpc":"2.0","id":3}`, CodeInvalidRequest, "null", "3", `Invalid Request: a response needs exactly one of "result" and "error"`},
		{"fraction zero", `{"jsonrpc":"2.0","id":3.0,"result":{}}`, CodeInvalidRequest, "null", "3", "Invalid Request: jsonrpc: id 3.0 is not an integer (ids are strings or integers)"},
		{"exponent", `{"jsonrpc":"2.0","id":30e-1,"result":{}}`, CodeInvalidRequest, "null", "3", "Invalid Request: jsonrpc: id 30e-1 is not an integer (ids are strings or integers)"},
		{"fraction", `{"jsonrpc":"2.0","id":3.5,"result":{}}`, CodeInvalidRequest, "null", "null", "Invalid Request: jsonrpc: id 3.5 is not a 64-bit integer"},
		{"bad error", `{"jsonrpc":"2.0","id":"s","error":"bad"}`, CodeInvalidRequest, "null", `"s"`, `Invalid Request: "error" must be an object with an integer "code" and a string "message"`},
		{"wrong version", `{"jsonrpc":"1.0","id":4,"result":{}}`, CodeInvalidRequest, "null", "4", `Invalid Request: "jsonrpc" must be "2.0"`},
		{"escaped key", `{"jsonrpc":"2.0","\u0069d":3}`, CodeInvalidRequest, "null", "3", `Invalid Request: a response needs exactly one of "result" and "error"`},
		{"request", `{"jsonrpc":"2.0","id":3,"method":5}`, CodeInvalidRequest, "3", "null", `Invalid Request: "method" must be a non-empty string`},
		{"not UTF-8 in the id", "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}", CodeParseError, "null", "null", "Parse error: the message is not valid UTF-8"},
		{"not UTF-8 in a result", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"t\":\"\xff\"}}", CodeParseError, "null", "3", "Parse error: the message is not valid UTF-8"},
		{"not UTF-8 in a key", "{\"jsonrpc\":\"2.0\",\"id\":3,\"\\u0072esult\":{},\"\xff\":1}", CodeParseError, "null", "3", "Parse error: the message is not valid UTF-8"},
		{"unpaired surrogate id", `{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`, CodeInvalidRequest, "null", "null", "Invalid Request: jsonrpc: string id is not valid Unicode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, derr := Decode([]byte(tc.in))
			require.NotNil(t, derr)
			assert.Equal(t, tc.code, derr.Err.Code)
			assert.Equal(t, tc.message, derr.Err.Message)
			assert.Equal(t, tc.id, derr.ID.String())
			assert.Equal(t, tc.answers, derr.Answers.String())
			id, ok := ResponseTo([]byte(tc.in))
			assert.Equal(t, tc.answers != "null", ok)
			assert.Equal(t, tc.answers, id.String())
		})
	}
	id, ok := ResponseTo([]byte(`{"jsonrpc":"2.0","id":3,"result":{}}`))
	assert.True(t, ok)
	assert.Equal(t, IntID(3), id)
	for _, notResponse := range []string{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","result":{}}`, `{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}`, `[1]`, `{`} {
		_, ok := ResponseTo([]byte(notResponse))
		assert.False(t, ok, notResponse)
	}
}

// NamedID is the one rule of id equality: ids written differently name
// one id; an integer and a string never do.
func TestNamedID(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		id    ID
		exact bool
	}{
		{`1`, IntID(1), true}, {` 1 `, IntID(1), true}, {`1.0`, IntID(1), false}, {`1e0`, IntID(1), false},
		{`-3`, IntID(-3), true}, {`-3.00`, IntID(-3), false}, {`-0.30e1`, IntID(-3), false}, {`0.0`, IntID(0), false},
		{`-0`, IntID(0), true}, {`0e99999999999`, IntID(0), false}, {`25E-1e`, ID{}, false},
		{`9007199254740993.0`, IntID(9007199254740993), false},
		{`9223372036854775807`, IntID(9223372036854775807), true}, {`-9223372036854775808.0`, IntID(-9223372036854775808), false},
		{`"a"`, StringID("a"), true}, {`"\u0061"`, StringID("a"), true}, {`"\ud83d\ude00"`, StringID("😀"), true},
		{`"\\ud800"`, StringID(`\ud800`), true},
	} {
		id, exact, ok := NamedID([]byte(tc.raw))
		if tc.id.IsZero() {
			assert.False(t, ok, tc.raw)
			continue
		}
		require.True(t, ok, tc.raw)
		assert.Equal(t, tc.id, id, tc.raw)
		assert.Equal(t, tc.exact, exact, tc.raw)
	}
	for _, bad := range []string{``, `null`, `{}`, `[1]`, `true`, `nope`, `1.5`, `1e-1`, `9223372036854775808`, `9223372036854775808.0`,
		`1e19`, `1e999999999999`, `1.`, `.5`, `"\udc00"`, `"\ud800x"`, `"\ud800\u0041"`, "\"\xc3\x28\""} {
		_, _, ok := NamedID([]byte(bad))
		assert.False(t, ok, bad)
	}
	one, _, _ := NamedID([]byte(`1`))
	str, _, _ := NamedID([]byte(`"1"`))
	assert.NotEqual(t, one, str, "1 and \"1\" differ")
}

// FuzzNamedIDNumbers holds NamedID's exact reading of numbers to
// math/big's: a number names the integer id of its value when that value
// is an integer within int64, and nothing otherwise.
func FuzzNamedIDNumbers(f *testing.F) {
	for _, n := range []string{"3", "3.0", "-3.50e1", "30e-1", "1e19", "0.0", "-0", "9007199254740993.0", "9223372036854775807", "1e-1", "12.5e1"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if len(n) > 40 || !json.Valid([]byte(n)) {
			return
		}
		raw := n
		if n = strings.Trim(n, " \t\r\n"); n == "" || (n[0] != '-' && (n[0] < '0' || n[0] > '9')) {
			return
		}
		if i := strings.IndexAny(n, "eE"); i >= 0 && len(strings.TrimLeft(n[i+1:], "+-0")) > 4 {
			return // math/big would take long to build 10^huge
		}
		r, ok := new(big.Rat).SetString(n)
		require.True(t, ok, n)
		id, exact, named := NamedID([]byte(raw))
		want := r.IsInt() && r.Num().IsInt64()
		require.Equal(t, want, named, n)
		if want {
			assert.Equal(t, IntID(r.Num().Int64()), id, n)
			assert.Equal(t, !strings.ContainsAny(n, ".eE"), exact, n)
		}
	})
}

func TestEncodeUnattributableErrorHasNullID(t *testing.T) {
	b, err := NewErrorResponse(ID{}, &RPCError{Code: CodeParseError, Message: "Parse error"}).Encode()
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, string(b))
}

func TestIDsKeepTheirType(t *testing.T) {
	var a, b ID
	require.NoError(t, json.Unmarshal([]byte(`7`), &a))
	require.NoError(t, json.Unmarshal([]byte(`"7"`), &b))
	assert.NotEqual(t, a, b)
	assert.Equal(t, IntID(7), a)
	assert.Equal(t, StringID("7"), b)
	out, _ := json.Marshal(b)
	assert.Equal(t, `"7"`, string(out))
}

func TestRPCErrorIsComparesCodes(t *testing.T) {
	err := &Error{Kind: KindRPC, RPC: &RPCError{Code: CodeMethodNotFound, Message: "whatever"}}
	assert.True(t, errors.Is(err, ErrMethodNotFound))
	assert.False(t, errors.Is(err, ErrInvalidParams))
}

func TestContentsKeepsItsShape(t *testing.T) {
	for _, in := range []string{`{"type":"text","text":"a"}`, `[{"type":"text","text":"a"}]`} {
		var c Contents
		require.NoError(t, json.Unmarshal([]byte(in), &c))
		out, err := json.Marshal(c)
		require.NoError(t, err)
		assert.JSONEq(t, in, string(out))
	}
	var c Contents
	assert.Error(t, json.Unmarshal([]byte(`"text"`), &c))
}

func TestContentsPlainText(t *testing.T) {
	c := Contents{Blocks: []ContentBlock{{Type: "text", Text: "a"}, {Type: "image", Data: "x"}, {Type: "text", Text: "b"}}}
	if got := c.PlainText(); got != "a b" {
		t.Errorf("PlainText = %q, want %q", got, "a b")
	}
	if got := (Contents{Blocks: []ContentBlock{{Type: "image"}}}).PlainText(); got != "" {
		t.Errorf("PlainText of no text = %q, want empty", got)
	}
}

// TestEncodeIsMarshal holds the hand-written Encode to what json.Marshal
// makes of a Frame (the encoding it replaced), byte for byte: raw members
// compacted, <, >, & and U+2028/U+2029 escaped inside strings, invalid raw
// JSON refused.
func TestEncodeIsMarshal(t *testing.T) {
	raws := []string{
		`{}`, `[]`, `null`, `{"a":1}`, ` { "a" : [ 1 , 2 ] } `, "{\n\t\"a\": \"b c\"\r\n}",
		`{"t":"<b>&amp;</b>"}`, `{"t":"\u2028\u2029"}`, "{\"t\":\"\u2028 \u2029 \u00e9\"}",
		`{"t":"a\"<\\"}`, `{"t":"\\\\"}`, `{"k\"<":"v"}`, `"str"`, `12.5e3`, `[{"a":{"b":[true,false,null]}}]`,
	}
	methods := []string{"tools/call", "sampling/createMessage", `we"ird<&>`, "é", "tab\there"}
	var frames []*Frame
	for _, r := range raws {
		raw := json.RawMessage(r)
		frames = append(frames,
			&Frame{JSONRPC: Version, ID: IntID(7), Method: "x", Params: raw},
			&Frame{JSONRPC: Version, Method: "notifications/x", Params: raw},
			&Frame{JSONRPC: Version, ID: StringID("a<b"), Result: raw},
			&Frame{JSONRPC: Version, ID: IntID(1), Error: &RPCError{Code: -32000, Message: "m <&>", Data: raw}},
			// Without an id, a response still carries its members.
			&Frame{JSONRPC: Version, Result: raw},
			&Frame{JSONRPC: Version, Error: &RPCError{Code: -32700, Message: "x", Data: raw}},
		)
	}
	for _, m := range methods {
		frames = append(frames, &Frame{JSONRPC: Version, ID: IntID(-3), Method: m})
	}
	frames = append(frames, &Frame{JSONRPC: Version, ID: IntID(2)}, &Frame{JSONRPC: "1.0<", Method: "m"})
	frames = append(frames, &Frame{}, &Frame{JSONRPC: Version, Params: json.RawMessage(`[1]`)})
	every := new(Frame) // every field set: a field added to Frame must be encoded
	testpeer.FillFields(t, every)
	frames = append(frames, every)
	for _, f := range frames {
		want, err := marshalFrame(f)
		require.NoError(t, err)
		got, err := f.Encode()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	for _, bad := range []string{`{`, `{"a":}`, `[1,]`, `nul`, `{"a":1}x`} {
		_, wantErr := json.Marshal(&Frame{JSONRPC: Version, ID: IntID(1), Result: json.RawMessage(bad)})
		require.Error(t, wantErr)
		_, err := (&Frame{JSONRPC: Version, ID: IntID(1), Result: json.RawMessage(bad)}).Encode()
		assert.Error(t, err, "%s", bad)
		_, err = (&Frame{JSONRPC: Version, Result: json.RawMessage(bad)}).Encode()
		assert.Error(t, err, "no id: %s", bad)
		_, err = (&Frame{JSONRPC: Version, ID: IntID(1), Method: "m", Params: json.RawMessage(bad)}).Encode()
		assert.Error(t, err, "%s", bad)
	}
	null, err := NewErrorResponse(ID{}, &RPCError{Code: CodeParseError, Message: "x<"}).Encode()
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x\u003c"}}`, string(null))
}

// marshalFrame is what Encode writes for f: json.Marshal(f), with
// "id": null after "jsonrpc" when f is a response without an id (JSON-RPC
// requires the member; json.Marshal leaves the zero ID out).
func marshalFrame(f *Frame) ([]byte, error) {
	b, err := json.Marshal(f)
	if err != nil || !f.ID.IsZero() || f.Method != "" {
		return b, err
	}
	head := len(`{"jsonrpc":`) + len(jsonscan.AppendString(nil, f.JSONRPC))
	return append(append(b[:head:head], `,"id":null`...), b[head:]...), nil
}

// FuzzEncodeIsMarshal is TestEncodeIsMarshal on arbitrary frames: Encode
// writes marshalFrame's bytes, and fails where json.Marshal fails.
func FuzzEncodeIsMarshal(f *testing.F) {
	f.Add("2.0", uint8(1), int64(7), "", "tools/call", `{"a":[1, 2]}`, ``, false, "", ``)
	f.Add("2.0", uint8(2), int64(0), "a<b", "", ``, ` { "t" : "\u2028" } `, false, "", ``)
	f.Add("2.0", uint8(0), int64(0), "", "", ``, ``, true, "Parse error <&>", `{"x": 1}`)
	f.Add("2.0", uint8(0), int64(0), "", "", ``, `{}`, false, "", ``)
	f.Fuzz(func(t *testing.T, version string, idKind uint8, n int64, s, method, params, result string, hasErr bool, msg, data string) {
		fr := &Frame{JSONRPC: version, Method: method}
		switch idKind % 3 {
		case 1:
			fr.ID = IntID(n)
		case 2:
			fr.ID = StringID(s)
		}
		if params != "" {
			fr.Params = json.RawMessage(params)
		}
		if result != "" {
			fr.Result = json.RawMessage(result)
		}
		if hasErr {
			fr.Error = &RPCError{Code: int(n), Message: msg, Data: json.RawMessage(data)}
		}
		want, wantErr := marshalFrame(fr)
		got, err := fr.Encode()
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%+v: Encode error %v, json.Marshal error %v", fr, err, wantErr)
		}
		if err == nil && string(got) != string(want) {
			t.Fatalf("%+v:\n got %s\nwant %s", fr, got, want)
		}
	})
}

// TestDecodeSplitsAsTheMapDoes holds Decode's one-pass split (Members) to
// the decoding through a map of members it stands in for: the same frame or
// the same error, for every message.
func TestDecodeSplitsAsTheMapDoes(t *testing.T) {
	ins := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		` { "jsonrpc" : "2.0" , "id" : "a b" , "method" : "x" , "params" : { "s" : "}]\"{[" , "n" : [ 1 , { } ] } } `,
		"{\n\t\"jsonrpc\":\"2.0\",\r\n\"method\":\"notifications/x\",\"params\":[]}",
		`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"a\\\"b"}]}}`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no","data":{"x":[null,true,false,-1.5e3]}}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"jsonrpc":"2\u002e0","id":1,"method":"p\u0069ng"}`,
		`{"jsonrpc":"2.0","id":1,"method":"é"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}",
		`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
		`{"jsonrpc":"2.0","id":1,"i\u0064":2,"method":"m"}`,
		`{"jsonrpc":"2.0","ID":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}`,
		`{"jsonrpc":"2.0","id":1,"method":"","params":{}}`,
		`{"jsonrpc":2,"id":1,"method":"m"}`,
		`{"jsonrpc":"2.0","id":-0,"result":{}}`,
		`{"jsonrpc":"2.0","id":1e3,"result":{}}`,
		`{"jsonrpc":"2.0","id":{},"result":{}}`,
		`{"jsonrpc":"2.0","id":"\u00e9","result":{}}`,
		`{}`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"m"}}`,
		`{"jsonrpc":`, ``, `[]`, `42`, `null`, `{"a":1}x`, `{"a" 1}`,
		`{"jsonrpc":"2.0","id":99999999999999999999,"result":{}}`, `{"jsonrpc":"2.0","id":1,"id":"a","result":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"result":null}`, `{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	}
	for _, in := range ins {
		checkDecode(t, in)
	}
}

// checkDecode holds Decode to decodeViaMap on in, and DecodeInto a Frame
// that held another message to Decode.
func checkDecode(t *testing.T, in string) {
	gotF, gotE := Decode([]byte(in))
	wantF, wantE := decodeViaMap([]byte(in))
	assert.Equal(t, wantF, gotF, "%q", in)
	assert.Equal(t, wantE, gotE, "%q", in)
	reused := Frame{JSONRPC: "1.0", ID: IntID(9), Method: "old", Params: json.RawMessage(`[9]`),
		Result: json.RawMessage(`9`), Error: &RPCError{Code: 9, Message: "old"}}
	if err := DecodeInto([]byte(in), &reused); err == nil {
		assert.Equal(t, gotF, &reused, "DecodeInto a used Frame: %q", in)
	} else {
		assert.Equal(t, gotE, err, "%q", in)
	}
}

// decodeViaMap is Decode taking decodeMap's way always.
func decodeViaMap(data []byte) (*Frame, *DecodeError) {
	f := new(Frame)
	if err := decodeMap(data, f); err != nil {
		return nil, err
	}
	return f, nil
}

// FuzzDecodeSplitsAsTheMapDoes is TestDecodeSplitsAsTheMapDoes over
// arbitrary input.
func FuzzDecodeSplitsAsTheMapDoes(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":["}"]}}`)
	f.Add(`{"jsonrpc":"2.0","id":"x","result":{}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		checkDecode(t, in)
		if got, ok := Members([]byte(in)); ok {
			var want map[string]json.RawMessage
			require.NoError(t, json.Unmarshal([]byte(in), &want), "%q", in)
			assert.Equal(t, len(want), len(got), "%q", in)
			for k, v := range want {
				assert.Equal(t, string(v), string(got[k]), "%q: member %q", in, k)
			}
		}
	})
}

// TestEncodeObjectIsMarshal holds EncodeObject to json.Marshal of the same
// map, byte for byte.
func TestEncodeObjectIsMarshal(t *testing.T) {
	for _, m := range []map[string]json.RawMessage{
		{},
		{"b": json.RawMessage(`1`), "a": json.RawMessage(` { "x" : "<&>" } `), "_meta": json.RawMessage(`{"k":[1,2]}`)},
		{"k<&>\"é\u2028": json.RawMessage(`"v"`), "n": nil, "z": json.RawMessage("\"\u2029\"")},
	} {
		want, err := json.Marshal(m)
		require.NoError(t, err)
		got, err := EncodeObject(m)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	_, err := EncodeObject(map[string]json.RawMessage{"a": json.RawMessage(`{`)})
	assert.Error(t, err)
}

// FuzzEncodeObjectIsMarshal is TestEncodeObjectIsMarshal on arbitrary keys
// and values (an empty value standing for nil): the same bytes, and an
// error where json.Marshal fails.
func FuzzEncodeObjectIsMarshal(f *testing.F) {
	f.Add("b", `1`, "a", ` { "x" : "<&>" } `)
	f.Add("k<&>\"é\u2028", `"v"`, "n", ``)
	f.Add("a", `{`, "\xff", "\"\u2029\"")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		m := map[string]json.RawMessage{}
		for _, kv := range [][2]string{{k1, v1}, {k2, v2}} {
			m[kv[0]] = nil
			if kv[1] != "" {
				m[kv[0]] = json.RawMessage(kv[1])
			}
		}
		want, wantErr := json.Marshal(m)
		got, err := EncodeObject(m)
		if (err == nil) != (wantErr == nil) || err == nil && string(got) != string(want) {
			t.Fatalf("%q:\n got %s, %v\nwant %s, %v", m, got, err, want, wantErr)
		}
	})
}

// An integer id is a number: it compares equal to the same integer decoded
// from the wire, is never the zero ID (0 included), and is made and encoded
// without allocating.
func TestIntIDIsANumber(t *testing.T) {
	var decoded ID
	require.NoError(t, decoded.UnmarshalJSON([]byte("42")))
	assert.Equal(t, IntID(42), decoded)
	assert.NotEqual(t, StringID("42"), decoded)
	assert.False(t, IntID(0).IsZero())
	assert.True(t, ID{}.IsZero())
	assert.Equal(t, "-3", IntID(-3).String())
	b, err := IntID(-3).MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, "-3", string(b))
	var seven, quoted ID
	require.NoError(t, seven.UnmarshalJSON([]byte("7")))
	require.NoError(t, quoted.UnmarshalJSON([]byte(`"7"`)))
	m := map[ID]int{IntID(7): 1, StringID("7"): 2}
	assert.Equal(t, 1, m[seven])
	assert.Equal(t, 2, m[quoted])
	buf, text := make([]byte, 0, 32), []byte("987654321")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		id := IntID(123456789)
		buf = id.appendJSON(buf[:0])
		_ = decoded.UnmarshalJSON(text)
	}))
	for _, bad := range []string{"9223372036854775808", "-9223372036854775809", "1.5", "-", "12a"} {
		assert.EqualError(t, decoded.UnmarshalJSON([]byte(bad)), "jsonrpc: id "+bad+" is not a 64-bit integer")
	}
	// An integer written as a float names that integer, but is no id.
	assert.EqualError(t, decoded.UnmarshalJSON([]byte("1e3")), "jsonrpc: id 1e3 is not an integer (ids are strings or integers)")
	require.NoError(t, decoded.UnmarshalJSON([]byte("-9223372036854775808")))
	assert.Equal(t, IntID(-1<<63), decoded)
	require.NoError(t, decoded.UnmarshalJSON([]byte("9223372036854775807")))
	assert.Equal(t, IntID(1<<63-1), decoded)
}

// ResponseTo finds a response's id in place, as decoding would read it:
// the last of a repeated key, an escaped key; a request, a notification,
// a batch and a cut message name no call.
func TestResponseToReadsAsDecodingDoes(t *testing.T) {
	for _, tc := range []struct {
		msg string
		id  string // "" when it names no call
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"big":"x"}}`, "7"},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}`, `"a"`},
		{`{"jsonrpc":"2.0","id":1,"id":2,"result":{}}`, "2"},
		{`{"jsonrpc":"2.0","\u0069d":3,"r\u0065sult":{}}`, "3"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, ""},
		{`{"jsonrpc":"2.0","method":"notifications/message"}`, ""},
		{`[{"jsonrpc":"2.0","id":1,"result":{}}]`, ""},
		{`{"id":1,"result":`, ""},
	} {
		id, ok := ResponseTo([]byte(tc.msg))
		got := ""
		if ok {
			b, _ := id.MarshalJSON()
			got = string(b)
		}
		if got != tc.id {
			t.Errorf("ResponseTo(%s) = %s; want %s", tc.msg, got, tc.id)
		}
	}
}
