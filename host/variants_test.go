package host

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// gatewayLike are host options whose client declares every kind of input,
// as the gateway's does.
func gatewayLike(o Options) Options {
	o.Client.Handlers = conduit.Handlers{
		Sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return nil, errors.New("unused")
		},
		Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return nil, errors.New("unused")
		},
		ElicitationModes: []string{"form", "url"},
		Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{}, nil
		},
	}
	return o
}

// seen calls the fake's "caps" tool and returns the pid of the process
// that answered and the capabilities its initialize declared.
func seen(t *testing.T, h *Host, opts ...conduit.CallOption) (string, string) {
	t.Helper()
	res, err := h.CallTool(context.Background(), "a", "caps", nil, opts...)
	require.NoError(t, err)
	pid, caps, _ := strings.Cut(res.Content[0].Text, " ")
	return pid, caps
}

// A call made WithCapabilities on a legacy server reaches a connection
// whose initialize declared exactly that set, started on first need and
// kept for the next call of the same set; a call without the option, or
// whose set is the main connection's, goes to the main connection, which
// is untouched. The sets are what the client would declare: one it
// cannot (sampling.tools without a handler that takes tools) comes to the
// same connection as its parent.
func TestVariantPerCapabilitySet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		synctest.Wait()

		pid, caps := seen(t, h)
		assert.Equal(t, "1000", pid)
		assert.JSONEq(t, `{"sampling":{},"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true}}`, caps)

		pid, caps = seen(t, h, conduit.WithCapabilities("sampling"))
		assert.Equal(t, "1001", pid)
		assert.JSONEq(t, `{"sampling":{}}`, caps)
		pid, _ = seen(t, h, conduit.WithCapabilities("sampling.tools"))
		assert.Equal(t, "1001", pid, "the same set as told")

		pid, _ = seen(t, h, conduit.WithCapabilities("roots", "elicitation.url", "sampling", "elicitation.form"))
		assert.Equal(t, "1000", pid, "the main connection's set")

		pid, caps = seen(t, h, conduit.WithCapabilities())
		assert.Equal(t, "1002", pid)
		assert.JSONEq(t, `{}`, caps)
		pid, caps = seen(t, h, conduit.WithCapabilities("elicitation.url", "roots"))
		assert.Equal(t, "1003", pid)
		assert.JSONEq(t, `{"elicitation":{"url":{}},"roots":{"listChanged":true}}`, caps)
		assert.Equal(t, 4, f.count())

		st := h.Status()[0]
		assert.Equal(t, StateReady, st.State)
		assert.Equal(t, 1000, st.PID)
		assert.Equal(t, 0, st.Restarts)
		assert.Equal(t, int64(6), st.Calls, "every call of the server")
		assert.Equal(t, []string{"caps"}, []string{h.Tools()[0].ServerTool}, "the catalog is the main connection's")
		var got []string
		for _, v := range st.Variants {
			assert.Equal(t, StateReady, v.State)
			assert.Equal(t, 0, v.InFlight)
			got = append(got, strings.Join(v.Capabilities, "+")+"="+strings.Repeat("I", int(v.Calls)))
		}
		assert.Equal(t, []string{"=I", "elicitation.url+roots=I", "sampling=II"}, got)
		assert.Equal(t, 1002, st.Variants[0].PID)

		// Its tools/list is the main connection's alone.
		f.mu.Lock()
		lists := f.lists
		f.mu.Unlock()
		assert.Equal(t, 1, lists)
	})
}

// A server pinned to the modern era needs no variant (each request's
// _meta carries the set), nor does a host with MaxVariants < 0.
func TestNoVariantForAModernServerOrWhenOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}, modern: true}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		synctest.Wait()
		_, err := h.CallTool(context.Background(), "a", "caps", nil, conduit.WithCapabilities())
		require.NoError(t, err)
		assert.Equal(t, 1, f.count())
		assert.Empty(t, h.Status()[0].Variants)
	})
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{MaxVariants: -1}))
		synctest.Wait()
		pid, _ := seen(t, h, conduit.WithCapabilities())
		assert.Equal(t, "1000", pid)
		assert.Equal(t, 1, f.count())
	})
}

// A variant without a call for VariantIdle is closed (its process ends);
// one with a call in flight is not, however long the call; the next call
// of its set starts another.
func TestVariantClosesWhenIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps", "block"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		synctest.Wait()
		seen(t, h, conduit.WithCapabilities())
		time.Sleep(DefaultVariantIdle - time.Second)
		synctest.Wait()
		require.Len(t, h.Status()[0].Variants, 1)
		seen(t, h, conduit.WithCapabilities()) // the clock starts again
		time.Sleep(DefaultVariantIdle - time.Second)
		synctest.Wait()
		require.Len(t, h.Status()[0].Variants, 1)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Empty(t, h.Status()[0].Variants)
		f.mu.Lock()
		assert.Len(t, f.live, 1, "its process ended; the main one runs")
		f.mu.Unlock()
		assert.Equal(t, StateReady, h.Status()[0].State)

		// A call in flight holds it.
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan error, 1)
		go func() {
			_, err := h.CallTool(ctx, "a", "block", nil, conduit.WithCapabilities(), conduit.WithTimeout(time.Hour))
			ended <- err
		}()
		synctest.Wait()
		time.Sleep(2 * DefaultVariantIdle)
		synctest.Wait()
		vs := h.Status()[0].Variants
		require.Len(t, vs, 1)
		assert.Equal(t, 1, vs[0].InFlight)
		assert.Equal(t, 1002, vs[0].PID, "a new process")
		cancel()
		assert.Error(t, <-ended)
		time.Sleep(DefaultVariantIdle)
		synctest.Wait()
		assert.Empty(t, h.Status()[0].Variants)
		assert.Equal(t, 3, f.count())
	})
}

// A variant that crashes is restarted as its server is, by itself: the
// call in flight on it fails at once saying so, the main connection is
// untouched, and the next call waits for the restart.
func TestVariantRestartsAfterACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps", "block"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		r := record(h)
		synctest.Wait()
		pid, _ := seen(t, h, conduit.WithCapabilities("roots"))
		assert.Equal(t, "1001", pid)
		failed := make(chan error, 1)
		go func() {
			_, err := h.CallTool(context.Background(), "a", "block", nil, conduit.WithCapabilities("roots"))
			failed <- err
		}()
		synctest.Wait()
		start := time.Now()
		f.kill() // the newest process: the variant's
		err := <-failed
		assert.Equal(t, time.Duration(0), time.Since(start))
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind)
		assert.Equal(t, `server "a"'s connection declaring roots lost its connection; restarting in 500ms (attempt 1)`, ce.Message)
		synctest.Wait()
		v := h.Status()[0].Variants[0]
		assert.Equal(t, StateRestarting, v.State)
		assert.Equal(t, "conduit: transport: connection to the server lost: EOF", v.Err.Error())

		pid, caps := seen(t, h, conduit.WithCapabilities("roots"))
		assert.Equal(t, 500*ms, time.Since(start))
		assert.Equal(t, "1002", pid)
		assert.JSONEq(t, `{"roots":{"listChanged":true}}`, caps)
		st := h.Status()[0]
		assert.Equal(t, 1000, st.PID)
		assert.Equal(t, 0, st.Restarts)
		assert.Equal(t, 1, st.Variants[0].Restarts)
		for _, s := range r.steps() {
			assert.NotEqual(t, StateRestarting, s.State, "the server's events are its main connection's")
		}

		// Roots changes reach it too: it declared roots.
		require.NoError(t, h.RootsChanged(context.Background(), "a"))
		synctest.Wait()
		assert.Equal(t, []string{"notifications/roots/list_changed", "notifications/roots/list_changed"}, f.notifications())
	})
}

// At most MaxVariants run per server: past it the variant idle longest
// makes room; when each has a call in flight, the call is refused,
// counted, and saying why.
func TestVariantCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps", "block"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{MaxVariants: 2}))
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		ended := make(chan error, 2)
		for _, set := range [][]string{{}, {"sampling"}} {
			go func() {
				_, err := h.CallTool(ctx, "a", "block", nil, conduit.WithCapabilities(set...))
				ended <- err
			}()
		}
		synctest.Wait()
		_, err := h.CallTool(context.Background(), "a", "caps", nil, conduit.WithCapabilities("roots"))
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.ErrorIs(t, err, ErrTooManyVariants)
		assert.Equal(t, conduit.KindRefused, ce.Kind)
		assert.EqualError(t, err, `conduit: tools/call: refused: server "a" already runs 2 connections for other capability sets, each with a call in flight (at most 2: host option MaxVariants); none is left for roots: host: too many capability sets`)
		assert.Equal(t, int64(1), h.Status()[0].VariantsRefused)
		assert.Equal(t, 3, f.count(), "nothing started for it")

		cancel()
		<-ended
		<-ended
		seen(t, h, conduit.WithCapabilities("sampling")) // used last
		pid, _ := seen(t, h, conduit.WithCapabilities("roots"))
		assert.Equal(t, "1003", pid)
		var got []string
		for _, v := range h.Status()[0].Variants {
			got = append(got, strings.Join(v.Capabilities, "+"))
		}
		assert.Equal(t, []string{"roots", "sampling"}, got, "the one idle longest made room")
		assert.Equal(t, int64(1), h.Status()[0].VariantsRefused)
	})
}

// A restart, a change of configuration or the host's Close ends the
// variants with the server's connection; calls start them again.
func TestVariantsEndWithTheirServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		synctest.Wait()
		seen(t, h, conduit.WithCapabilities())
		require.NoError(t, h.Restart("a"))
		synctest.Wait()
		assert.Empty(t, h.Status()[0].Variants)
		f.mu.Lock()
		assert.Len(t, f.live, 1)
		f.mu.Unlock()
		pid, _ := seen(t, h, conduit.WithCapabilities())
		assert.Equal(t, "1003", pid)
		require.NoError(t, h.Close())
		synctest.Wait()
		assert.Empty(t, h.Status()[0].Variants)
		f.mu.Lock()
		assert.Empty(t, f.live)
		f.mu.Unlock()
	})
}

// A variant is a process of its own: a tool that changes its server's
// tools changes that process's, and its tools/list_changed lists them
// into the catalog beside the main connection's (a tools-changed event of
// the server), until it closes. Its counters are the server's; the log
// level set on the server is set on it, running or started later.
func TestVariantToolsCountersAndLogLevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, gatewayLike(Options{}))
		synctest.Wait()
		r := record(h)
		require.NoError(t, h.SetLogLevel(context.Background(), "a", "debug"))
		seen(t, h, conduit.WithCapabilities())
		synctest.Wait()
		assert.Equal(t, []string{"logging/setLevel 1000 debug", "logging/setLevel 1001 debug"}, f.notifications())

		f.setTools("caps", "extra")
		f.notify("notifications/tools/list_changed") // from the newest: the variant
		synctest.Wait()
		var names []string
		for _, tl := range h.Tools() {
			names = append(names, tl.Name)
		}
		assert.Equal(t, []string{"a__caps", "a__extra"}, names)
		r.mu.Lock()
		events := slices.Clone(r.events)
		r.mu.Unlock()
		require.Len(t, events, 2, "the status at Subscribe, then the tools")
		assert.True(t, events[1].ToolsChanged)
		assert.Equal(t, "a", events[1].Server)
		assert.Equal(t, 1, h.Status()[0].Tools, "the main connection's")
		res, err := h.CallTool(context.Background(), "a", "extra", nil, conduit.WithCapabilities())
		require.NoError(t, err)
		assert.Equal(t, "1001", res.Content[0].Text)
		// Only the variant lists it: a call of it with another set, the
		// main's or one no connection runs for, goes there too (direct, the
		// one process that added it would answer), and starts nothing.
		for _, opts := range [][]conduit.CallOption{nil, {conduit.WithCapabilities("sampling")}} {
			res, err := h.CallTool(context.Background(), "a", "extra", nil, opts...)
			require.NoError(t, err)
			assert.Equal(t, "1001", res.Content[0].Text, "%d options", len(opts))
		}
		assert.Equal(t, 2, f.count(), "no connection started for it")

		require.NoError(t, h.SetLogLevel(context.Background(), "a", "info"))
		synctest.Wait()
		assert.Equal(t, []string{"logging/setLevel 1000 debug", "logging/setLevel 1001 debug", "logging/setLevel 1000 info", "logging/setLevel 1001 info"}, f.notifications())
		f.mu.Lock()
		variant := f.live[len(f.live)-1]
		f.mu.Unlock()
		_ = variant.conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":"nobody","result":{}}`))
		synctest.Wait()
		assert.Equal(t, int64(1), h.Status()[0].Stats.UnknownResponses, "the variant's counters are the server's")

		time.Sleep(DefaultVariantIdle)
		synctest.Wait()
		names = nil
		for _, tl := range h.Tools() {
			names = append(names, tl.Name)
		}
		assert.Equal(t, []string{"a__caps"}, names, "closed, its tools are gone")
		assert.Equal(t, int64(1), h.Status()[0].Stats.UnknownResponses, "and stay so once it closed")
	})
}

// A host whose client options narrow what it declares (DeclareOnly) runs
// no variant that declares more: a set comes to what the main connection
// declares of it.
func TestVariantNeverDeclaresMoreThanTheHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"caps"}}
		o := gatewayLike(Options{})
		o.Client.DeclareOnly = []string{"sampling", "roots"}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, o)
		synctest.Wait()
		pid, caps := seen(t, h)
		assert.Equal(t, "1000", pid)
		assert.JSONEq(t, `{"sampling":{},"roots":{"listChanged":true}}`, caps)
		pid, _ = seen(t, h, conduit.WithCapabilities("sampling", "roots", "elicitation.form"))
		assert.Equal(t, "1000", pid, "the main connection's set, elicitation being none of the host's")
		pid, caps = seen(t, h, conduit.WithCapabilities("sampling", "elicitation.url"))
		assert.Equal(t, "1001", pid)
		assert.JSONEq(t, `{"sampling":{}}`, caps)
	})
}
