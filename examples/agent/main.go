// Agent is a Go agent that embeds Conduit, as a newcomer would write one
// from the README and go doc: it connects to two servers at once (npm
// server-everything over stdio, the go-sdk everything-server over
// Streamable HTTP), answers their sampling with a fake LLM and their forms
// through a UI callback, offers a root and changes it mid-run, sends the
// servers' logs and progress to its slog logger, calls each server from 8
// goroutines × 50 calls, runs its actors in its own protoactor system, runs
// a server under package host from code, and closes everything.
//
//	go run ./examples/agent -node NODE -ts SERVER_EVERYTHING_JS -gosdk EVERYTHING_SERVER
//
// It exits 1, saying why, when anything it checks goes wrong; CI runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
)

func main() {
	node := flag.String("node", "node", "the node binary")
	ts := flag.String("ts", "", "npm server-everything's entry point (dist/index.js)")
	gosdk := flag.String("gosdk", "", "the go-sdk everything-server binary")
	flag.Parse()
	if *ts == "" || *gosdk == "" {
		fmt.Fprintln(os.Stderr, "usage: agent -node NODE -ts SERVER_EVERYTHING_JS -gosdk EVERYTHING_SERVER")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := run(context.Background(), logger, *node, *ts, *gosdk); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
	fmt.Println("agent: every check passed")
}

// agent is the embedding application: its LLM, its UI, its roots.
type agent struct {
	logger  *slog.Logger
	root    atomic.Value // string: the workspace folder offered as the root
	sampled atomic.Int64
	asked   atomic.Int64
}

// handlers are the agent's answers to the servers' input requests.
func (a *agent) handlers() conduit.Handlers {
	return conduit.Handlers{
		// The fake LLM: it echoes what it was asked.
		Sampling: func(_ context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			a.sampled.Add(1)
			var prompt string
			if n := len(r.Params.Messages); n > 0 && len(r.Params.Messages[n-1].Content.Blocks) > 0 {
				prompt = r.Params.Messages[n-1].Content.Blocks[0].Text
			}
			return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("you said: " + prompt), Model: "fake-llm"}, nil
		},
		// The UI callback: a person fills the typed form. Here a field with
		// a default is left to it (Conduit fills it in), and a required
		// one without gets what a person might type.
		Elicitation: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			a.asked.Add(1)
			if r.Mode == "url" {
				return &conduit.ElicitResult{Action: "decline"}, nil
			}
			answer := map[string]any{}
			for _, f := range r.Form {
				if f.Default != nil || !f.Required {
					continue
				}
				switch f.Kind {
				case conduit.FieldBoolean:
					answer[f.Name] = true
				case conduit.FieldNumber, conduit.FieldInteger:
					answer[f.Name] = 1
				case conduit.FieldSelect:
					answer[f.Name] = f.Options[0].Value
				case conduit.FieldMultiSelect:
					answer[f.Name] = []string{f.Options[0].Value}
				default:
					answer[f.Name] = "Ada"
				}
			}
			return &conduit.ElicitResult{Action: "accept", Content: answer}, nil
		},
		Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: a.root.Load().(string), Name: "workspace"}}}, nil
		},
		Log: func(_ context.Context, nc conduit.NotificationContext, e *conduit.LoggingMessage) {
			a.logger.Info("server log", "server", nc.ServerID, "level", e.Level, "logger", e.Logger, "data", e.Data)
		},
		Progress: func(_ context.Context, nc conduit.NotificationContext, p *conduit.Progress) {
			a.logger.Info("progress", "server", nc.ServerID, "progress", p.Progress, "message", p.Message)
		},
	}
}

func run(ctx context.Context, logger *slog.Logger, node, ts, gosdk string) error {
	a := &agent{logger: logger}
	a.root.Store("file:///srv/agent-workspace-a")
	// The agent's own actor system, logging to the agent's logger:
	// Conduit's actors run in it.
	system := actor.NewActorSystemWithConfig(actor.Configure(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return logger })))
	defer system.Shutdown()
	opts := func(id string) conduit.Options {
		return conduit.Options{Name: "example-agent", ServerID: id, Handlers: a.handlers(), Logger: logger, System: system,
			// A fan-out agent asks for more input than one person would:
			// the budget (10/s, bursts of 20, per server) is raised.
			InputRateLimit: 1000, InputBurst: 100}
	}

	everything, err := conduit.Connect(ctx, &transport.Command{Path: node, Args: []string{ts, "stdio"}}, opts("everything"))
	if err != nil {
		return fmt.Errorf("connect to npm server-everything: %w", err)
	}
	defer everything.Close()

	url, stop, err := startHTTP(gosdk)
	if err != nil {
		return err
	}
	defer stop()
	gs, err := connectRetrying(ctx, &transport.HTTP{URL: url}, opts("gosdk"))
	if err != nil {
		return fmt.Errorf("connect to the go-sdk server: %w", err)
	}
	defer gs.Close()
	fmt.Printf("agent: npm server-everything %s (%s), go-sdk %s (%s)\n", everything.ProtocolVersion(), everything.Era(), gs.ProtocolVersion(), gs.Era())

	// One root changed mid-run reaches the server: its own tool says so.
	if err := rootChange(ctx, a, everything); err != nil {
		return err
	}
	// Sampling and a form, answered by the agent.
	for _, call := range []struct {
		c    *conduit.Client
		tool string
		args map[string]any
	}{
		{everything, "trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10}},
		{gs, "test_input_required_result_elicitation", map[string]any{}},
	} {
		res, err := call.c.CallTool(ctx, call.tool, call.args)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", call.tool, err)
		case res.IsError:
			return fmt.Errorf("%s reported an error: %v", call.tool, res.Content)
		}
	}
	// Many callers at once.
	for _, s := range []struct {
		c    *conduit.Client
		tool string
		args map[string]any
	}{{everything, "echo", map[string]any{"message": "hi"}}, {gs, "test_simple_text", map[string]any{}}} {
		if err := fanOut(ctx, s.c, s.tool, s.args); err != nil {
			return err
		}
	}
	// A deadline of the agent's own is a timeout, not a cancellation.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = everything.CallTool(dctx, "trigger-long-running-operation", map[string]any{"duration": 3, "steps": 3})
	cancel()
	var ce *conduit.Error
	if !errors.As(err, &ce) || ce.Kind != conduit.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("a ctx deadline should be KindTimeout: %v", err)
	}
	if err := viaHost(ctx, gosdk, logger); err != nil {
		return err
	}
	fmt.Printf("agent: %d sampling and %d elicitation requests answered; stats %+v and %+v\n",
		a.sampled.Load(), a.asked.Load(), everything.Stats(), gs.Stats())
	if a.sampled.Load() < 1 || a.asked.Load() < 1 {
		return errors.New("the servers' input requests did not reach the agent")
	}
	return nil
}

// rootChange reads the server's view of the roots, changes the root, tells
// the server (Client.RootsChanged) and reads it again.
func rootChange(ctx context.Context, a *agent, c *conduit.Client) error {
	roots := func() (string, error) {
		res, err := c.CallTool(ctx, "get-roots-list", map[string]any{})
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, block := range res.Content {
			b.WriteString(block.Text)
		}
		return b.String(), nil
	}
	// The server asks for the roots once it is initialized: wait for it.
	var before string
	for range 50 {
		var err error
		if before, err = roots(); err != nil {
			return fmt.Errorf("get-roots-list: %w", err)
		}
		if strings.Contains(before, "agent-workspace-a") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(before, "agent-workspace-a") {
		return fmt.Errorf("the server never listed the first root: %.200q", before)
	}
	a.root.Store("file:///srv/agent-workspace-b")
	if err := c.RootsChanged(ctx); err != nil {
		return fmt.Errorf("RootsChanged: %w", err)
	}
	for range 50 {
		after, err := roots()
		if err != nil {
			return fmt.Errorf("get-roots-list: %w", err)
		}
		if strings.Contains(after, "agent-workspace-b") {
			fmt.Println("agent: the root change reached the server")
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the root change never reached the server")
}

// fanOut calls tool from 8 goroutines, 50 calls each: every call succeeds.
func fanOut(ctx context.Context, c *conduit.Client, tool string, args map[string]any) error {
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := c.CallTool(ctx, tool, args); err != nil {
					failed.Add(1)
					first.CompareAndSwap(nil, err)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%s: %d of 400 calls failed, the first: %v", tool, n, first.Load())
	}
	fmt.Printf("agent: 400 calls of %s in %s\n", tool, time.Since(start).Round(time.Millisecond))
	return nil
}

// viaHost runs the go-sdk server under package host, from code: supervised,
// its tools in a namespaced catalog.
func viaHost(ctx context.Context, gosdk string, logger *slog.Logger) error {
	h, err := host.New(host.Config{Servers: map[string]host.Server{"gosdk": {Command: gosdk}}}, host.Options{Client: conduit.Options{Logger: logger}})
	if err != nil {
		return err
	}
	defer h.Close()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := h.CallTool(wait, "gosdk", "test_simple_text", nil)
	if err != nil {
		return fmt.Errorf("host: %w", err)
	}
	fmt.Printf("agent: through the host, %d tools in the catalog; test_simple_text said %q\n", len(h.Tools()), res.Content[0].Text)
	return nil
}

// startHTTP runs the go-sdk everything-server on a free loopback port.
func startHTTP(bin string) (url string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "-http", addr)
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return "http://" + addr + "/mcp", func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

// connectRetrying connects once the server listens (it was just started).
func connectRetrying(ctx context.Context, t transport.Transport, opts conduit.Options) (*conduit.Client, error) {
	var err error
	for range 50 {
		var c *conduit.Client
		if c, err = conduit.Connect(ctx, t, opts); err == nil {
			return c, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}
