package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// BenchmarkIdleListening is BenchmarkIdleConnections for modern clients:
// without a change hook, and with ToolsChanged (a subscriptions/listen
// stream open and acknowledged, its listener goroutine waiting). Run:
//
//	go test -run '^$' -bench BenchmarkIdleListening -benchtime 1x ./actors_test/
func BenchmarkIdleListening(b *testing.B) {
	hook := conduit.Handlers{ToolsChanged: func(context.Context, conduit.NotificationContext, *conduit.ToolsChange) {}}
	for _, n := range []int{1000} {
		b.Run(fmt.Sprintf("modern/n%d", n), func(b *testing.B) {
			benchIdle(b, n, func(b *testing.B) func() { return modernIdleClient(b, conduit.Options{}) })
		})
		b.Run(fmt.Sprintf("listening/n%d", n), func(b *testing.B) {
			benchIdle(b, n, func(b *testing.B) func() { return modernIdleClient(b, conduit.Options{Handlers: hook}) })
		})
	}
}

// modernIdleClient connects a client to a modern server over an in-memory
// pair that answers server/discover (tools.listChanged) and acknowledges
// a subscriptions/listen, then only reads.
func modernIdleClient(b *testing.B, opts conduit.Options) func() {
	clientSide, serverSide := transport.NewMemoryPair()
	go func() {
		ctx := context.Background()
		for {
			msg, err := serverSide.Read(ctx)
			if err != nil {
				return
			}
			var f struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(msg.Data, &f) != nil {
				return
			}
			var reply string
			switch f.Method {
			case "server/discover":
				reply = `{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"ttlMs":0,"cacheScope":"private"}}`
			case "subscriptions/listen":
				reply = `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":` + string(f.ID) + `}}}`
			default:
				continue
			}
			if serverSide.Write(ctx, []byte(reply)) != nil {
				return
			}
		}
	}()
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
	require.NoError(b, err)
	return func() {
		_ = c.Close()
		_ = serverSide.Close()
	}
}
