package gateway

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// What a downstream client declared is what a modern upstream sees, in its
// call's _meta: a client with sampling alone gets a round of sampling alone
// (no elicitation asked, none refused), and a client without sampling gets
// the server's own -32021 for a tool that needs it, in both eras
// downstream.
func TestGatewayForwardsDeclaredCapabilities(t *testing.T) {
	url := serveEverything(t, "b", conduit.EraModern)
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var asked atomic.Int64
			c := connect(t, url+"/mcp", era, conduit.Handlers{Sampling: answer("hi", &asked)})
			res, err := c.CallTool(ctx, "b__test_input_required_result_capabilities", nil)
			require.NoError(t, err)
			assert.Equal(t, "Capability-aware input requests fulfilled", text(t, res))
			assert.Equal(t, int64(1), asked.Load(), "one sampling request, and nothing else asked")
			res, err = c.CallTool(ctx, "b__test_missing_capability", nil)
			require.NoError(t, err)
			assert.Equal(t, "Client declared the sampling capability; tool executed.", text(t, res))

			bare := connect(t, url+"/mcp", era, conduit.Handlers{Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				return nil, errors.New("unused")
			}})
			_, err = bare.CallTool(ctx, "b__test_missing_capability", nil)
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce)
			require.NotNil(t, ce.RPC, "%v", err)
			assert.Equal(t, -32021, ce.RPC.Code)
			assert.Equal(t, "sampling capability required but not declared by client", ce.RPC.Message)
			assert.JSONEq(t, `{"requiredCapabilities":{"roots":{},"sampling":{}}}`, string(ce.RPC.Data), "the data as the upstream sent it (the go-sdk writes roots)")
		})
	}
}
