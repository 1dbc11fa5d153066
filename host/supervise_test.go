package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

const ms = time.Millisecond

// A server that never starts is restarted after 0.5 s, 1 s, 2 s, 4 s (the
// backoff doubles), then parked on its fifth failure: at most 5 starts in
// 60 s is the limit. Five connects, no more.
func TestBackoffDoublesThenParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{fail: errors.New("exec: no such file")}
		// Subscribed before the server starts: its first failure can come
		// before a later Subscribe, which would see it restarting.
		h := fakeHost(t, Config{}, map[string]*fakeTransport{"a": f}, Options{})
		r := record(h)
		h.Apply(legacy(Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []step{
			{At: 0, Server: "a", State: StateStarting},
			{At: 0, Server: "a", State: StateRestarting, Attempt: 1, Retry: 500 * ms},
			{At: 500 * ms, Server: "a", State: StateStarting, Restarts: 1},
			{At: 500 * ms, Server: "a", State: StateRestarting, Restarts: 1, Attempt: 2, Retry: time.Second},
			{At: 1500 * ms, Server: "a", State: StateStarting, Restarts: 2},
			{At: 1500 * ms, Server: "a", State: StateRestarting, Restarts: 2, Attempt: 3, Retry: 2 * time.Second},
			{At: 3500 * ms, Server: "a", State: StateStarting, Restarts: 3},
			{At: 3500 * ms, Server: "a", State: StateRestarting, Restarts: 3, Attempt: 4, Retry: 4 * time.Second},
			{At: 7500 * ms, Server: "a", State: StateStarting, Restarts: 4},
			{At: 7500 * ms, Server: "a", State: StateParked, Restarts: 4, Attempt: 5, Retry: 5 * time.Minute},
		}, r.steps())
		assert.Equal(t, 5, f.count())
		st := h.Status()[0]
		assert.Equal(t, StateParked, st.State)
		assert.EqualError(t, st.Err, "conduit: transport: could not connect: exec: no such file")

		// A parked server's calls fail at once.
		_, err := h.CallTool(context.Background(), "a", "echo", nil)
		assert.EqualError(t, err, `conduit: tools/call: transport: server "a" is parked after 4 restarts: conduit: transport: could not connect: exec: no such file`)
		assert.ErrorIs(t, err, ErrParked)

		// Restart by hand starts it again, with a fresh history.
		f.mu.Lock()
		f.fail = nil
		f.mu.Unlock()
		require.NoError(t, h.Restart("a"))
		synctest.Wait()
		assert.Equal(t, StateReady, h.Status()[0].State)
		assert.Equal(t, 0, h.Status()[0].Restarts)
		assert.Equal(t, 6, f.count())
	})
}

// The backoff is capped by MaxBackoff, and the jitter spreads each wait
// over ±20 %.
func TestBackoffCapAndJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{fail: errors.New("down")}
		jitters := []float64{0, 0.999999, 0.5, 0.5}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{InitialBackoff: time.Second, MaxBackoff: 3 * time.Second, Intensity: 100, Period: time.Hour})}},
			map[string]*fakeTransport{"a": f}, Options{Jitter: func() float64 { j := jitters[0]; jitters = jitters[1:]; return j }})
		r := record(h)
		time.Sleep(8 * time.Second)
		synctest.Wait()
		var waits []time.Duration
		for _, s := range r.steps() {
			if s.State == StateRestarting {
				waits = append(waits, s.Retry.Round(ms))
			}
		}
		// 1 s -20 %, 2 s +20 %, 3 s (capped, no jitter), 3 s.
		assert.Equal(t, []time.Duration{800 * ms, 2400 * ms, 3 * time.Second, 3 * time.Second}, waits)
	})
}

// Starts older than Period no longer count: a server that fails every 4 s
// with a limit of 3 starts in 5 s restarts forever (a 5 s window never
// holds more than 2); with 3 in 10 s it is parked on its third failure.
func TestIntensityWindowSlides(t *testing.T) {
	for _, tt := range []struct {
		period   time.Duration
		connects int
		state    State
	}{
		{period: 5 * time.Second, connects: 16, state: StateRestarting}, // a try at 0, 4, ... 60 s
		{period: 10 * time.Second, connects: 3, state: StateParked},
	} {
		t.Run(tt.period.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeTransport{fail: errors.New("down")}
				h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{InitialBackoff: 4 * time.Second, MaxBackoff: 4 * time.Second, Intensity: 3, Period: tt.period})}},
					map[string]*fakeTransport{"a": f}, Options{})
				time.Sleep(61 * time.Second)
				synctest.Wait()
				assert.Equal(t, tt.connects, f.count())
				assert.Equal(t, tt.state, h.Status()[0].State)
			})
		})
	}
}

// The backoff starts again from its initial value only after the server
// stayed ready for ResetAfter; a server that dies sooner keeps doubling.
func TestBackoffResetsAfterSustainedUptime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"echo"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{Intensity: 100})}}, map[string]*fakeTransport{"a": f}, Options{})
		r := record(h)
		synctest.Wait()
		f.kill() // ready for 0 s
		time.Sleep(10 * time.Second)
		f.kill() // ready for 9.5 s: under a minute
		time.Sleep(59 * time.Second)
		f.kill() // ready for 58 s (from 11 s to 69 s)
		time.Sleep(63 * time.Second)
		// Ready for 61 s (from 71 s to 132 s): the backoff was reset at
		// 131 s. (A kill at 131 s itself would race the reset timer, both
		// due at the same instant.)
		f.kill()
		time.Sleep(time.Second)
		synctest.Wait()
		var waits []time.Duration
		var attempts []int
		for _, s := range r.steps() {
			if s.State == StateRestarting {
				waits, attempts = append(waits, s.Retry), append(attempts, s.Attempt)
			}
		}
		assert.Equal(t, []time.Duration{500 * ms, time.Second, 2 * time.Second, 500 * ms}, waits)
		assert.Equal(t, []int{1, 2, 3, 1}, attempts)
		assert.Equal(t, StateReady, h.Status()[0].State)
	})
}

// A call in flight when its server dies fails at once, with KindTransport
// and a message saying when it restarts; a call to a restarting server
// waits for it (or fails at once under NoWait); the server comes back
// with its tools.
func TestCallsAcrossACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"echo", "block"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, Options{})
		ctx := context.Background()
		synctest.Wait()
		res, err := h.CallTool(ctx, "a", "echo", nil)
		require.NoError(t, err)
		assert.Equal(t, "1000", res.Content[0].Text)
		assert.Equal(t, 1000, h.Status()[0].PID)

		failed := make(chan error, 1)
		go func() {
			_, err := h.CallTool(ctx, "a", "block", nil)
			failed <- err
		}()
		synctest.Wait()
		start := time.Now()
		f.kill()
		err = <-failed
		assert.Equal(t, time.Duration(0), time.Since(start), "the call fails at once")
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind)
		assert.Equal(t, `server "a" lost its connection; restarting in 500ms (attempt 1)`, ce.Message)
		assert.ErrorIs(t, err, conduit.ErrConnectionEnded)
		assert.Empty(t, h.Tools(), "a restarting server's tools are withdrawn")

		_, err = h.CallTool(NoWait(ctx), "a", "echo", nil)
		assert.ErrorIs(t, err, ErrNotReady)
		assert.EqualError(t, err, `conduit: tools/call: transport: server "a" is restarting in 500ms (attempt 1): conduit: transport: connection to the server lost: EOF`)

		// A call with too short a deadline gives up waiting.
		short, cancel := context.WithTimeout(ctx, 100*ms)
		_, err = h.CallTool(short, "a", "echo", nil)
		cancel()
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.EqualError(t, err, `conduit: tools/call: timeout: server "a" was not ready in time: restarting in 400ms (attempt 1): context deadline exceeded`)

		res, err = h.CallTool(ctx, "a", "echo", nil) // waits for the restart
		require.NoError(t, err)
		assert.Equal(t, "1001", res.Content[0].Text)
		assert.Equal(t, 500*ms, time.Since(start))
		assert.Len(t, h.Tools(), 2)
		assert.Equal(t, int64(3), h.Status()[0].Calls)

		_, err = h.CallTool(ctx, "nope", "echo", nil)
		assert.ErrorIs(t, err, ErrUnknownServer)
	})
}

// The catalog holds the tools of ready servers under SERVER__TOOL, is
// refreshed on tools/list_changed, and loses a parked server's tools.
func TestCatalog(t *testing.T) {
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "legacy", true: "modern"}[modern], func(t *testing.T) { testCatalog(t, modern) })
	}
}

// testCatalog is TestCatalog in one era: in the modern one the list
// change arrives on the subscriptions/listen stream.
func testCatalog(t *testing.T, modern bool) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"echo", "sum"}, modern: modern}
		b := &fakeTransport{tools: []string{"echo"}, modern: modern}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": stdio(RestartPolicy{Intensity: 1})}},
			map[string]*fakeTransport{"a": a, "b": b}, Options{})
		synctest.Wait()
		names := func() []string {
			var out []string
			for _, t := range h.Tools() {
				out = append(out, t.Name)
			}
			return out
		}
		assert.Equal(t, []string{"a__echo", "a__sum", "b__echo"}, names())
		server, tool, ok := h.Resolve("a__sum")
		assert.True(t, ok)
		assert.Equal(t, []string{"a", "sum"}, []string{server, tool})

		events, cancel := h.Subscribe()
		defer cancel()
		refreshes := func() (out []string) {
			for {
				synctest.Wait() // the subscriber's goroutine offers the next
				select {
				case ev := <-events:
					if ev.ToolsChanged {
						out = append(out, fmt.Sprintf("%s %s %d", ev.Server, ev.State, ev.Tools))
					}
				default:
					return out
				}
			}
		}
		assert.Empty(t, refreshes(), "the current state only")

		a.setTools("echo", "sum", "more")
		a.notify("notifications/tools/list_changed")
		synctest.Wait()
		assert.Equal(t, []string{"a__echo", "a__sum", "a__more", "b__echo"}, names())
		assert.Equal(t, []string{"a ready 3"}, refreshes(), "a refresh that changed the catalog is an event")
		a.notify("notifications/tools/list_changed")
		synctest.Wait()
		assert.Empty(t, refreshes(), "the same names again change nothing")

		b.mu.Lock()
		b.fail = errors.New("gone")
		b.mu.Unlock()
		b.kill()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, StateParked, h.Status()[1].State)
		assert.Equal(t, []string{"a__echo", "a__sum", "a__more"}, names())
	})
}

// Input requests from every server reach the one handler set, with the
// server's name as ServerID; a server's configured roots answer for it.
func TestInputRequestsCarryTheServerName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{asks: "roots/list", answered: make(chan json.RawMessage, 1)}
		b := &fakeTransport{asks: "roots/list", answered: make(chan json.RawMessage, 1)}
		asked := make(chan string, 2)
		opts := Options{Client: conduit.Options{Handlers: conduit.Handlers{Roots: func(_ context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			asked <- r.ServerID
			return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: "file:///shared"}}}, nil
		}}}}
		bCfg := stdio(RestartPolicy{})
		bCfg.Conduit.Roots = []string{"file:///only/b"}
		fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": bCfg}}, map[string]*fakeTransport{"a": a, "b": b}, opts)
		synctest.Wait()
		assert.Equal(t, "a", <-asked)
		assert.Empty(t, asked)
		assert.JSONEq(t, `{"roots":[{"uri":"file:///shared"}]}`, string(<-a.answered))
		assert.JSONEq(t, `{"roots":[{"uri":"file:///only/b"}]}`, string(<-b.answered))
	})
}

// RootsChanged tells one server, or every ready one, that the roots
// changed: each gets notifications/roots/list_changed and its roots/list
// then gets the new roots. An unknown server is KindUsage.
func TestRootsChangedReachesOneServerOrAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{asks: "roots/list", answered: make(chan json.RawMessage, 4)}
		b := &fakeTransport{asks: "roots/list", answered: make(chan json.RawMessage, 4)}
		var mu sync.Mutex
		root := "file:///v1"
		opts := Options{Client: conduit.Options{Handlers: conduit.Handlers{Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return &conduit.ListRootsResult{Roots: []conduit.Root{{URI: root}}}, nil
		}}}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": a, "b": b}, opts)
		synctest.Wait()
		assert.JSONEq(t, `{"roots":[{"uri":"file:///v1"}]}`, string(<-a.answered))
		assert.JSONEq(t, `{"roots":[{"uri":"file:///v1"}]}`, string(<-b.answered))

		mu.Lock()
		root = "file:///v2"
		mu.Unlock()
		require.NoError(t, h.RootsChanged(context.Background(), ""))
		synctest.Wait()
		assert.Equal(t, []string{"notifications/roots/list_changed"}, a.notifications())
		assert.Equal(t, []string{"notifications/roots/list_changed"}, b.notifications())
		assert.JSONEq(t, `{"roots":[{"uri":"file:///v2"}]}`, string(<-a.answered))
		assert.JSONEq(t, `{"roots":[{"uri":"file:///v2"}]}`, string(<-b.answered))

		require.NoError(t, h.RootsChanged(context.Background(), "b"))
		synctest.Wait()
		assert.Len(t, a.notifications(), 1, "only b is told")
		assert.Len(t, b.notifications(), 2)
		assert.JSONEq(t, `{"roots":[{"uri":"file:///v2"}]}`, string(<-b.answered))

		err := h.RootsChanged(context.Background(), "zzz")
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindUsage, ce.Kind)
		assert.ErrorIs(t, err, ErrUnknownServer)
	})
}

// Apply starts added servers, stops removed ones, restarts changed ones
// and leaves unchanged ones alone (same process); Events delivers each
// change in order.
func TestApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fakes := map[string]*fakeTransport{"keep": {}, "change": {}, "drop": {}, "add": {}, "off": {}}
		h := fakeHost(t, Config{Servers: map[string]Server{"keep": stdio(RestartPolicy{}), "change": stdio(RestartPolicy{}), "drop": stdio(RestartPolicy{})}}, fakes, Options{})
		synctest.Wait()
		r := record(h)
		changed := stdio(RestartPolicy{Intensity: 9})
		off := stdio(RestartPolicy{})
		off.Conduit.Disabled = true
		h.Apply(legacy(Config{Servers: map[string]Server{"keep": stdio(RestartPolicy{}), "change": changed, "add": stdio(RestartPolicy{}), "off": off}}))
		synctest.Wait()
		steps := r.steps()
		require.Len(t, steps, 9)
		assert.Equal(t, []step{
			{Server: "change", State: StateReady, PID: 1000},
			{Server: "drop", State: StateReady, PID: 1000},
			{Server: "keep", State: StateReady, PID: 1000},
			{Server: "drop", State: StateStopped},
			{Server: "add", State: StateStarting},
			{Server: "change", State: StateStarting},
			{Server: "off", State: StateStopped},
		}, steps[:7])
		// The two start concurrently: either may be ready first.
		assert.ElementsMatch(t, []step{
			{Server: "add", State: StateReady, PID: 1000},
			{Server: "change", State: StateReady, PID: 1001},
		}, steps[7:])
		assert.Equal(t, 1, fakes["keep"].count())
		assert.Equal(t, 0, fakes["off"].count())
		var states []State
		for _, st := range h.Status() {
			states = append(states, st.State)
		}
		assert.Equal(t, []State{StateReady, StateReady, StateReady, StateStopped}, states) // add, change, keep, off
		require.NoError(t, h.Close())
		<-r.done
		assert.Equal(t, []State{StateReady, StateStopped}, r.states("keep"))
	})
}

// With a keep-alive, a server that stops answering is restarted once
// Failures pings in a row have failed (each bounded by half the interval);
// one that answers is left alone.
func TestPingKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deaf, fine := &fakeTransport{}, &fakeTransport{}
		ping := stdio(RestartPolicy{})
		ping.Conduit.Ping = PingPolicy{Interval: 10 * time.Second, Failures: 2}
		h := fakeHost(t, Config{Servers: map[string]Server{"deaf": ping, "fine": ping}}, map[string]*fakeTransport{"deaf": deaf, "fine": fine}, Options{})
		r := record(h)
		synctest.Wait()
		deaf.mu.Lock()
		deaf.deaf = true // pings at 10 s and 20 s time out at 15 s and 25 s
		deaf.mu.Unlock()
		time.Sleep(100 * time.Second)
		synctest.Wait()
		var restarts []step
		for _, s := range r.steps() {
			if s.State == StateRestarting {
				restarts = append(restarts, s)
			}
		}
		require.NotEmpty(t, restarts)
		assert.Equal(t, step{At: 25 * time.Second, Server: "deaf", State: StateRestarting, Attempt: 1, Retry: 500 * ms}, restarts[0])
		for _, s := range restarts {
			assert.Equal(t, "deaf", s.Server)
		}
		assert.Equal(t, 1, fine.count())
		var failed error
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, ev := range r.events {
			if ev.State == StateRestarting {
				failed = ev.Err
				break
			}
		}
		assert.EqualError(t, failed, "2 pings in a row failed: conduit: ping: timeout: no response within the timeout of 5s: active 5s, paused for input 0s")
	})
}

// Resources and prompts are listed live from the ready servers that offer
// them, prompts namespaced as tools are.
func TestResourcesAndPrompts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"echo"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": a}, Options{Separator: "."})
		synctest.Wait()
		res, err := h.Resources(context.Background())
		require.NoError(t, err)
		assert.Equal(t, []Resource{{Resource: conduit.Resource{URI: "file:///a.txt", Name: "a"}, Server: "a"}}, res)
		prompts, err := h.Prompts(context.Background())
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		assert.Equal(t, "a.greet", prompts[0].Name)
		assert.Equal(t, "greet", prompts[0].ServerPrompt)
		assert.Equal(t, "a.echo", h.Tools()[0].Name)
	})
}

// tools/list_changed notifications that arrive while a tools/list runs
// are coalesced into one more tools/list, and never block the supervisor.
func TestListChangedBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"one"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": a}, Options{})
		synctest.Wait()
		a.setTools("one", "two")
		a.mu.Lock()
		a.listDelay = time.Second // the next notifications arrive during the first tools/list
		a.mu.Unlock()
		for range 3 {
			a.notify("notifications/tools/list_changed")
			synctest.Wait()
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		assert.Len(t, h.Tools(), 2)
		a.mu.Lock()
		assert.Equal(t, 3, a.lists, "at start, on the first notification, once more for the two during it")
		a.mu.Unlock()
		a.kill() // the supervisor still watches its server
		synctest.Wait()
		assert.Equal(t, StateRestarting, h.Status()[0].State)
	})
}

func TestRestartsText(t *testing.T) {
	assert.Equal(t, "0 restarts", RestartsText(0))
	assert.Equal(t, "1 restart", RestartsText(1))
	assert.Equal(t, "5 restarts", RestartsText(5))
}

// The Host's transports get its message limit, 0 keeping theirs.
func TestDefaultTransportTakesTheMessageLimit(t *testing.T) {
	cmd := defaultTransport(Server{Command: "srv"}, nil, 1<<20).(*transport.Command)
	assert.Equal(t, 1<<20, cmd.MaxMessageBytes)
	web := defaultTransport(Server{URL: "http://127.0.0.1:1/mcp"}, nil, 1<<20).(*transport.HTTP)
	assert.Equal(t, 1<<20, web.MaxBodyBytes)
	assert.Equal(t, 1<<20, web.MaxEventBytes)
	assert.Zero(t, defaultTransport(Server{Command: "srv"}, nil, 0).(*transport.Command).MaxMessageBytes)
}

// Close withdraws every server's tools with its state: a closed host
// lists no tools, its stopped servers count none.
func TestCloseWithdrawsTheCatalog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"echo"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": a}, Options{})
		synctest.Wait()
		require.Len(t, h.Tools(), 1)
		require.NoError(t, h.Close())
		assert.Empty(t, h.Tools())
		st := h.Status()[0]
		assert.Equal(t, StateStopped, st.State)
		assert.Equal(t, 0, st.Tools)
		_, _, ok := h.Resolve("a__echo")
		assert.False(t, ok)
	})
}

// Two servers' tools can take one namespaced name ("a" + "b__c", "a__b" +
// "c"): Resolve refuses it, as Config.Split does, instead of routing the
// call to whichever server sorts first.
func TestResolveRefusesAnAmbiguousName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"b__c", "d"}}
		ab := &fakeTransport{tools: []string{"c"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "a__b": stdio(RestartPolicy{})}},
			map[string]*fakeTransport{"a": a, "a__b": ab}, Options{})
		synctest.Wait()
		server, tool, ok := h.Resolve("a__b__c")
		assert.Equal(t, []any{"", "", false}, []any{server, tool, ok})
		server, tool, ok = h.Resolve("a__d")
		assert.Equal(t, []any{"a", "d", true}, []any{server, tool, ok})
	})
}

// A listing after tools/list_changed replaces the server's tools even when
// it is empty; a failed one keeps the tools listed before and says so in
// the status, until a listing succeeds.
func TestCatalogFollowsEveryListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"echo", "sum"}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": a}, Options{})
		synctest.Wait()
		require.Len(t, h.Tools(), 2)

		a.mu.Lock()
		a.listFails = true
		a.mu.Unlock()
		a.notify("notifications/tools/list_changed")
		synctest.Wait()
		assert.Len(t, h.Tools(), 2, "a failed listing keeps the old tools")
		st := h.Status()[0]
		assert.Equal(t, 2, st.Tools)
		require.Error(t, st.ToolsErr)
		assert.Contains(t, st.ToolsErr.Error(), "listing broke")

		a.mu.Lock()
		a.listFails = false
		a.tools = nil
		a.mu.Unlock()
		a.notify("notifications/tools/list_changed")
		synctest.Wait()
		assert.Empty(t, h.Tools(), "an empty listing empties the catalog")
		_, _, ok := h.Resolve("a__echo")
		assert.False(t, ok)
		st = h.Status()[0]
		assert.Equal(t, 0, st.Tools)
		assert.NoError(t, st.ToolsErr)
	})
}

// A changed configuration that fails to build (its transport hook errors)
// parks the server but remembers the retiring process: the next Apply
// starts a new one only once the old one has closed, never beside it.
func TestFailedRelaunchKeepsTheRetiringProcess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{closeDelay: 5 * time.Second}
		opts := Options{Jitter: func() float64 { return 0.5 }, Transport: func(_ string, s Server) (transport.Transport, error) {
			if slices.Contains(s.Args, "broken") {
				return nil, errors.New("cannot build")
			}
			return f, nil
		}}
		h, err := New(legacy(Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}), opts)
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		synctest.Wait()
		require.Equal(t, StateReady, h.Status()[0].State)

		broken := stdio(RestartPolicy{})
		broken.Args = []string{"broken"}
		h.Apply(legacy(Config{Servers: map[string]Server{"a": broken}}))
		synctest.Wait()
		st := h.Status()[0]
		assert.Equal(t, StateParked, st.State)
		assert.EqualError(t, st.Err, "cannot build")

		fixed := stdio(RestartPolicy{})
		fixed.Args = []string{"fixed"}
		h.Apply(legacy(Config{Servers: map[string]Server{"a": fixed}}))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 1, f.count(), "the old process is still closing: no second one yet")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, f.count())
		assert.Equal(t, StateReady, h.Status()[0].State)
	})
}

// An event carries the server's counters at that moment: a ready one the
// number of tools it offered, a stopped one the calls made through it.
func TestEventsCarryTheCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeTransport{tools: []string{"echo", "sum"}}
		// Subscribed before the server is configured: a subscription made
		// after its start may begin at its "ready" snapshot.
		h := fakeHost(t, Config{}, map[string]*fakeTransport{"a": a}, Options{})
		events, cancel := h.Subscribe()
		defer cancel()
		h.Apply(Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}})
		synctest.Wait()
		_, err := h.CallTool(t.Context(), "a", "echo", nil)
		require.NoError(t, err)
		h.Apply(Config{})
		synctest.Wait()
		var got []string
		for range 3 {
			ev := <-events
			got = append(got, fmt.Sprint(ev.State, " tools=", ev.Tools, " calls=", ev.Calls))
		}
		assert.Equal(t, []string{"starting tools=0 calls=0", "ready tools=2 calls=0", "stopped tools=0 calls=1"}, got)
	})
}

// A parked server is tried again after Revive (5 min) with a fresh
// backoff, so that an outage heals by itself; "never" leaves it parked.
func TestParkedServerRevives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{fail: errors.New("connection refused")}
		never := &fakeTransport{fail: errors.New("connection refused")}
		h := fakeHost(t, Config{}, map[string]*fakeTransport{"a": f, "never": never}, Options{})
		r := record(h)
		h.Apply(legacy(Config{Servers: map[string]Server{
			"a":     stdio(RestartPolicy{Intensity: 2}),
			"never": stdio(RestartPolicy{Intensity: 1, Revive: -1}),
		}}))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, StateParked, h.Status()[0].State)
		assert.Equal(t, 500*ms+5*time.Minute, h.Status()[0].NextRetry.Sub(r.start))
		assert.True(t, h.Status()[1].NextRetry.IsZero(), "never revives: no next try shown")
		f.mu.Lock()
		f.fail = nil // the service is back
		f.mu.Unlock()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		var steps []step
		for _, s := range r.steps() {
			if s.Server == "a" {
				steps = append(steps, s)
			}
		}
		assert.Equal(t, []step{
			{At: 0, Server: "a", State: StateStarting},
			{At: 0, Server: "a", State: StateRestarting, Attempt: 1, Retry: 500 * ms},
			{At: 500 * ms, Server: "a", State: StateStarting, Restarts: 1},
			{At: 500 * ms, Server: "a", State: StateParked, Restarts: 1, Attempt: 2, Retry: 5 * time.Minute},
			{At: 500*ms + 5*time.Minute, Server: "a", State: StateStarting, Restarts: 2},
			{At: 500*ms + 5*time.Minute, Server: "a", State: StateReady, Restarts: 2, PID: 1002},
		}, steps)
		assert.Equal(t, StateParked, h.Status()[1].State)
		assert.Equal(t, 1, never.count())
	})
}

// A reload (Apply with the same configuration) revives a parked server
// at once; a ready one keeps its process.
func TestApplyRevivesAParkedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{fail: errors.New("connection refused")}
		ok := &fakeTransport{}
		cfg := Config{Servers: map[string]Server{"a": stdio(RestartPolicy{Intensity: 1}), "ok": stdio(RestartPolicy{})}}
		h := fakeHost(t, cfg, map[string]*fakeTransport{"a": f, "ok": ok}, Options{})
		synctest.Wait()
		require.Equal(t, StateParked, h.Status()[0].State)
		f.mu.Lock()
		f.fail = nil
		f.mu.Unlock()
		h.Apply(legacy(Config{Servers: map[string]Server{"a": stdio(RestartPolicy{Intensity: 1}), "ok": stdio(RestartPolicy{})}}))
		synctest.Wait()
		assert.Equal(t, StateReady, h.Status()[0].State)
		assert.Equal(t, 2, f.count())
		assert.Equal(t, 1, ok.count())
	})
}

// A request that fails alone while its connection goes on (a POST refused
// or reset) fails the call at once, as it is: only a call whose
// connection ended waits (a grace of 1 s) to say how its server ended.
func TestARequestThatFailsAloneIsNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeTransport{tools: []string{"echo", "flaky"}, alone: "flaky"}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{})}}, map[string]*fakeTransport{"a": f}, Options{})
		synctest.Wait()
		start := time.Now()
		_, err := h.CallTool(t.Context(), "a", "flaky", nil)
		assert.Equal(t, time.Duration(0), time.Since(start), "not held for the grace of a dying connection")
		assert.EqualError(t, err, "conduit: tools/call: transport: the request failed: connection reset by peer")
		assert.NotErrorIs(t, err, conduit.ErrConnectionEnded)
		res, err := h.CallTool(t.Context(), "a", "echo", nil)
		require.NoError(t, err, "the connection goes on")
		assert.Equal(t, "1000", res.Content[0].Text)
	})
}

// A start has a deadline: a server whose handshake never completes fails
// once StartTimeout has passed, and is restarted under its policy (it held
// a call to a healthy neighbour for over 200 s before).
func TestStartTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mute := &fakeTransport{mute: true}
		cfg := stdio(RestartPolicy{})
		cfg.Conduit.StartTimeout = 5 * time.Second
		h := fakeHost(t, Config{}, map[string]*fakeTransport{"a": mute}, Options{})
		r := record(h)
		h.Apply(legacy(Config{Servers: map[string]Server{"a": cfg}}))
		time.Sleep(5200 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []step{
			{At: 0, Server: "a", State: StateStarting},
			{At: 5 * time.Second, Server: "a", State: StateRestarting, Attempt: 1, Retry: 500 * ms},
		}, r.steps())
		assert.ErrorContains(t, h.Status()[0].Err, "did not finish its handshake and first tools/list within 5s (startTimeout)")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, 2, mute.count(), "restarted under its policy")
	})
}

// Close's final stopped events are delivered before Close returns: a
// subscriber that cancels right after Close still has read every one.
func TestCloseDeliversStoppedBeforeReturning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fakes := map[string]*fakeTransport{"a": {tools: []string{"echo"}}, "b": {tools: []string{"echo"}}}
		h := fakeHost(t, Config{Servers: map[string]Server{"a": stdio(RestartPolicy{}), "b": stdio(RestartPolicy{})}}, fakes, Options{})
		synctest.Wait()
		events, cancel := h.Subscribe()
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range events {
				got = append(got, ev.Server+" "+string(ev.State))
			}
		}()
		require.NoError(t, h.Close())
		cancel()
		<-done
		assert.Equal(t, []string{"a ready", "b ready", "a stopped", "b stopped"}, got)
	})
}
