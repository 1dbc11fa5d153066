package load

import (
	"maps"
	"math"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Bounds on what a run keeps over time, whatever its length: the timeline
// holds at most maxTimeline entries (a run longer than maxTimeline seconds
// gets entries of several seconds each, TimelineStep), and a latency
// histogram only for the openWindows most recent entries; an entry keeps
// counts and percentiles once closed.
const (
	maxTimeline     = 3600
	openWindows     = 3
	maxEntryOutcome = 8 // failure kinds per entry; the rest count as otherOutcome
	otherOutcome    = "other"
)

// stepFor is the seconds per timeline entry of a run expected to last d
// (0: unknown, 1 s until the run outgrows maxTimeline).
func stepFor(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds()/maxTimeline)))
}

// timeline is the measured phase in entries of step seconds. It is not safe
// for concurrent use: the recorder's lock guards it.
type timeline struct {
	step    int
	entries []Second
	closed  int                             // entries before it have their percentiles
	hists   map[int]*hdrhistogram.Histogram // latency of the open entries
	free    []*hdrhistogram.Histogram       // reset histograms, for the next entries
}

func newTimeline(step int) *timeline {
	return &timeline{step: max(step, 1), hists: map[int]*hdrhistogram.Histogram{}}
}

// add counts a call that ended at since the end of the warm-up.
func (t *timeline) add(at time.Duration, outcome string, micros int64) {
	i := max(0, int(at/time.Second)) / t.step
	if i >= maxTimeline {
		t.coarsen(i)
		i = max(0, int(at/time.Second)) / t.step
	}
	for len(t.entries) <= i {
		t.entries = append(t.entries, Second{At: len(t.entries) * t.step})
	}
	t.closeBefore(i - openWindows + 1)
	s := &t.entries[i]
	s.Calls++
	if outcome != OutcomeOK {
		s.Errors++
		if s.Failures == nil {
			s.Failures = map[string]int64{}
		}
		if _, seen := s.Failures[outcome]; !seen && len(s.Failures) >= maxEntryOutcome {
			outcome = otherOutcome
		}
		s.Failures[outcome]++
	}
	if i < t.closed {
		return // a call that ended long after its neighbours: counted, not in the closed percentiles
	}
	h := t.hists[i]
	if h == nil {
		if n := len(t.free); n > 0 {
			h, t.free = t.free[n-1], t.free[:n-1]
		} else {
			h = newHist(2)
		}
		t.hists[i] = h
	}
	_ = h.RecordValue(micros)
}

// closeBefore gives the entries before end their percentiles and frees
// their histograms.
func (t *timeline) closeBefore(end int) {
	for ; t.closed < min(end, len(t.entries)); t.closed++ {
		h := t.hists[t.closed]
		if h == nil {
			continue
		}
		s := &t.entries[t.closed]
		s.P50, s.P99 = fromMicros(h.ValueAtQuantile(50)), fromMicros(h.ValueAtQuantile(99))
		delete(t.hists, t.closed)
		h.Reset()
		t.free = append(t.free, h)
	}
}

// coarsen doubles the step until entry i fits, merging pairs of entries:
// counts add up, p50 is their calls' weighted mean and p99 the higher of
// the two (an upper bound: the calls themselves are gone).
func (t *timeline) coarsen(i int) {
	t.closeBefore(len(t.entries))
	for i >= maxTimeline {
		merged := make([]Second, 0, (len(t.entries)+1)/2)
		for j := 0; j < len(t.entries); j += 2 {
			a := t.entries[j]
			a.At = len(merged) * t.step * 2
			if j+1 < len(t.entries) {
				b := t.entries[j+1]
				if a.Calls+b.Calls > 0 {
					a.P50 = Millis((float64(a.P50)*float64(a.Calls) + float64(b.P50)*float64(b.Calls)) / float64(a.Calls+b.Calls))
				}
				a.P99 = max(a.P99, b.P99)
				a.Calls += b.Calls
				a.Errors += b.Errors
				for k, n := range b.Failures {
					if a.Failures == nil {
						a.Failures = map[string]int64{}
					}
					a.Failures[k] += n
				}
			}
			merged = append(merged, a)
		}
		t.entries, t.step, i = merged, t.step*2, i/2
	}
	t.closed = len(t.entries)
}

// last is the entry before the one now falls in, with its length in
// seconds, for the live line; ok is false in the first entry.
func (t *timeline) last(now time.Duration) (Second, int, bool) {
	i := max(0, int(now/time.Second))/t.step - 1
	switch {
	case i < 0:
		return Second{}, 0, false
	case i >= len(t.entries):
		return Second{At: i * t.step}, t.step, true // no call ended in it
	}
	s := t.entries[i]
	if h := t.hists[i]; h != nil {
		s.P50, s.P99 = fromMicros(h.ValueAtQuantile(50)), fromMicros(h.ValueAtQuantile(99))
	}
	return s, t.step, true
}

// snapshot closes every entry and copies them out.
func (t *timeline) snapshot() []Second {
	t.closeBefore(len(t.entries))
	out := make([]Second, len(t.entries))
	for i, s := range t.entries {
		s.Failures = maps.Clone(s.Failures)
		out[i] = s
	}
	return out
}
