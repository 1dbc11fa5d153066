package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// conformanceCommand is the client the official MCP conformance suite
// drives: it runs the scenario named by MCP_CONFORMANCE_SCENARIO against
// the server URL the suite appends as the last argument.
func (a *app) conformanceCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "conformance URL",
		Short: "Run one client scenario of the MCP conformance suite against URL",
		Long: `Run the client scenario named by $MCP_CONFORMANCE_SCENARIO (with
$MCP_CONFORMANCE_CONTEXT where the scenario needs it) against the Streamable
HTTP endpoint URL. This is the --command given to the official suite:

  node conformance/dist/index.js client --command "conduit conformance" --requirements 2026-07-28`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runConformance(cmd.Context(), args[0], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT"))
		},
	}
}

// conformanceClientMetadata is the client ID metadata document URL the
// suite's authorization servers accept.
const conformanceClientMetadata = "https://conformance-test.local/client-metadata.json"

// conformanceHandler answers whatever a scenario asks: sampling with a
// fixed text, elicitation by accepting with a value for every field that
// has no default (the guards fill in the defaults).
type conformanceHandler struct{ logger *slog.Logger }

func (h conformanceHandler) HandleSampling(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("conformance"), Model: "conduit-conformance"}, nil
}

func (h conformanceHandler) HandleElicitation(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	if r.Mode == messages.ModeURL {
		return &conduit.ElicitResult{Action: messages.ActionAccept}, nil
	}
	return &conduit.ElicitResult{Action: messages.ActionAccept, Content: fillForm(r.Form)}, nil
}

func (h conformanceHandler) HandleLog(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
	h.logger.Info("server log", "level", e.Level, "logger", e.Logger, "data", e.Data)
}

// fillForm answers a form: a plausible value for each field without a
// default, of its kind and within its options.
func fillForm(form []messages.FormField) map[string]any {
	content := map[string]any{}
	for _, f := range form {
		if f.Default != nil {
			continue
		}
		switch f.Kind {
		case messages.FieldSelect:
			content[f.Name] = f.Options[0].Value
		case messages.FieldMultiSelect:
			content[f.Name] = []string{f.Options[0].Value}
		case messages.FieldBoolean:
			content[f.Name] = true
		case messages.FieldInteger, messages.FieldNumber:
			v := 1.0
			if f.Minimum != nil && *f.Minimum > v {
				v = *f.Minimum
			}
			content[f.Name] = v
		case messages.FieldString:
			content[f.Name] = "conformance"
		}
	}
	return content
}

func (a *app) runConformance(ctx context.Context, url, scenario, rawContext string) error {
	logger := newLogger(a.stderr, max(a.opts.verbose, 1), false)
	var sctx struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		conformanceAuthContext
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sctx); err != nil {
			return usagef("MCP_CONFORMANCE_CONTEXT is not JSON: %v", err)
		}
	}
	tr := &transport.HTTP{URL: url, Logger: logger}
	if strings.HasPrefix(scenario, "auth/") {
		// Headless sign-in: the suite's authorization server redirects at
		// once; pre-registered credentials come in the context.
		cfg := oauth.Config{Resource: url, RedirectURL: "http://localhost:3000/callback",
			CodeFetcher: oauth.HeadlessFetcher(nil), ClientIDMetadataURL: conformanceClientMetadata,
			ClientID: sctx.ClientID, ClientSecret: sctx.ClientSecret, ClientName: "conduit-conformance",
			ClientCredentials: scenario == "auth/client-credentials-basic"}
		sctx.apply(scenario, &cfg)
		o, err := oauth.New(cfg)
		if err != nil {
			return err
		}
		tr.Client = o.Client()
	}
	c, err := conduit.Connect(ctx, tr, conduit.Options{
		Name: "conduit-conformance", Handler: conformanceHandler{logger: logger}, Logger: logger,
		// The suite runs its scenarios in parallel, dozens of clients
		// and servers on a CI machine's two cores: a probe answer can take
		// longer than the 3 s default, which would read a modern
		// scenario server as a legacy one.
		DiscoverTimeout: 15 * time.Second,
	})
	if err != nil {
		return connectFailed(ctx, err)
	}
	defer c.Close()
	logger.Info("connected", "scenario", scenario, "protocol_version", c.ProtocolVersion(), "era", c.Era())

	call := func(name string, args any) error {
		r, err := c.CallTool(ctx, name, args)
		if err != nil {
			return callFailed(ctx, err)
		}
		logger.Info("tool result", "tool", name, "is_error", r.IsError)
		return nil
	}
	tools := func() ([]conduit.Tool, error) {
		t, err := c.ListTools(ctx)
		if err != nil {
			return nil, callFailed(ctx, err)
		}
		return t, nil
	}
	find := func(ts []conduit.Tool, name string) (conduit.Tool, error) {
		i := slices.IndexFunc(ts, func(t conduit.Tool) bool { return t.Name == name })
		if i < 0 {
			return conduit.Tool{}, fmt.Errorf("tool %q not found", name)
		}
		return ts[i], nil
	}
	switch scenario {
	case "initialize", "json-schema-ref-no-deref":
		_, err := tools()
		return err
	case "request-metadata":
		return nil
	case "tools_call":
		ts, err := tools()
		if err != nil {
			return err
		}
		if _, err := find(ts, "add_numbers"); err != nil {
			return err
		}
		return call("add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults", "sse-retry":
		name := map[string]string{"elicitation-sep1034-client-defaults": "test_client_elicitation_defaults", "sse-retry": "test_reconnection"}[scenario]
		ts, err := tools()
		if err != nil {
			return err
		}
		if _, err := find(ts, name); err != nil {
			return err
		}
		return call(name, map[string]any{})
	case "json-schema-2020-12-preservation":
		ts, err := tools()
		if err != nil {
			return err
		}
		focal, err := find(ts, "json_schema_2020_12_tool")
		if err != nil {
			return err
		}
		return call("json_schema_echo", map[string]any{"schema": focal.InputSchema})
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if err := call(name, map[string]any{}); err != nil {
				logger.Info("call refused (expected for some cases)", "tool", name, "err", err)
			}
		}
		return nil
	case "http-standard-headers":
		if ts, err := c.ListTools(ctx); err == nil && len(ts) > 0 {
			_ = call(ts[0].Name, map[string]any{})
		}
		if rs, err := c.ListResources(ctx); err == nil && len(rs) > 0 {
			_, _ = c.ReadResource(ctx, rs[0].URI)
		}
		if ps, err := c.ListPrompts(ctx); err == nil && len(ps) > 0 {
			_, _ = c.GetPrompt(ctx, ps[0].Name, map[string]string{})
		}
		return nil
	case "http-custom-headers":
		if _, err := tools(); err != nil {
			return err
		}
		for _, tc := range sctx.ToolCalls {
			if tc.Arguments == nil {
				tc.Arguments = map[string]any{}
			}
			if err := call(tc.Name, tc.Arguments); err != nil {
				logger.Info("call failed", "tool", tc.Name, "err", err)
			}
		}
		return nil
	case "http-invalid-tool-headers":
		ts, err := tools()
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := call(t.Name, map[string]any{"region": "us-west1"}); err != nil {
				logger.Info("call refused", "tool", t.Name, "err", err)
			}
		}
		return nil
	case "":
		return usagef("MCP_CONFORMANCE_SCENARIO is not set")
	}
	if strings.HasPrefix(scenario, "auth/") {
		if _, err := tools(); err != nil {
			return err
		}
		return call("test-tool", map[string]any{})
	}
	return usagef("unknown conformance scenario %q", scenario)
}
