package actors_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// answering is a handler that answers the everything-server's MRTR input
// requests by looking at the form's fields.
func answering() *handler {
	return &handler{
		modes: []string{"form"},
		sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("Paris"), Model: "test"}, nil
		},
		elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			content := map[string]any{}
			for name := range r.Fields {
				switch name {
				case "name":
					content[name] = "Ada"
				case "ok":
					content[name] = true
				case "color":
					content[name] = "blue"
				case "context":
					content[name] = "a test"
				}
			}
			return &conduit.ElicitResult{Action: "accept", Content: content}, nil
		},
	}
}

func connectModern(t testing.TB, opts conduit.Options) *conduit.Client {
	t.Helper()
	opts.Era = ""
	c := connectEverything(t, withAutoEra(opts))
	require.Equal(t, conduit.EraModern, c.Era())
	require.Equal(t, "2026-07-28", c.ProtocolVersion())
	return c
}

// withAutoEra marks opts so connectEverything leaves the era to the probe.
func withAutoEra(opts conduit.Options) conduit.Options {
	opts.Era = autoEra
	return opts
}

const autoEra conduit.Era = "auto-for-tests"

func TestModernEverythingServerMRTRTools(t *testing.T) {
	for _, tc := range []struct{ tool, want string }{
		{"test_input_required_result_elicitation", "Hello, Ada!"},
		{"test_input_required_result_sampling", "Sampling response: Paris"},
		{"test_input_required_result_list_roots", "Client exposed 1 root(s): file:///srv/repo"},
		{"test_input_required_result_request_state", "state-ok: requestState received and confirmation accepted"},
		{"test_input_required_result_multiple_inputs", "Paris Ada — 1 root(s) visible"},
		{"test_input_required_result_multi_round", "Multi-round complete: Ada likes blue"},
		{"test_input_required_result_tampered_state", "state-ok: requestState received and confirmation accepted"},
		{"test_input_required_result_capabilities", "Capability-aware input requests fulfilled"},
		{"test_missing_capability", "Client declared the sampling capability; tool executed."},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			var mu sync.Mutex
			var audit []conduit.AuditRecord
			c := connectModern(t, conduit.Options{Handler: answering(), Audit: func(r conduit.AuditRecord) {
				mu.Lock()
				defer mu.Unlock()
				audit = append(audit, r)
			}})
			r, err := c.CallTool(callCtx(t), tc.tool, nil)
			require.NoError(t, err)
			assert.False(t, r.IsError, textOf(t, r))
			assert.Equal(t, tc.want, textOf(t, r))
			mu.Lock()
			defer mu.Unlock()
			for _, a := range audit {
				assert.Equal(t, conduit.EraModern, a.Era)
				assert.Equal(t, "answered", a.Outcome)
				assert.NotEmpty(t, a.Key)
				assert.True(t, a.RelatedRequestID.IsZero())
			}
		})
	}
}

func TestModernEverythingServerPrompt(t *testing.T) {
	c := connectModern(t, conduit.Options{Handler: answering()})
	p, err := c.GetPrompt(callCtx(t), "test_input_required_result_prompt", nil)
	require.NoError(t, err)
	require.Len(t, p.Messages, 1)
	assert.Equal(t, "Context: a test", p.Messages[0].Content.Text)
}

// Ping reaches a real 2026-07-28 server, which has no ping: it asks
// server/discover there.
func TestModernEverythingServerAnswersPing(t *testing.T) {
	c := connectModern(t, conduit.Options{Handler: answering()})
	require.NoError(t, c.Ping(callCtx(t)))
}

func TestModernEverythingServerAsksOnlyForDeclaredCapabilities(t *testing.T) {
	calls := map[string]int{}
	var mu sync.Mutex
	h := elicitOnly{answer: func(r *conduit.ElicitationRequest) { mu.Lock(); calls[r.Params.Message]++; mu.Unlock() }}
	c := connectModern(t, conduit.Options{Handler: h})
	r, err := c.CallTool(callCtx(t), "test_input_required_result_capabilities", nil)
	require.NoError(t, err)
	assert.Equal(t, "Capability-aware input requests fulfilled", textOf(t, r))
	assert.Equal(t, map[string]int{"What is your name?": 1}, calls)
}

type elicitOnly struct {
	answer func(*conduit.ElicitationRequest)
}

func (e elicitOnly) HandleElicitation(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	e.answer(r)
	return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
}

func TestModernEverythingServerMissingCapability(t *testing.T) {
	c := connectModern(t, conduit.Options{Handler: elicitOnly{answer: func(*conduit.ElicitationRequest) {}}})
	_, err := c.CallTool(callCtx(t), "test_missing_capability", nil)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindRPC, ce.Kind)
	require.NotNil(t, ce.RPC)
	assert.Equal(t, messages.CodeMissingClientCapability, ce.RPC.Code)
	var data struct {
		RequiredCapabilities map[string]any `json:"requiredCapabilities"`
	}
	require.NoError(t, json.Unmarshal(ce.RPC.Data, &data))
	assert.Contains(t, data.RequiredCapabilities, "sampling") // go-sdk also lists "roots": {}
	assert.Contains(t, err.Error(), "sampling capability required but not declared by client")
}

func TestModernEverythingServerLogsWithMetaLogLevel(t *testing.T) {
	h := &logRecorder{}
	c := connectModern(t, conduit.Options{Handler: h})
	// Without a level the server sends no logs at all.
	r, err := c.CallTool(callCtx(t), "test_tool_with_logging", nil)
	require.NoError(t, err)
	assert.Equal(t, "Tool with logging executed successfully", textOf(t, r))
	require.NoError(t, c.SetLogLevel(callCtx(t), "info"))
	_, err = c.CallTool(callCtx(t), "test_tool_with_logging", nil)
	require.NoError(t, err)
	assert.Equal(t, []any{"Tool execution started", "Tool processing data", "Tool execution completed"}, h.waitFor(t, 3))
}

// tamperingConn appends "-TAMPERED" to every requestState the client sends:
// what an attacker between client and server would do.
type tamperingConn struct{ transport.Conn }

func (c tamperingConn) Write(ctx context.Context, data []byte) error {
	var m map[string]any
	if json.Unmarshal(data, &m) == nil {
		if p, ok := m["params"].(map[string]any); ok {
			if s, ok := p["requestState"].(string); ok {
				p["requestState"] = s + "-TAMPERED"
				data, _ = json.Marshal(m)
			}
		}
	}
	return c.Conn.Write(ctx, data)
}

type tamperingTransport struct{ transport.Transport }

func (t tamperingTransport) Connect(ctx context.Context) (transport.Conn, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return tamperingConn{c}, nil
}

func TestModernTamperedStateSurfacesTheServersError(t *testing.T) {
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	c, err := conduit.Connect(callCtx(t), tamperingTransport{&transport.Command{Path: bin}}, conduit.Options{Handler: answering()})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CallTool(callCtx(t), "test_input_required_result_tampered_state", nil)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindRPC, ce.Kind)
	assert.Equal(t, messages.CodeInvalidParams, ce.RPC.Code)
	assert.Equal(t, "invalid requestState: tampered", ce.RPC.Message)
}
