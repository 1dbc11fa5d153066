package conduit_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
)

// Connect a client to a server and call a tool that asks the client's
// model for a completion (sampling) while the call is open. The server is
// the demo server, in process, on an in-memory connection: any
// transport.Transport does (transport.Command for a stdio server,
// transport.HTTP for a remote one).
func ExampleConnect() {
	server := demoserver.New() // a transport.Transport: each Connect is a new in-memory connection
	defer server.Close()

	ctx := context.Background()
	c, err := conduit.Connect(ctx, server, conduit.Options{
		Name: "my-agent", ServerID: "demo",
		Handlers: conduit.Handlers{
			Sampling: func(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				// Ask your LLM here. r.Params went through the guards
				// (maxTokens clamped, includeContext coerced).
				return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("Conduit answers servers."), Model: "fake-llm"}, nil
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// WithTimeout pauses while input (here the sampling) is gathered;
	// WithMaxTotalTimeout bounds the whole call.
	res, err := c.CallTool(ctx, "summarise", nil, conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(time.Minute))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output: Summary (by fake-llm): Conduit answers servers.
}

// A handler set: one typed function per kind of input a server may ask
// for. A nil function is a kind the client does not implement: it is not
// advertised, and a server's request for it is refused before any callback
// runs. Every callback gets the server's name (ServerID) to route it.
func ExampleHandlers() {
	server := demoserver.New()
	defer server.Close()

	handlers := conduit.Handlers{
		Roots: func(ctx context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///srv/repo", Name: "repo"}}}, nil
		},
		Elicitation: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			// r.Form is the requested form, checked and typed; a UI shows it.
			return &conduit.ElicitResult{Action: conduit.ActionDecline}, nil
		},
		ElicitationModes: []string{conduit.ModeForm},
	}

	ctx := context.Background()
	c, err := conduit.Connect(ctx, server, conduit.Options{Name: "my-agent", ServerID: "demo", Handlers: handlers})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "workspace", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// The client shares 1 root(s):
	//   file:///srv/repo (repo)
}

// A program that already runs protoactor-go puts the client's actors in
// its own actor system (Options.System), beside its own actors: here the
// sampling handler asks the program's "model" actor for the completion.
// Conduit never shuts the system down; once Close returns nothing of the
// client is left in it.
func ExampleOptions_system() {
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler) // the program's own choice
	}))
	model := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if prompt, ok := ctx.Message().(string); ok {
			ctx.Respond(fmt.Sprintf("%d runes read", len([]rune(prompt))))
		}
	}))
	defer system.Root.Stop(model)

	server := demoserver.New()
	defer server.Close()

	ctx := context.Background()
	c, err := conduit.Connect(ctx, server, conduit.Options{
		Name: "my-agent", ServerID: "demo",
		System: system,
		Handlers: conduit.Handlers{
			Sampling: func(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				reply, err := system.Root.RequestFuture(model, r.Params.Messages[0].Content.PlainText(), 5*time.Second).Result()
				if err != nil {
					return nil, err
				}
				return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text(reply.(string)), Model: "model-actor"}, nil
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	res, err := c.CallTool(ctx, "summarise", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output: Summary (by model-actor): 376 runes read
}
