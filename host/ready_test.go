package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// "optional": true in a server's conduit block is read; a non-boolean is
// refused.
func TestParseOptional(t *testing.T) {
	cfg, _, err := Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "s", "conduit": {"optional": true}}, "b": {"command": "s"}}}`), env(nil))
	require.NoError(t, err)
	assert.True(t, cfg.Servers["a"].Conduit.Optional)
	assert.False(t, cfg.Servers["b"].Conduit.Optional)
	_, _, err = Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "s", "conduit": {"optional": "yes"}}}}`), env(nil))
	assert.EqualError(t, err, `c.json: server "a": key "conduit.optional": want true or false, got a string`)
}

// Readiness names every server that is neither optional nor disabled and
// not ready, with its state and why; an optional server that fails keeps
// nothing from being ready.
func TestReadiness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := errors.New("exec: no such file")
		cfg := Config{Servers: map[string]Server{
			"ok":       stdio(RestartPolicy{}),
			"broken":   stdio(RestartPolicy{}),
			"extra":    stdio(RestartPolicy{}),
			"disabled": stdio(RestartPolicy{}),
		}}
		s := cfg.Servers["extra"]
		s.Conduit.Optional = true
		cfg.Servers["extra"] = s
		s = cfg.Servers["disabled"]
		s.Conduit.Disabled = true
		cfg.Servers["disabled"] = s
		h := fakeHost(t, cfg, map[string]*fakeTransport{
			"ok": {tools: []string{"echo"}}, "broken": {fail: down}, "extra": {fail: down}, "disabled": {},
		}, Options{})
		synctest.Wait()
		assert.Equal(t, []NotReady{{Server: "broken", State: StateRestarting,
			Reason: "restarting in 500ms (attempt 1): conduit: transport: could not connect: exec: no such file"}}, h.Readiness())
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []NotReady{{Server: "broken", State: StateParked,
			Reason: "parked after 4 restarts: conduit: transport: could not connect: exec: no such file"}}, h.Readiness())

		// Without the broken server the host is ready; once closed, nothing is.
		delete(cfg.Servers, "broken")
		h.Apply(legacy(cfg))
		synctest.Wait()
		assert.Empty(t, h.Readiness())
		require.NoError(t, h.Close())
		assert.Len(t, h.Readiness(), 3)
	})
}

// Options.ServerOptions completes each server's client options with its
// name: here an Audit hook that sees which server asked.
func TestServerOptionsHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var names []string
		got := make(chan string, 4)
		f := &fakeTransport{asks: "roots/list", answered: make(chan json.RawMessage, 4)}
		opts := Options{
			Client: conduit.Options{Handlers: conduit.Handlers{Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				return &conduit.ListRootsResult{}, nil
			}}},
			ServerOptions: func(name string, o conduit.Options) conduit.Options {
				names = append(names, name+"/"+o.ServerID)
				o.Audit = func(r conduit.AuditRecord) { got <- name + " " + r.Method + " " + r.Outcome }
				return o
			},
		}
		fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, opts)
		synctest.Wait()
		assert.Equal(t, []string{"a/a"}, names)
		assert.Equal(t, "a roots/list answered", <-got)
	})
}
