package conduit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

type full struct{}

func (full) HandleSampling(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	return &conduit.CreateMessageResult{Model: "full"}, nil
}
func (full) UsesSamplingTools() bool { return true }
func (full) HandleElicitation(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	return &conduit.ElicitResult{Action: "decline"}, nil
}
func (full) ElicitationModes() []string { return []string{"url"} }
func (full) ListRoots(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	return &conduit.ListRootsResult{}, nil
}
func (full) HandleNotification(context.Context, conduit.NotificationContext, *conduit.Notification) {}
func (full) HandleLog(context.Context, conduit.NotificationContext, *conduit.LoggingMessage)        {}

// pointerRoots implements RootsLister only through its pointer.
type pointerRoots struct{}

func (*pointerRoots) ListRoots(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	return nil, nil
}

// wrongSignature has HandleSampling without the error result.
type wrongSignature struct{}

func (wrongSignature) HandleSampling(context.Context, *conduit.SamplingRequest) *conduit.CreateMessageResult {
	return nil
}

// misspelt implements nothing; one method is one letter off.
type pointerWrongSignature struct{}

func (*pointerWrongSignature) HandleElicitation(context.Context, *conduit.ElicitationRequest) *conduit.ElicitResult {
	return nil
}

type misspelt struct{}

func (misspelt) HandleElicitaton(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	return nil, nil
}

func TestHandlersOfAdaptsEveryInterface(t *testing.T) {
	h, err := conduit.HandlersOf(full{})
	require.NoError(t, err)
	require.NotNil(t, h.Sampling)
	require.NotNil(t, h.Elicitation)
	require.NotNil(t, h.Roots)
	require.NotNil(t, h.Notification)
	require.NotNil(t, h.Log)
	assert.True(t, h.SamplingTools)
	assert.Equal(t, []string{"url"}, h.ElicitationModes)
	res, err := h.Sampling(context.Background(), &conduit.SamplingRequest{})
	require.NoError(t, err)
	assert.Equal(t, "full", res.Model, "the function is the value's method")

	h, err = conduit.HandlersOf(nil)
	require.NoError(t, err)
	assert.Nil(t, h.Sampling)
	assert.Nil(t, h.Log)
}

func TestHandlersOfRefusesWhatCannotBeMeant(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"pointer receiver", pointerRoots{}, "conduit: handler of type conduit_test.pointerRoots: ListRoots has a pointer receiver: pass a *conduit_test.pointerRoots to implement RootsLister"},
		{"wrong signature", wrongSignature{}, "conduit: handler of type conduit_test.wrongSignature: HandleSampling has signature func(context.Context, *messages.SamplingRequest) *messages.CreateMessageResult, SamplingHandler needs func(context.Context, *messages.SamplingRequest) (*messages.CreateMessageResult, error)"},
		{"wrong signature on a pointer", &pointerWrongSignature{}, "conduit: handler of type *conduit_test.pointerWrongSignature: HandleElicitation has signature func(context.Context, *messages.ElicitationRequest) *messages.ElicitResult, ElicitationHandler needs func(context.Context, *messages.ElicitationRequest) (*messages.ElicitResult, error)"},
		{"misspelt", misspelt{}, "conduit: handler of type conduit_test.misspelt: method HandleElicitaton is not HandleElicitation (ElicitationHandler)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conduit.HandlersOf(tc.v)
			require.Error(t, err)
			assert.True(t, errors.Is(err, conduit.ErrHandler))
			assert.Equal(t, tc.want, err.Error())

			_, err = conduit.Connect(context.Background(), nil, conduit.Options{Handler: tc.v})
			assert.ErrorIs(t, err, conduit.ErrHandler, "Connect refuses it before connecting")
		})
	}
	_, err := conduit.HandlersOf(&pointerRoots{})
	assert.NoError(t, err, "the pointer implements RootsLister")
}

func TestHandlerAndHandlersAreExclusive(t *testing.T) {
	opts := conduit.Options{Handler: full{}, Handlers: conduit.Handlers{ElicitationModes: []string{"form"}}}
	_, err := conduit.Connect(context.Background(), nil, opts)
	require.ErrorIs(t, err, conduit.ErrHandler)
	assert.Equal(t, "conduit: handler: set Options.Handler or Options.Handlers, not both", err.Error())
	_, err = conduit.Capabilities(opts)
	assert.ErrorIs(t, err, conduit.ErrHandler)
}

func TestCapabilitiesSayWhatAndWhy(t *testing.T) {
	sampling := func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) { return nil, nil }
	caps, err := conduit.Capabilities(conduit.Options{Handlers: conduit.Handlers{Sampling: sampling}})
	require.NoError(t, err)
	assert.Equal(t, []conduit.Capability{
		{Name: "sampling", Advertised: true, Why: "Options.Handlers.Sampling is set"},
		{Name: "sampling.tools", Why: "Options.Handlers.SamplingTools is false"},
		{Name: "sampling.context", Why: `Options.Sampling.Context is false: includeContext is coerced to "none"`},
		{Name: "elicitation.form", Why: "Options.Handlers.Elicitation is nil"},
		{Name: "elicitation.url", Why: "Options.Handlers.Elicitation is nil"},
		{Name: "roots", Why: "Options.Handlers.Roots is nil"},
		{Name: "roots.listChanged", Why: "roots are not advertised"},
	}, caps)

	caps, err = conduit.Capabilities(conduit.Options{Handler: full{}, Sampling: conduit.SamplingOptions{Context: true}})
	require.NoError(t, err)
	assert.Equal(t, []conduit.Capability{
		{Name: "sampling", Advertised: true, Why: "Options.Handler (conduit_test.full) implements SamplingHandler (HandleSampling)"},
		{Name: "sampling.tools", Advertised: true, Why: "Options.Handler (conduit_test.full) UsesSamplingTools() is true"},
		{Name: "sampling.context", Advertised: true, Why: "Options.Sampling.Context is true"},
		{Name: "elicitation.form", Why: "Options.Handler (conduit_test.full) implements ElicitationHandler (HandleElicitation); mode form not declared"},
		{Name: "elicitation.url", Advertised: true, Why: "Options.Handler (conduit_test.full) implements ElicitationHandler (HandleElicitation); mode url declared"},
		{Name: "roots", Advertised: true, Why: "Options.Handler (conduit_test.full) implements RootsLister (ListRoots)"},
		{Name: "roots.listChanged", Advertised: true, Why: "roots are advertised: Client.RootsChanged tells the server"},
	}, caps)

	elicit := func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) { return nil, nil }
	caps, err = conduit.Capabilities(conduit.Options{Handlers: conduit.Handlers{Elicitation: elicit}})
	require.NoError(t, err)
	assert.Equal(t, conduit.Capability{Name: "elicitation.form", Advertised: true,
		Why: "Options.Handlers.Elicitation is set; mode form declared (no modes given: form only)"}, caps[3])
	assert.Equal(t, conduit.Capability{Name: "sampling.tools", Why: "sampling is not advertised"}, caps[1])

	caps, err = conduit.Capabilities(conduit.Options{Handlers: conduit.Handlers{Elicitation: elicit, ElicitationModes: []string{"tty"}}})
	require.NoError(t, err)
	assert.Equal(t, conduit.Capability{Name: "elicitation.form", Advertised: true,
		Why: "Options.Handlers.Elicitation is set; mode form declared (no known mode given: form only)"}, caps[3])
}
