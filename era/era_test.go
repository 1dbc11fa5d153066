package era

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

type sampler struct{}

func (sampler) HandleSampling(context.Context, *messages.SamplingRequest) (*messages.CreateMessageResult, error) {
	return nil, nil
}

type toolSampler struct{ sampler }

func (toolSampler) UsesSamplingTools() bool { return true }

type eliciter struct{ modes []string }

func (eliciter) HandleElicitation(context.Context, *messages.ElicitationRequest) (*messages.ElicitResult, error) {
	return nil, nil
}

type modalEliciter struct{ eliciter }

func (m modalEliciter) ElicitationModes() []string { return m.modes }

type rooter struct{}

func (rooter) ListRoots(context.Context, *messages.RootsRequest) (*messages.ListRootsResult, error) {
	return nil, nil
}

type all struct {
	toolSampler
	modalEliciter
	rooter
}

func TestCapabilitiesPerRevision(t *testing.T) {
	everything := all{modalEliciter: modalEliciter{eliciter{modes: []string{"url", "form", "url", "bogus"}}}}
	for _, tc := range []struct {
		name    string
		handler any
		context bool
		version string
		want    map[string]any
	}{
		{"nil handler", nil, false, "2025-11-25", map[string]any{}},
		{"no callbacks", struct{}{}, true, "2025-11-25", map[string]any{}},
		{"sampling 11-25", sampler{}, false, "2025-11-25", map[string]any{"sampling": map[string]any{}}},
		{"sampling context+tools 11-25", toolSampler{}, true, "2025-11-25",
			map[string]any{"sampling": map[string]any{"context": map[string]any{}, "tools": map[string]any{}}}},
		{"sampling context+tools 06-18 has no sub-fields", toolSampler{}, true, "2025-06-18", map[string]any{"sampling": map[string]any{}}},
		{"elicitation default form 11-25", eliciter{}, false, "2025-11-25", map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}},
		{"elicitation default form 06-18", eliciter{}, false, "2025-06-18", map[string]any{"elicitation": map[string]any{}}},
		{"url only does not exist in 06-18", modalEliciter{eliciter{modes: []string{"url"}}}, false, "2025-06-18", map[string]any{}},
		{"url only 11-25", modalEliciter{eliciter{modes: []string{"url"}}}, false, "2025-11-25", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}},
		{"everything 11-25", everything, true, "2025-11-25", map[string]any{
			"sampling":    map[string]any{"context": map[string]any{}, "tools": map[string]any{}},
			"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
			"roots":       map[string]any{},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Declare(tc.handler, tc.context).Capabilities(tc.version))
		})
	}
}

func TestAllows(t *testing.T) {
	d := Declare(modalEliciter{eliciter{modes: []string{"url"}}}, false)
	assert.True(t, d.Allows(messages.MethodElicit, "2025-11-25"))
	assert.False(t, d.Allows(messages.MethodElicit, "2025-06-18"))
	assert.False(t, d.Allows(messages.MethodCreateMessage, "2025-11-25"))
	assert.False(t, d.Allows(messages.MethodListRoots, "2025-11-25"))
	assert.False(t, d.Allows("ping", "2025-11-25"))
}

func TestCheckInitialize(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18"} {
		require.NoError(t, CheckInitialize(&messages.InitializeResult{ProtocolVersion: v}, "2025-11-25"))
	}
	for _, v := range []string{"2024-11-05", "2025-03-26", "2026-07-28", ""} {
		err := CheckInitialize(&messages.InitializeResult{ProtocolVersion: v}, "2025-11-25")
		require.Error(t, err, v)
		assert.Equal(t, `server answered initialize with protocol version "`+v+`"; Conduit offered 2025-11-25 and accepts 2025-11-25, 2025-06-18`, err.Error())
	}
}
