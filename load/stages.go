package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Stage is one stage of a ramp: over Duration, the target moves linearly
// from the previous stage's (0 before the first) to Target. The target is
// calls per second in all (open loop), or callers per session with
// Config.RampCallers (closed loop).
type Stage struct {
	Duration time.Duration
	Target   float64
}

// StageReport is a stage as a report shows it: From and To in seconds since
// the end of the warm-up (the stages start with the warm-up, so the first
// can start before 0), ramping from StartTarget to Target.
type StageReport struct {
	Stage       int     `json:"stage"` // from 1
	From        float64 `json:"from_s"`
	To          float64 `json:"to_s"`
	StartTarget float64 `json:"start_target"`
	Target      float64 `json:"target"`
	Unit        string  `json:"unit"` // "calls/s" or "callers per session"
}

// ParseStages reads stages written as k6 writes them, DURATION:TARGET
// separated by commas: "30s:50,5m:500,30s:0".
func ParseStages(s string) ([]Stage, error) {
	var out []Stage
	for part := range strings.SplitSeq(s, ",") {
		d, t, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("stage %q: want DURATION:TARGET, as 30s:50", part)
		}
		dur, err := time.ParseDuration(d)
		if err != nil {
			return nil, fmt.Errorf("stage %q: %w", part, err)
		}
		target, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("stage %q: target: %w", part, err)
		}
		out = append(out, Stage{Duration: dur, Target: target})
	}
	return out, checkStages(out)
}

func checkStages(stages []Stage) error {
	for _, s := range stages {
		if s.Duration <= 0 || s.Target < 0 || math.IsInf(s.Target, 0) || math.IsNaN(s.Target) {
			return fmt.Errorf("stage %s:%g: want a positive duration and a target of 0 or more", s.Duration, s.Target)
		}
	}
	return nil
}

// ramp is a list of stages, read from the start of the load.
type ramp []Stage

func (rp ramp) total() time.Duration {
	var d time.Duration
	for _, s := range rp {
		d += s.Duration
	}
	return d
}

// at is the target at t since the start and the stage it is in (from 1;
// 0 after the last).
func (rp ramp) at(t time.Duration) (float64, int) {
	from := 0.0
	for i, s := range rp {
		if t < s.Duration {
			return from + (s.Target-from)*float64(t)/float64(s.Duration), i + 1
		}
		t -= s.Duration
		from = s.Target
	}
	return from, 0
}

// sendTime is when, since the start, the rate of the ramp has sent n calls
// in all: the n-th call's intended send time (from 0, as a constant rate
// sends its n-th at n/rate). ok is false when the ramp ends before.
func (rp ramp) sendTime(n float64) (time.Duration, bool) {
	var t0 time.Duration
	sent, r0 := 0.0, 0.0
	for _, s := range rp {
		d, r1 := s.Duration.Seconds(), s.Target
		if area := (r0 + r1) / 2 * d; n < sent+area {
			x, slope := n-sent, (r1-r0)/d
			var t float64
			if math.Abs(slope) < 1e-12 {
				t = x / r0
			} else {
				// x = r0 t + slope t²/2
				t = (math.Sqrt(max(0, r0*r0+2*slope*x)) - r0) / slope
			}
			return t0 + time.Duration(min(t, d)*float64(time.Second)), true
		}
		sent += (r0 + r1) / 2 * d
		t0 += s.Duration
		r0 = r1
	}
	return 0, false
}

// report is the stages as a report shows them, warmup after the start.
func (rp ramp) report(warmup time.Duration, unit string) []StageReport {
	var out []StageReport
	at, from := -warmup, 0.0
	for i, s := range rp {
		out = append(out, StageReport{Stage: i + 1, From: at.Seconds(), To: (at + s.Duration).Seconds(), StartTarget: from, Target: s.Target, Unit: unit})
		at += s.Duration
		from = s.Target
	}
	return out
}

// peak is the highest target.
func (rp ramp) peak() float64 {
	p := 0.0
	for _, s := range rp {
		p = max(p, s.Target)
	}
	return p
}
