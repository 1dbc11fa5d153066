package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conduit watch against a go-sdk server whose tools change and whose
// resource is updated, in both eras, over Streamable HTTP: each change is
// printed as it arrives, until interrupted (exit 0).
func TestWatchPrintsChangesInBothEras(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		t.Run(era, func(t *testing.T) {
			subscribed := make(chan struct{}, 4)
			server := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, &mcp.ServerOptions{
				SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
					subscribed <- struct{}{}
					return nil
				},
				UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
			})
			tool := func(name string) {
				mcp.AddTool(server, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{}, nil, nil
				})
			}
			tool("first")
			server.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, nil)
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
				&mcp.StreamableHTTPOptions{Stateless: era == "modern"}))
			defer ts.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, errOut := &lockedBuffer{}, &lockedBuffer{}
			code := make(chan int, 1)
			go func() {
				code <- run(ctx, []string{"watch", "--era", era, "--json", "--tools", "--resource", "test://r", "--url", ts.URL},
					streams{in: bytes.NewReader(nil), out: out, err: errOut})
			}()
			select {
			case <-subscribed:
			case <-ctx.Done():
				t.Fatalf("never subscribed; stderr: %s", errOut.String())
			}
			tool("added") // the tools subscription is in place before the resource's
			want := []string{
				`{"method":"notifications/tools/list_changed","params":{}}`,
				`{"method":"notifications/resources/updated","params":{"uri":"test://r"}}`,
			}
			// The modern acknowledgement follows the subscription: an update
			// sent before it is dropped, so the update is sent until printed.
			require.Eventually(t, func() bool {
				_ = server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r"})
				for _, w := range want {
					if !strings.Contains(out.String(), w) {
						return false
					}
				}
				return true
			}, 10*time.Second, 20*time.Millisecond, "stdout: %s\nstderr: %s", out.String(), errOut.String())
			cancel()
			assert.Equal(t, 0, <-code, errOut.String())
		})
	}
}
