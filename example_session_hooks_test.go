package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/transport"
)

// examplePeer is a tiny scripted 2025-11-25 server for the examples on an
// in-memory connection: it does the handshake, then hands every other
// message the client sends to serve, with a function to send it frames.
// It ends when the client closes.
func examplePeer(serve func(send func(v any), msg map[string]any)) transport.Transport {
	client, server := transport.NewMemoryPair()
	send := func(v any) {
		b, _ := json.Marshal(v)
		_ = server.Write(context.Background(), b)
	}
	go func() {
		for {
			m, err := server.Read(context.Background())
			if err != nil {
				return
			}
			var f map[string]any
			_ = json.Unmarshal(m.Data, &f)
			switch f["method"] {
			case "server/discover":
				send(map[string]any{"jsonrpc": "2.0", "id": f["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
			case "initialize":
				send(map[string]any{"jsonrpc": "2.0", "id": f["id"], "result": map[string]any{
					"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
					"serverInfo": map[string]any{"name": "example", "version": "1"}}})
			case "notifications/initialized":
			default:
				serve(send, f)
			}
		}
	}()
	return transport.NewMemoryTransport(client)
}

// A client that pings its server every interval and ends itself when the
// server stops answering: here a server that never answers a ping, and
// two failures in a row.
func ExampleOptions_keepAlive() {
	deaf := examplePeer(func(func(any), map[string]any) {}) // answers nothing after the handshake
	c, err := conduit.Connect(context.Background(), deaf, conduit.Options{KeepAlive: 20 * time.Millisecond, KeepAliveFailures: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	<-c.Done()
	var ce *conduit.Error
	var ka *conduit.KeepAliveError
	if errors.As(c.Err(), &ce) && errors.As(c.Err(), &ka) {
		fmt.Println(ce.Kind, ka.Failures, "pings in a row failed")
	}
	// Output: transport 2 pings in a row failed
}

// A URL elicitation (2025-11-25) and its completion: the server asks the
// user to open a page, and says when the flow there is over. The hook gets
// the request it completes.
func ExampleHandlers_elicitationComplete() {
	server := demoserver.New()
	defer server.Close()
	c, err := conduit.Connect(context.Background(), server, conduit.Options{Era: conduit.EraLegacy, Handlers: conduit.Handlers{
		Elicitation: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			// Show r.Host (and warn when r.IDN or r.OriginMismatch), ask for consent, open r.URL.
			return &conduit.ElicitResult{Action: conduit.ActionAccept}, nil
		},
		ElicitationModes: []string{conduit.ModeURL},
		ElicitationComplete: func(ctx context.Context, nc conduit.NotificationContext, done *conduit.ElicitationComplete) {
			fmt.Println("complete:", done.Request.Host, "IDN:", done.Request.IDN, "same id:", done.ElicitationID == done.Request.Params.ElicitationID)
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.CallTool(context.Background(), "link_account", nil); err != nil {
		fmt.Println(err)
	}
	// Output: complete: xn--80ak6aa92e.com IDN: true same id: true
}

// A server that needs the user to visit a page before it can answer refuses
// the call with -32042 (2025-11-25); the error carries the URL
// elicitations, checked as an elicitation/create's would be.
func ExampleErrURLElicitationRequired() {
	server := examplePeer(func(send func(any), m map[string]any) {
		if m["method"] == "tools/call" {
			send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32042, "message": "Authorization needed",
				"data": map[string]any{"elicitations": []any{map[string]any{"mode": "url", "elicitationId": "el-77",
					"url": "https://calendar.example/connect/el-77", "message": "Connect your calendar."}}}}})
		}
	})
	c, err := conduit.Connect(context.Background(), server, conduit.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, err = c.CallTool(context.Background(), "agenda", nil)
	var required *conduit.URLElicitationRequiredError
	if errors.Is(err, conduit.ErrURLElicitationRequired) && errors.As(err, &required) {
		for _, e := range required.Elicitations {
			fmt.Println(e.Params.ElicitationID, e.Host, e.Params.Message)
		}
	}
	// Output: el-77 calendar.example Connect your calendar.
}

// An input handler tells the server how far it has got, when the server's
// request asked for progress (legacy): the server here prints what it
// receives.
func ExampleNotifyProgress() {
	var call any // the tools/call's id, answered once the sampling is
	server := examplePeer(func(send func(any), m map[string]any) {
		switch {
		case m["method"] == "tools/call":
			call = m["id"]
			send(map[string]any{"jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage", "params": map[string]any{
				"_meta":    map[string]any{"progressToken": "tok"},
				"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "Summarise."}}}, "maxTokens": 100}})
		case m["id"] == "s-1": // the sampling's answer
			send(map[string]any{"jsonrpc": "2.0", "id": call, "result": map[string]any{"content": []any{}}})
		case m["method"] == "notifications/progress":
			p, _ := json.Marshal(m["params"])
			fmt.Println("server got:", string(p))
		}
	})
	c, err := conduit.Connect(context.Background(), server, conduit.Options{Handlers: conduit.Handlers{
		Sampling: func(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			if err := conduit.NotifyProgress(ctx, 1, 2, "asking the model"); err != nil {
				return nil, err
			}
			return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("Done."), Model: "m"}, nil
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	_, _ = c.CallTool(context.Background(), "summarise", nil)
	// Output: server got: {"message":"asking the model","progress":1,"progressToken":"tok","total":2}
}

// Answering a modern server's input_required by hand: each round comes back
// to the caller, who answers it and calls again. The client declares what
// its handlers implement: a server asks only for that.
func ExampleWithManualInput() {
	server := demoserver.New()
	defer server.Close()
	ctx := context.Background()
	c, err := conduit.Connect(ctx, server, conduit.Options{Era: conduit.EraModern, Handlers: conduit.Handlers{
		Elicitation: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: conduit.ActionDecline}, nil // not called WithManualInput
		},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	opts := []conduit.CallOption{conduit.WithManualInput()}
	for {
		res, err := c.CallTool(ctx, "two_step", nil, opts...)
		var ir *conduit.InputRequiredError
		if !errors.As(err, &ir) {
			if err != nil {
				fmt.Println(err)
				return
			}
			fmt.Println(res.Content[0].Text)
			return
		}
		answers := map[string]any{}
		for key, req := range ir.InputRequests {
			fmt.Println("asked:", key, req.Method)
			answers[key] = &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{"name": "orbit", "create": true, "visibility": "private"}}
		}
		opts = []conduit.CallOption{conduit.WithManualInput(), conduit.WithInputResponses(ir.RequestState, answers)}
	}
	// Output:
	// asked: project elicitation/create
	// asked: confirm elicitation/create
	// Created the private project "orbit", asked in two rounds of input_required, the first answer carried in the sealed requestState (modern).
}
