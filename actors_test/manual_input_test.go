package actors_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// manualRound expects err to be a call stopped at input_required
// (WithManualInput) and returns what the server asked.
func manualRound(t *testing.T, err error) *conduit.InputRequiredError {
	t.Helper()
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, conduit.KindInputRequired, ce.Kind, "error: %v", err)
	var ir *conduit.InputRequiredError
	require.ErrorAs(t, err, &ir)
	return ir
}

// With WithManualInput a modern input_required result comes back to the
// caller, typed, and no handler runs; the caller answers with
// WithInputResponses, which sends its answers and the requestState byte
// for byte.
func TestManualInputModern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{modes: []string{"form"}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		call := callAsync(c, "x", conduit.WithManualInput())
		m := srv.next()
		assert.NotContains(t, m["params"], "inputResponses")
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + jsonID(m["id"]) + `,"result":{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}},"requestState":"s\u00e91"}}`)
		ir := manualRound(t, (<-call).err)
		assert.Equal(t, "tools/call", ir.Method)
		require.Len(t, ir.InputRequests, 1)
		assert.Equal(t, "elicitation/create", ir.InputRequests["user_name"].Method)
		assert.JSONEq(t, `{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`, string(ir.InputRequests["user_name"].Params))
		assert.Equal(t, `"s\u00e91"`, string(ir.RequestState))
		assert.Equal(t, 0, h.count(), "no handler ran")
		synctest.Wait()
		assert.Empty(t, srv.in, "no retry was sent")

		call = callAsync(c, "x", conduit.WithInputResponses(ir.RequestState, map[string]any{
			"user_name": &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"name": "Ada"}},
		}))
		raw := srv.nextRaw()
		assert.Contains(t, raw, `"requestState":"s\u00e91"`, "the state byte for byte")
		var f map[string]any
		require.NoError(t, json.Unmarshal([]byte(raw), &f))
		p := f["params"].(map[string]any)
		assert.Equal(t, "x", p["name"])
		assert.Equal(t, map[string]any{"user_name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}, p["inputResponses"])
		srv.reply(f["id"], map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "Hello, Ada!"}}})
		r := <-call
		require.NoError(t, r.err)
		assert.Equal(t, "Hello, Ada!", r.res.Content[0].Text)
		assert.Equal(t, 0, h.count())
	})
}

// A follow-up without WithManualInput lets the handlers answer a further
// round; a state-only input_required is retried even with WithManualInput.
func TestManualInputFollowUpAndStateOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{modes: []string{"form"}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		call := callAsync(c, "x", conduit.WithManualInput())
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "requestState": "wait"})
		m = srv.next() // retried by itself
		assert.Equal(t, "wait", m["params"].(map[string]any)["requestState"])
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"k": map[string]any{"method": "roots/list"}}})
		ir := manualRound(t, (<-call).err)
		assert.Nil(t, ir.RequestState)
		assert.Equal(t, conduit.InputRequest{Method: "roots/list"}, ir.InputRequests["k"])

		call = callAsync(c, "x", conduit.WithInputResponses(nil, map[string]any{"k": &conduit.ListRootsResult{Roots: []conduit.Root{}}}))
		m = srv.next()
		assert.NotContains(t, m["params"], "requestState")
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"k2": map[string]any{"method": "elicitation/create", "params": formParams}}})
		m = srv.next() // the handler answered this round
		assert.Contains(t, m["params"].(map[string]any)["inputResponses"], "k2")
		srv.reply(m["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-call).err)
		assert.Equal(t, 1, h.count())
	})
}

// In the legacy era WithManualInput changes nothing (the server's requests
// are answered by the handlers while the call runs), WithInputResponses is
// the caller's mistake, and a requestState that is not a JSON string too.
func TestManualInputLegacyAndUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{modes: []string{"form"}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		call := callAsync(c, "x", conduit.WithManualInput())
		m := srv.next()
		srv.request("in", "elicitation/create", formParams)
		srv.expectResponse("in")
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-call).err)
		assert.Equal(t, 1, h.count())

		_, err := c.CallTool(t.Context(), "x", nil, conduit.WithInputResponses(json.RawMessage(`"s"`), nil))
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindUsage, ce.Kind)
		assert.EqualError(t, err, "conduit: tools/call: usage: WithInputResponses in the legacy era: there is no input_required to answer")
	})
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectModernFake(t, conduit.Options{})
		_, err := c.CallTool(t.Context(), "x", nil, conduit.WithInputResponses(json.RawMessage(`{"a":1}`), nil))
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindUsage, ce.Kind)
	})
}

// Against the everything-server (modern): two rounds answered by hand.
func TestModernEverythingServerManualInput(t *testing.T) {
	c := connectModern(t, conduit.Options{Handler: answering()})
	opts := []conduit.CallOption{conduit.WithManualInput()}
	for round := 1; ; round++ {
		require.Less(t, round, 5)
		r, err := c.CallTool(callCtx(t), "test_input_required_result_multi_round", nil, opts...)
		if err == nil {
			assert.Equal(t, "Multi-round complete: Ada likes blue", textOf(t, r))
			assert.Equal(t, 3, round)
			return
		}
		ir := manualRound(t, err)
		answers := map[string]any{}
		for k, req := range ir.InputRequests {
			require.Equal(t, "elicitation/create", req.Method)
			var p struct {
				RequestedSchema struct {
					Properties map[string]any `json:"properties"`
				} `json:"requestedSchema"`
			}
			require.NoError(t, json.Unmarshal(req.Params, &p))
			content := map[string]any{}
			for name := range p.RequestedSchema.Properties {
				content[name] = map[string]any{"name": "Ada", "color": "blue"}[name]
			}
			answers[k] = &conduit.ElicitResult{Action: conduit.ActionAccept, Content: content}
		}
		opts = []conduit.CallOption{conduit.WithManualInput(), conduit.WithInputResponses(ir.RequestState, answers)}
	}
}

// jsonID writes a decoded JSON-RPC id back as JSON.
func jsonID(id any) string {
	b, _ := json.Marshal(id)
	return string(b)
}
