package conduit_test

import (
	"context"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/conduitmcp/conduit"
)

// Spans of a client's calls (docs/operations.md, "Traces"): a tools/call
// span in the trace of the caller's own span, its W3C traceparent sent to
// the server in params._meta. A program would export them (an OTLP
// exporter in sdktrace.WithBatcher); here a recorder keeps them.
func ExampleOptions_tracerProvider() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var sent string
	server := examplePeer(func(send func(any), m map[string]any) {
		sent, _ = m["params"].(map[string]any)["_meta"].(map[string]any)["traceparent"].(string)
		send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{"content": []any{}}})
	})
	c, err := conduit.Connect(context.Background(), server, conduit.Options{ServerID: "weather", TracerProvider: tp})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	ctx, turn := tp.Tracer("agent").Start(context.Background(), "agent turn")
	_, err = c.CallTool(ctx, "forecast", map[string]any{"city": "Paris"}, conduit.WithUnvalidatedResult())
	turn.End()
	if err != nil {
		fmt.Println(err)
		return
	}
	call := rec.Ended()[0]
	fmt.Println(call.Name(), call.SpanKind())
	fmt.Println("child of the agent's turn:", call.Parent().SpanID() == turn.SpanContext().SpanID())
	fmt.Println("traceparent names it:", strings.Contains(sent, call.SpanContext().SpanID().String()))
	for _, kv := range call.Attributes() {
		fmt.Println(kv.Key, kv.Value.String())
	}
	// Output:
	// tools/call forecast client
	// child of the agent's turn: true
	// traceparent names it: true
	// mcp.method.name tools/call
	// gen_ai.tool.name forecast
	// conduit.server weather
	// conduit.era legacy
	// mcp.protocol.version 2025-11-25
}
