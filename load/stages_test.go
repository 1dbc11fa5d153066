package load_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/load"
)

func TestParseStages(t *testing.T) {
	st, err := load.ParseStages("30s:50,5m:500, 30s:0")
	require.NoError(t, err)
	assert.Equal(t, []load.Stage{{30 * time.Second, 50}, {5 * time.Minute, 500}, {30 * time.Second, 0}}, st)
	for _, bad := range []string{"", "30s", "x:5", "30s:x", "0s:5", "30s:-1", "1s:NaN"} {
		_, err := load.ParseStages(bad)
		assert.Error(t, err, bad)
	}
}

// An open-loop ramp from 0 to 40 calls/s over 4 s sends the calls its rate
// integrates to, second by second (5, 15, 25, 35), then holds 40/s; the
// report and the timeline name the stages.
func TestStagesRampTheRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options:     conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Delay{})},
			Concurrency: 4, UnlimitedInput: true,
			Stages: []load.Stage{{4 * time.Second, 40}, {2 * time.Second, 40}},
			Mix:    []load.Call{{Tool: "summarise"}},
		})
		assert.Equal(t, "open loop", rep.Shape.Mode)
		assert.Equal(t, load.Millis(6*time.Second), rep.Shape.Duration)
		var got []int64
		var stages []int
		for _, s := range rep.Timeline {
			got, stages = append(got, s.Calls), append(stages, s.Stage)
		}
		assert.Equal(t, []int64{5, 15, 25, 35, 40, 40}, got)
		assert.Equal(t, []int{1, 1, 1, 1, 2, 2}, stages)
		assert.Equal(t, []load.StageReport{
			{Stage: 1, From: 0, To: 4, StartTarget: 0, Target: 40, Unit: "calls/s"},
			{Stage: 2, From: 4, To: 6, StartTarget: 40, Target: 40, Unit: "calls/s"},
		}, rep.Stages)
	})
}

// Through a ramp, a call that waits for the only caller still counts its
// wait: 1 s calls intended at 2 then 4… per second cannot keep up, and the
// latency grows from the intended send time.
func TestStagesKeepCoordinatedOmissionCorrected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Stages:  []load.Stage{{2 * time.Second, 4}}, UnlimitedInput: true,
			Mix: []load.Call{{Tool: "summarise"}},
		})
		// 4 calls intended at 0, √0.5·… : sendTime(n) = sqrt(n) s; they
		// are sent at 0, 1, 2, 3 s and end at 1, 2, 3, 4 s.
		assert.Equal(t, int64(4), rep.Calls)
		assert.Equal(t, load.Millis(time.Second), rep.Latency.Min)
		// The last, intended at √3 s, ends at 4 s.
		want := 4*time.Second - 1732050807*time.Nanosecond // √3 s
		assert.InDelta(t, float64(want), float64(rep.Latency.Max), float64(time.Millisecond))
		assert.Contains(t, rep.LatencyFrom, "coordinated omission")
	})
}

// A ramp of callers (closed loop): 0 → 2 callers over 2 s, then 2 for 2 s;
// each 1 s call. Caller 0 starts at once, caller 1 once the target passes 1.
func TestStagesRampTheCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rep, _ := runDemo(t, load.Config{
			Options: conduit.Options{Era: conduit.EraModern, Handlers: sampler(load.Fixed(time.Second))},
			Stages:  []load.Stage{{2 * time.Second, 2}, {2 * time.Second, 2}}, RampCallers: true, UnlimitedInput: true,
			Mix: []load.Call{{Tool: "summarise"}},
		})
		assert.Equal(t, "closed loop", rep.Shape.Mode)
		assert.Equal(t, 2, rep.Shape.Concurrency)
		// Caller 0 at 0.1 s (first poll after 0), 1.1, 2.1, 3.1; caller 1
		// at 1.1 (target 1.1 > 1), 2.1, 3.1.
		assert.Equal(t, int64(7), rep.Calls)
		require.Len(t, rep.Stages, 2)
		assert.Equal(t, "callers per session", rep.Stages[0].Unit)
	})
}

func TestStagesConfigErrors(t *testing.T) {
	for name, cfg := range map[string]load.Config{
		"with rate":            {Rate: 5, Stages: []load.Stage{{time.Second, 1}}},
		"with duration":        {Duration: time.Second, Stages: []load.Stage{{time.Second, 1}}},
		"warm-up past the end": {Warmup: time.Second, Stages: []load.Stage{{time.Second, 1}}},
		"callers without":      {Calls: 1, RampCallers: true},
		"zero stage":           {Stages: []load.Stage{{0, 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := demoserver.New()
			defer srv.Close()
			cfg.Transport, cfg.Mix = srv, []load.Call{{Tool: "x"}}
			_, err := load.Run(t.Context(), cfg)
			assert.ErrorIs(t, err, load.ErrConfig)
		})
	}
}
