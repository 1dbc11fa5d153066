package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/load"
)

// sampler answers every sampling request after delay.
func sampler(delay load.Delay) conduit.Handlers {
	return conduit.Handlers{Sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		if err := delay.Wait(ctx); err != nil {
			return nil, err
		}
		return &conduit.CreateMessageResult{Role: "assistant", Content: conduit.Text("ok"), Model: "m"}, nil
	}}
}

// runDemo runs cfg against a fresh demo server, counting the audit records.
func runDemo(t *testing.T, cfg load.Config) (*load.Report, int64) {
	t.Helper()
	srv := demoserver.New()
	defer func() { require.NoError(t, srv.Close()) }()
	var audited atomic.Int64
	cfg.Transport = srv
	cfg.Options.Audit = func(conduit.AuditRecord) { audited.Add(1) }
	rep, err := load.Run(context.Background(), cfg)
	require.NoError(t, err)
	return rep, audited.Load()
}

// A fixed delay in the handler is the whole latency of a call in a bubble
// (nothing else takes time), and the whole of its paused-for-input time.
func TestFixedDelayIsTheLatency(t *testing.T) {
	for _, era := range []conduit.Era{conduit.EraModern, conduit.EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rep, audited := runDemo(t, load.Config{
					Options:  conduit.Options{Era: era, Handlers: sampler(load.Fixed(2 * time.Second))},
					Sessions: 2, Concurrency: 3, Calls: 30,
					Mix: []load.Call{{Tool: "summarise"}},
				})
				assert.Equal(t, int64(30), rep.Calls)
				assert.Equal(t, int64(30), rep.OK)
				assert.Equal(t, map[string]int64{"ok": 30}, rep.Outcomes)
				assert.Equal(t, int64(30), audited)
				assert.Equal(t, map[string]map[string]int64{"sampling/createMessage": {"answered": 30}}, rep.Input)
				assert.Equal(t, load.Millis(2*time.Second), rep.Latency.Min)
				// HDR: 3 significant digits.
				assert.InDelta(t, float64(2*time.Second), float64(rep.Latency.Max), float64(2*time.Millisecond))
				assert.InDelta(t, float64(2*time.Second), float64(rep.Latency.P99), float64(2*time.Millisecond))
				// 30 calls, 6 at a time, 2 s each: 10 s.
				assert.Equal(t, load.Millis(10*time.Second), rep.Elapsed)
				assert.Equal(t, 3.0, rep.Throughput)
				assert.Equal(t, "closed loop", rep.Shape.Mode)
				assert.Contains(t, rep.LatencyFrom, "send time (closed loop")
				if era == conduit.EraModern {
					// Modern input belongs to its call.
					assert.Equal(t, load.TimeSplit{PausedForInput: load.Millis(60 * time.Second)}, rep.Time)
				} else {
					// Three legacy calls in flight per session: a request
					// is tied to its call only when it came while that call
					// was alone; the others are unattributed.
					assert.Equal(t, load.Millis(60*time.Second), rep.Time.Active+rep.Time.PausedForInput)
					assert.Equal(t, load.Millis(60*time.Second), rep.Time.UnattributedInput+rep.Time.PausedForInput)
					assert.Positive(t, rep.Time.UnattributedInput)
				}
				// One bar of the histogram holds every call, around 2 s.
				require.Len(t, rep.Histogram, 1)
				assert.Equal(t, int64(30), rep.Histogram[0].Count)
				assert.LessOrEqual(t, rep.Histogram[0].From, load.Millis(2*time.Second))
				assert.Greater(t, rep.Histogram[0].UpTo, load.Millis(2*time.Second))
				require.Len(t, rep.Timeline, 11)
				var total int64
				for _, s := range rep.Timeline {
					total += s.Calls
				}
				assert.Equal(t, int64(30), total)
				assert.Equal(t, int64(6), rep.Timeline[2].Calls) // the first six end at 2 s
			})
		})
	}
}

// With a rate, a call that waits for a free caller counts its wait: one
// caller, 1 s calls, 10 calls/s intended.
func TestRateMeasuresFromIntendedSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Calls:   5, Rate: 10,
			Mix: []load.Call{{Tool: "summarise"}},
		})
		assert.Equal(t, int64(5), rep.Calls)
		assert.Equal(t, "open loop", rep.Shape.Mode)
		assert.Contains(t, rep.LatencyFrom, "intended send time")
		assert.Contains(t, rep.LatencyFrom, "coordinated omission")
		// Intended at 0, 0.1… 0.4 s; sent at 0, 1… 4 s; ended at 1… 5 s.
		assert.Equal(t, load.Millis(time.Second), rep.Latency.Min)
		assert.InDelta(t, float64(4600*time.Millisecond), float64(rep.Latency.Max), float64(5*time.Millisecond))
		// Active + paused is the time from the actual send: 1 s each.
		assert.Equal(t, load.Millis(5*time.Second), rep.Time.PausedForInput)
	})
}

// A warm-up is run but not counted; Duration stops starting calls.
func TestWarmupAndDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, audited := runDemo(t, load.Config{
			Options:  conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Warmup:   2500 * time.Millisecond,
			Duration: 3 * time.Second,
			Mix:      []load.Call{{Tool: "summarise"}},
		})
		// Sent at 0, 1, 2 s (warm-up), 3, 4, 5 s (counted); not at 6 s.
		assert.Equal(t, int64(3), rep.Calls)
		assert.Equal(t, int64(6), audited)
		assert.Equal(t, int64(6), rep.Input["sampling/createMessage"]["answered"])
		assert.Equal(t, load.Millis(3500*time.Millisecond), rep.Elapsed) // 2.5 s → 6 s
	})
}

// Input not tied to one call (legacy, two calls in flight on a session)
// counts, like the rest of the time split, from the end of the warm-up:
// the warm-up's input is not the counted calls'.
func TestWarmupInputIsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, audited := runDemo(t, load.Config{
			Options:     conduit.Options{Era: conduit.EraLegacy, Handlers: sampler(load.Fixed(time.Second))},
			Concurrency: 2,
			Warmup:      2500 * time.Millisecond,
			Duration:    3 * time.Second,
			Mix:         []load.Call{{Tool: "summarise"}},
		})
		// Two at a time, sent at 0, 1, 2 s (warm-up), 3, 4, 5 s (counted).
		assert.Equal(t, int64(6), rep.Calls)
		assert.Equal(t, int64(12), audited)
		assert.Equal(t, load.Millis(6*time.Second), rep.Time.Active+rep.Time.PausedForInput)
		assert.Equal(t, load.Millis(6*time.Second), rep.Time.UnattributedInput+rep.Time.PausedForInput)
	})
}

// The busy guard bites unless UnlimitedInput lifts it.
func TestUnlimitedInput(t *testing.T) {
	cfg := load.Config{
		Options:  conduit.Options{Era: conduit.EraLegacy, MaxServerRequests: 1, Handlers: sampler(load.Fixed(time.Second))},
		Sessions: 1, Concurrency: 4, Calls: 4,
		Mix: []load.Call{{Tool: "summarise"}},
	}
	synctest.Test(t, func(t *testing.T) {
		rep, audited := runDemo(t, cfg)
		assert.Equal(t, int64(4), rep.Calls)
		assert.Equal(t, int64(4), audited)
		assert.Equal(t, map[string]int64{"answered": 1, "busy": 3}, rep.Input["sampling/createMessage"])
		assert.Equal(t, int64(3), rep.Stats.Busy)
	})
	cfg.UnlimitedInput = true
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, cfg)
		assert.Equal(t, map[string]int64{"answered": 4}, rep.Input["sampling/createMessage"])
		assert.Zero(t, rep.Stats.Busy)
		assert.True(t, rep.Shape.UnlimitedInput)
	})
}

// Without a delay, the input budget (10/s, bursts of 20) bites: a guard's
// refusal fails the modern call.
func TestInputBudgetBites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, audited := runDemo(t, load.Config{
			Options:  conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Delay{})},
			Sessions: 1, Concurrency: 1, Calls: 25,
			Mix: []load.Call{{Tool: "summarise"}},
		})
		assert.Equal(t, map[string]int64{"ok": 20, "refused -1": 5}, rep.Outcomes)
		assert.Equal(t, map[string]int64{"answered": 20, "rate_limited": 5}, rep.Input["sampling/createMessage"])
		assert.Equal(t, int64(5), rep.RateLimited)
		assert.Equal(t, int64(25), audited)
	})
}

// A mix calls each tool by weight; the outcomes say how each call ended.
func TestMixAndOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sampler(load.Delay{})
		rep, _ := runDemo(t, load.Config{
			Options:  conduit.Options{Era: conduit.EraModern, Handlers: h},
			Sessions: 1, Concurrency: 2, Calls: 40, UnlimitedInput: true,
			Mix: []load.Call{{Tool: "summarise", Weight: 1}, {Tool: "no_such_tool", Weight: 1}},
		})
		assert.Equal(t, int64(40), rep.Calls)
		assert.Equal(t, int64(40), rep.Tools["summarise"]+rep.Tools["no_such_tool"])
		assert.Equal(t, rep.Tools["summarise"], rep.OK)
		assert.Equal(t, rep.Tools["no_such_tool"], rep.Failed)
		assert.Equal(t, map[string]int64{"ok": rep.OK, "rpc -32602": rep.Failed}, rep.Outcomes)
		assert.Positive(t, rep.OK)
		assert.Positive(t, rep.Failed)
		// What the failures said, not only how many there were.
		require.Len(t, rep.Messages, 1)
		require.Len(t, rep.Messages["rpc -32602"], 1)
		msg := rep.Messages["rpc -32602"][0]
		assert.Equal(t, rep.Failed, msg.Count)
		assert.Contains(t, msg.Message, "tools/call: rpc: jsonrpc error -32602: ")
		var text bytes.Buffer
		require.NoError(t, rep.WriteText(&text))
		assert.Contains(t, text.String(), fmt.Sprintf("            rpc -32602 %d × %s\n", rep.Failed, msg.Message))
		// The latency of ok and failed calls apart.
		require.NotNil(t, rep.LatencyOK)
		require.NotNil(t, rep.LatencyFailed)
		assert.Contains(t, text.String(), fmt.Sprintf("            failed  min %s  p50 %s", rep.LatencyFailed.Min, rep.LatencyFailed.P50))
		assert.Contains(t, text.String(), fmt.Sprintf("            ok      min %s  p50 %s", rep.LatencyOK.Min, rep.LatencyOK.P50))
		assert.Equal(t, rep.Failed, rep.PerTool["no_such_tool"].Failed)
		assert.Equal(t, rep.OK, rep.PerTool["summarise"].OK)
		var failedBars int64
		for _, b := range rep.FailedHistogram {
			failedBars += b.Count
		}
		assert.Equal(t, rep.Failed, failedBars)
	})
}

func TestRunConfigErrors(t *testing.T) {
	srv := demoserver.New()
	defer srv.Close()
	for name, cfg := range map[string]load.Config{
		"no transport":    {Calls: 1, Mix: []load.Call{{Tool: "x"}}},
		"no end":          {Transport: srv, Mix: []load.Call{{Tool: "x"}}},
		"no tool":         {Transport: srv, Calls: 1},
		"negative rate":   {Transport: srv, Calls: 1, Rate: -1, Mix: []load.Call{{Tool: "x"}}},
		"args not object": {Transport: srv, Calls: 1, Mix: []load.Call{{Tool: "x", Args: json.RawMessage(`[1]`)}}},
		"empty pick":      {Transport: srv, Calls: 1, Mix: []load.Call{{Tool: "x", Args: json.RawMessage(`{"a": {"$pick": []}}`)}}},
		"negative weight": {Transport: srv, Calls: 1, Mix: []load.Call{{Tool: "x", Weight: -1}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := load.Run(context.Background(), cfg)
			assert.ErrorIs(t, err, load.ErrConfig)
		})
	}
}

// A call that outlives MaxTotalTimeout is a timeout; its time split is the
// one its error carries.
func TestTimeoutOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, MaxTotalTimeout: 3 * time.Second,
				Handlers: sampler(load.Fixed(5 * time.Second))},
			Calls: 2,
			Mix:   []load.Call{{Tool: "summarise"}},
		})
		assert.Equal(t, map[string]int64{"timeout": 2}, rep.Outcomes)
		assert.Equal(t, load.Millis(3*time.Second), rep.Latency.Max)
		assert.Equal(t, load.TimeSplit{PausedForInput: load.Millis(6 * time.Second)}, rep.Time)
	})
}

// When the run's context ends, the calls in flight are cancelled and the
// report says it was interrupted.
func TestInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := demoserver.New()
		defer func() { require.NoError(t, srv.Close()) }()
		ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
		defer cancel()
		var final load.Progress
		rep, err := load.Run(ctx, load.Config{
			Transport: srv,
			Options:   conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Duration:  time.Minute,
			Mix:       []load.Call{{Tool: "summarise"}},
			Progress:  func(p load.Progress) { final = p },
		})
		require.NoError(t, err)
		assert.True(t, rep.Interrupted)
		assert.Equal(t, map[string]int64{"ok": 3, "cancelled": 1}, rep.Outcomes)
		// The last window is the third second: one call, 1 s (to the window's 2 digits).
		assert.Equal(t, load.Progress{Elapsed: 3500 * time.Millisecond, Total: time.Minute, Calls: 4, Errors: 1, Rate: 4 / 3.5, P99: load.Millis(time.Second),
			RateNow: 1, P99Now: load.Millis(1003519 * time.Microsecond), Final: true}, final)
	})
}
