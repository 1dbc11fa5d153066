package era

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

func sampling(context.Context, *messages.SamplingRequest) (*messages.CreateMessageResult, error) {
	return nil, nil
}

func elicitation(context.Context, *messages.ElicitationRequest) (*messages.ElicitResult, error) {
	return nil, nil
}

func roots(context.Context, *messages.RootsRequest) (*messages.ListRootsResult, error) {
	return nil, nil
}

var (
	sampler     = messages.Handlers{Sampling: sampling}
	toolSampler = messages.Handlers{Sampling: sampling, SamplingTools: true}
	eliciter    = messages.Handlers{Elicitation: elicitation}
)

func modalEliciter(modes ...string) messages.Handlers {
	return messages.Handlers{Elicitation: elicitation, ElicitationModes: modes}
}

func TestCapabilitiesPerRevision(t *testing.T) {
	everything := messages.Handlers{Sampling: sampling, SamplingTools: true, Elicitation: elicitation,
		ElicitationModes: []string{"url", "form", "url", "bogus"}, Roots: roots}
	for _, tc := range []struct {
		name    string
		handler messages.Handlers
		context bool
		version string
		want    map[string]any
	}{
		{"nothing set", messages.Handlers{}, false, "2025-11-25", map[string]any{}},
		{"only notification hooks", messages.Handlers{Log: func(context.Context, messages.NotificationContext, *messages.LoggingMessage) {}}, true, "2025-11-25", map[string]any{}},
		{"sampling 11-25", sampler, false, "2025-11-25", map[string]any{"sampling": map[string]any{}}},
		{"sampling context+tools 11-25", toolSampler, true, "2025-11-25",
			map[string]any{"sampling": map[string]any{"context": map[string]any{}, "tools": map[string]any{}}}},
		{"sampling context+tools 06-18 has no sub-fields", toolSampler, true, "2025-06-18", map[string]any{"sampling": map[string]any{}}},
		{"elicitation default form 11-25", eliciter, false, "2025-11-25", map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}},
		{"elicitation default form 06-18", eliciter, false, "2025-06-18", map[string]any{"elicitation": map[string]any{}}},
		{"url only does not exist in 06-18", modalEliciter("url"), false, "2025-06-18", map[string]any{}},
		{"url only 11-25", modalEliciter("url"), false, "2025-11-25", map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}},
		{"everything 11-25", everything, true, "2025-11-25", map[string]any{
			"sampling":    map[string]any{"context": map[string]any{}, "tools": map[string]any{}},
			"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
			"roots":       map[string]any{"listChanged": true},
		}},
		{"roots 06-18 list changes", messages.Handlers{Roots: roots}, false, "2025-06-18", map[string]any{"roots": map[string]any{"listChanged": true}}},
		{"roots modern: listChanged is gone", messages.Handlers{Roots: roots}, false, "2026-07-28", map[string]any{"roots": map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Declare(tc.handler, tc.context).Capabilities(tc.version))
		})
	}
}

func TestAllows(t *testing.T) {
	d := Declare(modalEliciter("url"), false)
	assert.True(t, d.Allows(messages.MethodElicit, "2025-11-25"))
	assert.False(t, d.Allows(messages.MethodElicit, "2025-06-18"))
	assert.False(t, d.Allows(messages.MethodCreateMessage, "2025-11-25"))
	assert.False(t, d.Allows(messages.MethodListRoots, "2025-11-25"))
	assert.False(t, d.Allows("ping", "2025-11-25"))
}

func TestCheckInitialize(t *testing.T) {
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		require.NoError(t, CheckInitialize(&messages.InitializeResult{ProtocolVersion: v}, "2025-11-25"))
	}
	for _, v := range []string{"2024-10-07", "2026-07-28", ""} {
		err := CheckInitialize(&messages.InitializeResult{ProtocolVersion: v}, "2025-11-25")
		require.Error(t, err, v)
		assert.Equal(t, `server answered initialize with protocol version "`+v+`"; Conduit offered 2025-11-25 and accepts 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`, err.Error())
	}
}

func TestTasksCapabilityPerRevision(t *testing.T) {
	d := Declare(messages.Handlers{}, false)
	d.Tasks = true
	assert.Equal(t, map[string]any{"tasks": map[string]any{}}, d.Capabilities(messages.Version20251125),
		"a client that only sends task-augmented requests hosts no task: empty")
	assert.Equal(t, map[string]any{}, d.Capabilities(messages.Version20250618), "no tasks in 2025-06-18")
	assert.Equal(t, map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}, d.ModernCapabilities(messages.Version20260728),
		"the modern era has the extension, no tasks member")
	d.Tasks = false
	assert.Equal(t, map[string]any{}, d.Capabilities(messages.Version20251125))
	assert.Equal(t, map[string]any{}, d.ModernCapabilities(messages.Version20260728))
}

func TestOnlyUnknownElicitationModesMeanFormOnly(t *testing.T) {
	d := Declare(modalEliciter("FORM", "tty"), false)
	assert.Equal(t, []string{messages.ModeForm}, d.ElicitModes, "unknown modes are ignored; none left means form only")
	assert.Equal(t, map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, d.Capabilities("2025-11-25"))
	assert.True(t, d.Allows(messages.MethodElicit, "2025-06-18"))
}

// What the revisions before 2025-06-18 lack is not offered: no
// elicitation (so a server's elicitation/create is refused before any
// callback), no sampling.context or sampling.tools, no tasks; sampling and
// roots (with listChanged) are there since 2024-11-05.
func TestOlderRevisionsOfferWhatTheyHave(t *testing.T) {
	d := Declare(messages.Handlers{Sampling: sampling, SamplingTools: true, Elicitation: elicitation,
		ElicitationModes: []string{"form", "url"}, Roots: roots}, true)
	d.Tasks = true
	for _, v := range []string{messages.Version20250326, messages.Version20241105} {
		assert.Equal(t, map[string]any{"sampling": map[string]any{}, "roots": map[string]any{"listChanged": true}}, d.Capabilities(v), v)
		assert.False(t, d.Allows(messages.MethodElicit, v), v)
		assert.True(t, d.Allows(messages.MethodCreateMessage, v), v)
		assert.True(t, d.Allows(messages.MethodListRoots, v), v)
		assert.False(t, StructuredContent(v), v)
	}
	assert.True(t, StructuredContent(messages.Version20250618))
	assert.True(t, StructuredContent(messages.Version20260728))
	assert.True(t, AtLeast("2025-06-18", "2025-03-26"))
	assert.False(t, AtLeast("2024-11-05", "2025-03-26"))
}
