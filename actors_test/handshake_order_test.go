package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// Before the handshake ends a server may send ping and logging, nothing
// else: sampling, elicitation and roots requests are refused -32600 before
// any guard or callback, audited as refused and tied to no call (not to
// initialize, the one call in flight).

const preHandshake = "Invalid Request: %s sent before the handshake ended (until then a server may send only ping and logging)"

// requireRefusedBeforeHandshake checks the audit records of the requests
// ids (roots/list, sampling/createMessage, elicitation/create, in order).
func requireRefusedBeforeHandshake(t *testing.T, audits []conduit.AuditRecord, ids ...messages.ID) {
	t.Helper()
	methods := []string{"roots/list", "sampling/createMessage", "elicitation/create"}
	require.Len(t, audits, len(ids))
	for i, rec := range audits {
		assert.Equal(t, methods[i], rec.Method)
		assert.Equal(t, ids[i], rec.RequestID)
		assert.Equal(t, conduit.OutcomeRefused, rec.Outcome)
		assert.True(t, rec.RelatedRequestID.IsZero(), "tied to no call: %v", rec.RelatedRequestID)
		require.NotNil(t, rec.Code)
		assert.Equal(t, messages.CodeInvalidRequest, *rec.Code)
		assert.Equal(t, fmt.Sprintf(preHandshake, methods[i]), rec.Message)
	}
}

// inputRequests sends the three kinds of input request, with ids from
// first on.
func inputRequests(srv *fakeServer, first int) {
	srv.request(first, "roots/list", nil)
	srv.request(first+1, "sampling/createMessage", map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hi"}}}, "maxTokens": 10})
	srv.request(first+2, "elicitation/create", map[string]any{"message": "Name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
}

func TestServerRequestsBeforeTheHandshakeEndsAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{}}, nil
		}}
		var mu sync.Mutex
		var audits []conduit.AuditRecord
		opts := conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { mu.Lock(); audits = append(audits, r); mu.Unlock() }}
		ch, ec, srv, serverSide := startClient(t, opts)
		// While the era probe is in flight.
		probe := srv.next()
		require.Equal(t, "server/discover", probe["method"])
		inputRequests(srv, 1)
		for id := 1; id <= 3; id++ {
			e := srv.expectError(id, messages.CodeInvalidRequest)
			assert.Contains(t, e["message"], "sent before the handshake ended")
		}
		srv.send(map[string]any{"jsonrpc": "2.0", "id": probe["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
		// While initialize is in flight: the one call, which they must
		// not be tied to. Ping is answered.
		init := srv.next()
		require.Equal(t, "initialize", init["method"])
		inputRequests(srv, 11)
		srv.request(14, "ping", nil)
		for id := 11; id <= 13; id++ {
			srv.expectError(id, messages.CodeInvalidRequest)
		}
		srv.expectResponse(14)
		// Right after the result: the handshake has ended, the request is
		// answered (the client's initialized may come first or second).
		srv.reply(init["id"], map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "fake", "version": "1"}})
		srv.request(21, "roots/list", nil)
		got := map[any]map[string]any{}
		for range 2 {
			m := srv.next()
			got[m["method"]] = m
		}
		require.Contains(t, got, "notifications/initialized")
		require.Contains(t, got, nil)
		assert.EqualValues(t, 21, got[nil]["id"])
		assert.Equal(t, map[string]any{"roots": []any{}}, got[nil]["result"])
		c := <-ch
		require.NoError(t, <-ec)
		t.Cleanup(func() { finish(t, c, srv, serverSide) })
		assert.Equal(t, 1, h.count(), "no callback ran before the handshake ended")
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, audits, 7)
		requireRefusedBeforeHandshake(t, audits[0:3], messages.IntID(1), messages.IntID(2), messages.IntID(3))
		requireRefusedBeforeHandshake(t, audits[3:6], messages.IntID(11), messages.IntID(12), messages.IntID(13))
		assert.Equal(t, conduit.OutcomeAnswered, audits[6].Outcome)
		assert.EqualValues(t, 6, c.Stats().Refused)
		assert.EqualValues(t, 7, c.Stats().ServerRequests)
	})
}

// Over Streamable HTTP the requests come on the initialize response's
// stream, which relates them to initialize: refused all the same.
func TestHTTPServerRequestsOnTheInitializeStreamAreRefused(t *testing.T) {
	h := &handler{}
	var mu sync.Mutex
	var audits []conduit.AuditRecord
	answers := make(chan map[string]any, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		switch m["method"] {
		case "server/discover":
			w.WriteHeader(http.StatusNotFound)
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			w.Header().Set("Content-Type", "text/event-stream")
			for i, method := range []string{"roots/list", "sampling/createMessage", "elicitation/create"} {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":%q,\"params\":{}}\n\n", i+1, method)
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"serverInfo\":{\"name\":\"early\",\"version\":\"1\"}}}\n\n", mustJSON(t, m["id"]))
		case nil:
			if _, ok := m["id"]; ok {
				answers <- m
			}
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL + "/mcp"},
		conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { mu.Lock(); audits = append(audits, r); mu.Unlock() }})
	require.NoError(t, err)
	defer c.Close()
	got := map[float64]map[string]any{}
	for range 3 {
		a := <-answers
		got[a["id"].(float64)] = a
	}
	for id := 1; id <= 3; id++ {
		e, ok := got[float64(id)]["error"].(map[string]any)
		require.True(t, ok, "answer %d: %v", id, got[float64(id)])
		assert.EqualValues(t, messages.CodeInvalidRequest, e["code"])
	}
	assert.Zero(t, h.count())
	mu.Lock()
	defer mu.Unlock()
	byID := map[string]conduit.AuditRecord{}
	for _, r := range audits {
		byID[r.RequestID.String()] = r
	}
	requireRefusedBeforeHandshake(t, []conduit.AuditRecord{byID["1"], byID["2"], byID["3"]}, messages.IntID(1), messages.IntID(2), messages.IntID(3))
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
