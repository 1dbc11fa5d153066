package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// Completions, resource templates, subscriptions and logging are relayed
// to the upstream that owns them, a legacy and a modern upstream behind
// one gateway, for a legacy and a modern downstream client.
func TestGatewayRelaysCompletionTemplatesSubscriptionsLogging(t *testing.T) {
	url := serveEverything(t, "a", conduit.EraLegacy)
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			updated := make(chan string, 16)
			logs := make(chan *conduit.LoggingMessage, 16)
			c := connect(t, url+"/mcp", era, conduit.Handlers{
				ResourceUpdated: func(_ context.Context, _ conduit.NotificationContext, u *conduit.ResourceUpdate) {
					select {
					case updated <- u.URI:
					default:
					}
				},
				Log: func(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
					select {
					case logs <- e:
					default:
					}
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			// Completion of a prompt, by its catalog name.
			res, err := c.Complete(ctx, conduit.CompleteParams{Ref: conduit.PromptRef("a__test_prompt_with_arguments"), Argument: conduit.CompleteArgument{Name: "arg1", Value: "test"}})
			require.NoError(t, err)
			assert.Equal(t, []string{}, res.Completion.Values)
			// Of a resource template, by its URI template.
			_, err = c.Complete(ctx, conduit.CompleteParams{Ref: conduit.ResourceRef("test://template/{id}/data"), Argument: conduit.CompleteArgument{Name: "id", Value: "1"}})
			require.NoError(t, err)
			// Of a prompt no server has: refused by the gateway.
			_, err = c.Complete(ctx, conduit.CompleteParams{Ref: conduit.PromptRef("nope"), Argument: conduit.CompleteArgument{Name: "x"}})
			var ce *conduit.Error
			require.ErrorAs(t, err, &ce)
			require.NotNil(t, ce.RPC)
			assert.Equal(t, -32602, ce.RPC.Code)
			assert.Equal(t, `no prompt "nope"`, ce.RPC.Message)

			// Templates listed, and a templated URI read from its server.
			tmpls, err := c.ListResourceTemplates(ctx)
			require.NoError(t, err)
			var uris []string
			for _, tm := range tmpls {
				uris = append(uris, tm.URITemplate)
			}
			assert.Contains(t, uris, "test://template/{id}/data")
			rr, err := c.ReadResource(ctx, "test://template/123/data")
			require.NoError(t, err)
			require.Len(t, rr.Contents, 1)
			assert.Contains(t, rr.Contents[0].Text, "123")

			// Subscription: the upstream's update (every 3 s) reaches the
			// subscriber, on its session or its listen stream.
			require.NoError(t, c.Subscribe(ctx, "test://watched-resource"))
			select {
			case uri := <-updated:
				assert.Equal(t, "test://watched-resource", uri)
			case <-ctx.Done():
				t.Fatal("no notifications/resources/updated relayed")
			}
			require.NoError(t, c.Unsubscribe(ctx, "test://watched-resource"))
			_, err = c.ReadResource(ctx, "test://nope")
			require.Error(t, err)
			err = c.Subscribe(ctx, "test://nope")
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, `no resource "test://nope"`, ce.RPC.Message)

			if era == conduit.EraModern {
				return // logs: legacy sessions only (docs/gateway.md)
			}

			// Logging: the level set downstream reaches the upstream, whose
			// entries come down naming the server.
			require.NoError(t, c.SetLogLevel(ctx, "info"))
			_, err = c.CallTool(ctx, "a__test_tool_with_logging", nil)
			require.NoError(t, err)
			select {
			case e := <-logs:
				assert.Equal(t, "info", e.Level)
				assert.Equal(t, "a", e.Logger)
				assert.Equal(t, "Tool execution started", e.Data)
			case <-ctx.Done():
				t.Fatal("no log entry relayed")
			}
		})
	}
}
