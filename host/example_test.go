package host_test

import (
	"context"
	"fmt"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
)

// A host built from code rather than a configuration file: one server,
// supervised, whose input requests reach the one handler set of
// Options.Client with the server's name as ServerID. Options.Transport
// puts the demo server (in process) where a real host would start
// Command or reach URL.
func ExampleNew() {
	server := demoserver.New()
	defer server.Close()

	cfg := host.Config{Servers: map[string]host.Server{
		"demo": {Command: "demo-server"}, // Options.Transport below decides how it is reached
	}}
	h, err := host.New(cfg, host.Options{
		Client: conduit.Options{
			Name: "my-agent",
			Handlers: conduit.Handlers{
				Sampling: func(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
					return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("asked by " + r.ServerID), Model: "fake-llm"}, nil
				},
			},
		},
		Transport: func(name string, s host.Server) (transport.Transport, error) { return server, nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()

	// Wait until the server is ready: its first event says starting.
	events, cancel := h.Subscribe()
	for ev := range events {
		if ev.State == host.StateReady {
			break
		}
	}
	cancel()

	for _, t := range h.Tools() {
		if t.Server == "demo" && t.ServerTool == "summarise" {
			fmt.Println("catalog name:", t.Name)
		}
	}
	res, err := h.CallTool(context.Background(), "demo", "summarise", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// catalog name: demo__summarise
	// Summary (by fake-llm): asked by demo
}
