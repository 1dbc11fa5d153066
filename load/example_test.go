package load_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/load"
)

// A load against the demo server, in process: 2 sessions of 4 callers call
// its summarise tool 40 times, and a scripted model answers each sampling
// request after 10 to 50 ms.
func ExampleRun() {
	srv := demoserver.New()
	defer srv.Close()
	think := load.Uniform(10*time.Millisecond, 50*time.Millisecond)
	rep, err := load.Run(context.Background(), load.Config{
		Transport: srv,
		Options: conduit.Options{Handlers: conduit.Handlers{
			Sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				if err := think.Wait(ctx); err != nil {
					return nil, err
				}
				return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("A summary."), Model: "scripted"}, nil
			},
		}},
		Sessions:       2,
		Concurrency:    4,
		Calls:          40,
		UnlimitedInput: true,
		Mix:            []load.Call{{Tool: "summarise"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rep.Calls, "calls,", rep.OK, "ok; sampling:", rep.Input["sampling/createMessage"])
	fmt.Println("p50 at least 10 ms:", rep.Latency.P50 >= load.Millis(10*time.Millisecond))
	// Output:
	// 40 calls, 40 ok; sampling: map[answered:40]
	// p50 at least 10 ms: true
}
