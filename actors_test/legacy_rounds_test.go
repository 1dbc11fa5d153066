package actors_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// elicitName is the params of a form elicitation asking for a name.
var elicitName = map[string]any{"mode": "form", "message": "Name?", "requestedSchema": map[string]any{
	"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}}

// A legacy result that asks for input (a go-sdk server's second round for a
// legacy client: inputRequests and requestState, no resultType) is a round:
// its request goes through the handlers with its key, and the call is sent
// again with the answers and the state as received, on the same session;
// a server→client request during the retry belongs to the same call.
func TestLegacyResultAskingForInputIsARound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		d := callAsync(c, "greet", conduit.WithAssigns(map[string]any{"who": "call"}), conduit.WithProgressToken("p1"))
		first := srv.next()
		require.Equal(t, "tools/call", first["method"])
		// Round 1 as a go-sdk server sends it to a legacy client.
		srv.request(100, "elicitation/create", elicitName)
		srv.expectResponse(100)
		// Round 2: the reinvoked handler asked again.
		srv.reply(first["id"], map[string]any{"content": []any{}, "requestState": "round=2;name=Ada",
			"inputRequests": map[string]any{"step2": map[string]any{"method": "elicitation/create", "params": elicitName}}})
		retry := srv.next()
		assert.NotEqual(t, first["id"], retry["id"])
		assert.Equal(t, "tools/call", retry["method"])
		p := retry["params"].(map[string]any)
		assert.Equal(t, "greet", p["name"])
		assert.Equal(t, "round=2;name=Ada", p["requestState"])
		assert.Equal(t, map[string]any{"step2": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, p["inputResponses"])
		assert.Equal(t, map[string]any{"progressToken": "p1"}, p["_meta"], "the legacy _meta, no modern members")
		// During the retry the server asks on its own again (round 3).
		srv.request(101, "roots/list", nil)
		srv.expectResponse(101)
		srv.reply(retry["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "hello Ada"}}})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "hello Ada", r.res.Content[0].Text)
		require.Equal(t, 3, h.count())
		for i, rc := range h.seen {
			assert.Equal(t, conduit.EraLegacy, rc.Era, "input %d", i)
			assert.Equal(t, map[string]any{"who": "call"}, rc.Assigns, "input %d belongs to the call", i)
		}
		assert.Equal(t, "step2", h.seen[1].InputKey)
		assert.Empty(t, h.seen[0].InputKey)
	})
}

// A legacy result whose inputRequests cannot be read fails the call as a
// protocol error; no handler runs, nothing is sent again.
func TestLegacyMalformedInputRequests(t *testing.T) {
	for _, tc := range []struct {
		name, result, want string
	}{
		{"entry not a request", `{"content":[],"inputRequests":{"k":5}}`, `input request "k" is malformed`},
		{"entry without method", `{"content":[],"inputRequests":{"k":{"params":{}}}}`, `input request "k" is malformed`},
		{"not an object", `{"content":[],"inputRequests":"all"}`, `malformed input_required result`},
		{"state not a string", `{"content":[],"inputRequests":{"r":{"method":"roots/list"}},"requestState":7}`, `requestState must be a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &handler{}
				c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
				d := callAsync(c, "x")
				first := srv.next()
				srv.sendRaw(`{"jsonrpc":"2.0","id":` + jsonOf(first["id"]) + `,"result":` + tc.result + `}`)
				r := <-d
				var ce *conduit.Error
				require.ErrorAs(t, r.err, &ce)
				assert.Equal(t, conduit.KindProtocol, ce.Kind)
				assert.Contains(t, ce.Error(), tc.want)
				assert.Equal(t, 0, h.count())
				synctest.Wait()
				select {
				case f := <-srv.in:
					t.Errorf("sent after a malformed result: %s", f.raw)
				default:
				}
			})
		})
	}
}

// A legacy server that asks for input in every result is cut off at
// MaxRounds, as a modern one is, and the cap is counted.
func TestLegacyEndlessRoundsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connect(t, conduit.Options{Handler: h, MaxRounds: 3}, "2025-11-25")
		d := callAsync(c, "x")
		for i := range 3 {
			m := srv.next()
			require.Equal(t, "tools/call", m["method"])
			srv.reply(m["id"], map[string]any{"content": []any{}, "requestState": fmt.Sprint("s", i),
				"inputRequests": map[string]any{fmt.Sprint("r", i): map[string]any{"method": "roots/list"}}})
		}
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, ce.Error(), "still input_required after 3 rounds")
		assert.JSONEq(t, `{"r2":{"method":"roots/list"}}`, string(ce.InputRequests))
		assert.Equal(t, 2, h.count(), "two rounds answered")
		assert.Equal(t, int64(1), c.Stats().RoundsCapped)
	})
}

// A legacy result with inputRequests null, or of a method that takes no
// rounds, is a result as it came.
func TestLegacyResultWithoutInputIsTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		d := callAsync(c, "x")
		first := srv.next()
		srv.reply(first["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}, "inputRequests": nil, "requestState": "s"})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "ok", r.res.Content[0].Text)
		assert.Equal(t, 0, h.count())
	})
}
