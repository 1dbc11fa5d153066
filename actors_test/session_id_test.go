package actors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// A legacy HTTP server that gives a 1 MiB Mcp-Session-Id is refused: Connect
// fails with KindTransport carrying *transport.SessionIDError, and no
// request ever carries the id back.
func TestConnectRefusesAHugeSessionID(t *testing.T) {
	sid := strings.Repeat("s", 1<<20)
	var echoed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			echoed.Add(1)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Mcp-Session-Id", sid)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`))
	}))
	defer srv.Close()

	c, err := conduit.Connect(context.Background(), &transport.HTTP{URL: srv.URL}, conduit.Options{Era: conduit.EraLegacy})
	if c != nil {
		c.Close()
	}
	require.Error(t, err)
	var e *conduit.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, conduit.KindTransport, e.Kind)
	var sidErr *transport.SessionIDError
	require.ErrorAs(t, err, &sidErr)
	assert.Equal(t, transport.SessionIDError{Length: 1 << 20, Limit: 4 << 10}, *sidErr)
	assert.Equal(t, "conduit: initialize: transport: the request failed: transport: the server's Mcp-Session-Id is 1 MiB, over the limit of 4 KiB; raise transport.HTTP.MaxSessionIDBytes", err.Error())
	assert.Zero(t, echoed.Load(), "the id was sent back")
}
