package load

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heap is the live heap after a collection.
func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// The reporter's memory stays flat over a simulated 10-hour run at 500
// calls/s (18 million calls, 1 % failing in two kinds) when its length is
// known (1 entry per 10 s), and at 100 calls/s when it is not (the timeline
// coarsens as it goes: what it keeps does not depend on the rate); its JSON
// report and HTML page stay small.
func TestTenHourRunMemoryIsBounded(t *testing.T) {
	const hours = 10
	for _, c := range []struct {
		expected  time.Duration
		perSecond int
	}{{hours * time.Hour, 500}, {0, 100}} {
		expected, perSecond := c.expected, c.perSecond
		t.Run(fmt.Sprint("expected ", expected), func(t *testing.T) {
			origin := time.Unix(0, 0)
			r := newRecorder(origin, expected)
			var afterHour int64
			for s := range hours * 3600 {
				if s == 3600 {
					afterHour = heap()
				}
				for k := range perSecond {
					at := origin.Add(time.Duration(s)*time.Second + time.Duration(k)*time.Second/time.Duration(perSecond))
					res := result{tool: "summarise", outcome: OutcomeOK, latency: time.Duration(1000+k%97*10) * time.Microsecond, end: at}
					switch k {
					case 7, 8, 9:
						res.outcome, res.message = "refused -1", "input budget"
					case 11, 12:
						res.outcome, res.message = "timeout", fmt.Sprint("took too long ", s%3)
					}
					r.record(res)
				}
			}
			growth := float64(heap()-afterHour) / (hours - 1) // bytes per hour
			t.Logf("heap growth %.0f KB/hour", growth/1024)
			assert.LessOrEqual(t, growth, 5.0*(1<<20), "bytes per hour")

			rep := &Report{Shape: Shape{Rate: float64(perSecond), Duration: Millis(expected)}}
			r.fill(rep)
			assert.Equal(t, int64(hours*3600*perSecond), rep.Calls)
			assert.Equal(t, int64(hours*3600*5), rep.Failed)
			assert.LessOrEqual(t, len(rep.Timeline), maxTimeline)
			var sum, failed int64
			for _, s := range rep.Timeline {
				sum += s.Calls
				failed += s.Failures["refused -1"] + s.Failures["timeout"]
			}
			assert.Equal(t, rep.Calls, sum)
			assert.Equal(t, rep.Failed, failed)
			js, err := json.Marshal(rep)
			require.NoError(t, err)
			var page bytes.Buffer
			require.NoError(t, WriteHTML(&page, rep))
			t.Logf("report %d KB, page %d KB, %d entries of %d s", len(js)>>10, page.Len()>>10, len(rep.Timeline), rep.TimelineStep)
			assert.Less(t, len(js), 1<<20)
			assert.Less(t, page.Len(), 1<<20)
		})
	}
}
