package actors_test

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// frameID reads the id of a frame's text.
func frameID(t *testing.T, raw string) string {
	t.Helper()
	m := regexp.MustCompile(`^\{"jsonrpc":"2\.0","id":(\d+),`).FindStringSubmatch(raw)
	require.NotNil(t, m, raw)
	return m[1]
}

// TestModernMRTRWireBytes pins the bytes of both rounds of a modern call:
// members in key order at every level, the _meta fixed for the session
// with the log level and progress token, strings escaped as json.Marshal
// escapes them, the answer and the request state in the retry.
func TestModernMRTRWireBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "A&a"}}, nil
		}}
		c, srv := connectModernFake(t, conduit.Options{Name: "acme<1>", Version: "9", Handler: h})
		require.NoError(t, c.SetLogLevel(context.Background(), "info"))
		d := make(chan callResult, 1)
		go func() {
			r, err := c.CallTool(context.Background(), "ask", map[string]any{"q": "a & b", "n": 1}, conduit.WithProgressToken(7))
			d <- callResult{r, err}
		}()
		meta := `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{},"sampling":{}},"io.modelcontextprotocol/clientInfo":{"name":"acme\u003c1\u003e","version":"9"},` +
			`"io.modelcontextprotocol/logLevel":"info","io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":7}`
		first := srv.nextRaw()
		id := frameID(t, first)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{`+meta+`,"arguments":{"n":1,"q":"a \u0026 b"},"name":"ask"}}`, first)
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required","inputRequests":{"who":{"method":"elicitation/create",` +
			`"params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"s <1>"}}`)
		retry := srv.nextRaw()
		id = frameID(t, retry)
		assert.Equal(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{`+meta+`,"arguments":{"n":1,"q":"a \u0026 b"},`+
			`"inputResponses":{"who":{"action":"accept","content":{"name":"A\u0026a"}}},"name":"ask","requestState":"s <1>"}}`, retry) // requestState as received
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","content":[{"type":"text","text":"hi Ada"}]}}`)
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "hi Ada", r.res.Content[0].Text)
	})
}

// TestModernCallParamsWithNullMeta: params whose _meta is null take the
// request's _meta (this used to panic: the null decoded to a nil map).
func TestModernCallParamsWithNullMeta(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{})
		d := make(chan error, 1)
		go func() {
			d <- c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"x","_meta":null}`), nil)
		}()
		m := srv.next()
		assert.Equal(t, "2026-07-28", meta(t, m)["io.modelcontextprotocol/protocolVersion"])
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, <-d)
	})
}

// TestModernCallParamsErrors: params that are not an object, or whose
// _meta is not, fail before anything is sent, in json.Unmarshal's words:
// the caller's mistake (KindUsage).
func TestModernCallParamsErrors(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`[1]`, "params must be a JSON object: json: cannot unmarshal array into Go value of type map[string]json.RawMessage"},
		{`{"name":"x","_meta":3}`, "params._meta must be an object: json: cannot unmarshal number into Go value of type map[string]json.RawMessage"},
	} {
		t.Run(tc.params, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, _ := connectModernFake(t, conduit.Options{})
				err := c.Call(context.Background(), "tools/call", json.RawMessage(tc.params), nil)
				var ce *conduit.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, conduit.KindUsage, ce.Kind)
				assert.Equal(t, "conduit: tools/call: usage: "+tc.want, ce.Error())
			})
		})
	}
}

// TestModernRequestStateMustBeAString: a requestState that does not decode
// into a string ends the call; null does (it is sent back as received).
func TestModernRequestStateMustBeAString(t *testing.T) {
	for _, state := range []string{`7`, `true`, `["s"]`, `{"s":1}`} {
		t.Run(state, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv := connectModernFake(t, conduit.Options{})
				d := callAsync(c, "x")
				id := frameID(t, srv.nextRaw())
				srv.sendRaw(`{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required","requestState":` + state + `}}`)
				var ce *conduit.Error
				require.ErrorAs(t, (<-d).err, &ce)
				assert.Equal(t, conduit.KindProtocol, ce.Kind)
				assert.Equal(t, "conduit: tools/call: protocol: requestState must be a string", ce.Error())
			})
		})
	}
	t.Run("null", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, srv := connectModernFake(t, conduit.Options{})
			d := callAsync(c, "x")
			id := frameID(t, srv.nextRaw())
			srv.sendRaw(`{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"input_required","requestState":null}}`)
			retry := srv.nextRaw()
			assert.Contains(t, retry, `,"requestState":null}`)
			srv.sendRaw(`{"jsonrpc":"2.0","id":` + frameID(t, retry) + `,"result":{"content":[]}}`)
			require.NoError(t, (<-d).err)
		})
	})
}
