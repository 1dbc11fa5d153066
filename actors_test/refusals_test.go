package actors_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
)

// Every refusal of an input request is counted in Stats, in either era:
// over the budget in RateLimited (the audit's rate_limited), by another
// guard rule in Refused (the audit's refused), before the handler (invalid
// params) and after it (an answer that does not fit its form). An answered
// request counts in neither.
func TestRefusalsAreCountedInStats(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": 5}}, nil
		}}
		var outcomes []string
		c, srv := e.connect(t, conduit.Options{Handler: h, InputRateLimit: rate.Limit(0.001), InputBurst: 3,
			Audit: func(r conduit.AuditRecord) { outcomes = append(outcomes, r.Outcome) }})
		e.ask(t, c, srv, "roots/list", nil)()
		e.ask(t, c, srv, "sampling/createMessage", map[string]any{"messages": []any{}})() // no maxTokens
		e.ask(t, c, srv, "elicitation/create", formParams)()                              // an answer that breaks the form
		e.ask(t, c, srv, "sampling/createMessage", samplingParams)()                      // over the budget
		e.ask(t, c, srv, "roots/list", nil)()                                             // over the budget
		st := c.Stats()
		assert.EqualValues(t, 2, st.RateLimited)
		assert.EqualValues(t, 2, st.Refused)
		assert.Equal(t, []string{"answered", "refused", "refused", "rate_limited", "rate_limited"}, outcomes)
		assert.Equal(t, 2, h.count())
	})
}

// A modern call whose input request a guard of the client refuses fails
// with KindRefused, the guard's code in RPC: the server broke no protocol.
func TestGuardRefusalIsKindRefused(t *testing.T) {
	cases := []struct {
		name    string
		params  map[string]any
		code    int
		message string
	}{
		{"over the budget", samplingParams, -1, `conduit: tools/call: refused: input request "k" refused: jsonrpc error -1: Sampling rejected: rate limited`},
		{"invalid params", map[string]any{"messages": []any{}}, -32602, `conduit: tools/call: refused: input request "k" refused: jsonrpc error -32602: Invalid params: maxTokens is required`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}, InputRateLimit: rate.Limit(0.001), InputBurst: 1})
				if tc.code == -1 { // spend the budget
					eras[1].ask(t, c, srv, "sampling/createMessage", samplingParams)()
				}
				d := callAsync(c, "x")
				m := srv.next()
				srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
					"k": map[string]any{"method": "sampling/createMessage", "params": tc.params}}})
				r := <-d
				var ce *conduit.Error
				require.ErrorAs(t, r.err, &ce)
				assert.Equal(t, conduit.KindRefused, ce.Kind)
				require.NotNil(t, ce.RPC)
				assert.Equal(t, tc.code, ce.RPC.Code)
				assert.Equal(t, tc.message, r.err.Error())
			})
		})
	}
}

// A call abandoned because the caller's context deadline passed is
// KindTimeout and still matches context.DeadlineExceeded; a cancelled
// context stays KindCancelled and matches context.Canceled. Both eras,
// while the call waits for its answer and while its input is gathered.
func TestContextEndKinds(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		for _, waiting := range []string{"answer", "input"} {
			h := &handler{sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				return nil, block(ctx)
			}}
			c, srv := e.connect(t, conduit.Options{Handler: h})
			run := func(ctx context.Context) error {
				errc := make(chan error, 1)
				go func() {
					_, err := c.CallTool(ctx, "x", map[string]any{})
					errc <- err
				}()
				m := srv.next()
				if waiting == "input" {
					if e.era == conduit.EraModern {
						srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
							"k": map[string]any{"method": "sampling/createMessage", "params": samplingParams}}})
					} else {
						srv.request("in", "sampling/createMessage", samplingParams)
					}
				}
				return <-errc
			}
			dctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			err := run(dctx)
			cancel()
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce, waiting)
			assert.Equal(t, conduit.KindTimeout, ce.Kind, waiting)
			assert.ErrorIs(t, err, context.DeadlineExceeded, waiting)
			assert.Equal(t, "conduit: tools/call: timeout: context deadline exceeded", err.Error(), waiting)

			cctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			err = run(cctx)
			require.ErrorAs(t, err, &ce, waiting)
			assert.Equal(t, conduit.KindCancelled, ce.Kind, waiting)
			assert.ErrorIs(t, err, context.Canceled, waiting)
			require.NoError(t, c.Close())
		}
	})
}
