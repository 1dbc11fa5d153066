package restart

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The policy's numbers, without actors or timers: the backoff doubles up to
// its cap, jittered by ±20 %, and the failure after Intensity starts within
// Period parks.
func TestRestartsBackoffDoublesCapsAndParks(t *testing.T) {
	jitter := 0.5
	r := NewRestarts(Policy{InitialBackoff: 500 * ms, MaxBackoff: 1500 * ms, Intensity: 4, Period: time.Minute}, func() float64 { return jitter })
	t0 := time.Unix(0, 0)
	type got struct {
		Wait    time.Duration
		Park    bool
		Attempt int
	}
	var out []got
	now := t0
	for range 4 {
		r.Started(now)
		w, p := r.Failed(now)
		out = append(out, got{w, p, r.Attempt()})
		now = now.Add(w)
	}
	assert.Equal(t, []got{{500 * ms, false, 1}, {time.Second, false, 2}, {1500 * ms, false, 3}, {0, true, 4}}, out)

	// Starts older than Period no longer count; Reset restarts the backoff;
	// jitter spreads it over ±20 %.
	r.Reset()
	jitter = 0
	w, p := r.Failed(now.Add(time.Minute))
	assert.Equal(t, 400*ms, w)
	assert.False(t, p)
	assert.Equal(t, 1, r.Attempt())
}

func TestPolicyDefaults(t *testing.T) {
	if got, want := (Policy{}).WithDefaults(), (Policy{InitialBackoff: 500 * ms, MaxBackoff: 30 * time.Second, Intensity: 5, Period: time.Minute, ResetAfter: time.Minute, Revive: 5 * time.Minute}); got != want {
		t.Errorf("defaults = %+v, want %+v", got, want)
	}
	// A max below the initial backoff is raised to it; a negative Revive
	// (never) is kept.
	p := Policy{InitialBackoff: 2 * time.Second, MaxBackoff: time.Second, Revive: -1}.WithDefaults()
	if p.MaxBackoff != 2*time.Second || p.Revive != -1 {
		t.Errorf("WithDefaults = %+v", p)
	}
}
