package actors

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

// clockTest drives a tracker on its own: fire queues the timer's firings,
// and tick (as the connection does on deadlineTick) records what came due,
// in order.
type clockTest struct {
	tr    *tracker
	fired chan struct{}
	got   []string
}

func newClockTest() *clockTest {
	ct := &clockTest{fired: make(chan struct{}, 16)}
	ct.tr = &tracker{fire: func() { ct.fired <- struct{}{} }}
	return ct
}

// wait lets virtual time pass (the timer fires meanwhile, then the tick
// runs) and returns what came due.
func (ct *clockTest) wait(d time.Duration) []string {
	time.Sleep(d)
	synctest.Wait()
	for len(ct.fired) > 0 {
		<-ct.fired
		ct.tr.tick(func(e *callExpired) {
			ct.got = append(ct.got, fmt.Sprintf("call %s total=%v active=%s paused=%s", e.id, e.total, e.active, e.paused))
		}, func(id messages.ID) {
			ct.got = append(ct.got, fmt.Sprintf("handler %s", id))
		})
	}
	got := ct.got
	ct.got = nil
	return got
}

// req is the id of the legacy server request n.
func req(n int64) messages.ID { return messages.IntID(n) }

func TestTrackerClockFiresEachDeadlineInOrderWithOneTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(1), 30*time.Second, time.Hour, nil)
		tr.start(messages.IntID(2), 10*time.Second, 20*time.Second, nil) // earlier: the timer is re-armed
		tr.start(messages.IntID(3), 5*time.Second, time.Hour, nil)
		tr.end(messages.IntID(3)) // ended before its deadline: never expires
		timer := tr.timer

		require.Empty(t, ct.wait(5*time.Second), "call 3 ended; its deadline leaves the clock")
		require.Equal(t, []string{"call 2 total=false active=10s paused=0s"}, ct.wait(5*time.Second))
		require.Same(t, timer, tr.timer, "one timer while the clock has deadlines")
		require.Equal(t, []string{"call 1 total=false active=30s paused=0s"}, ct.wait(20*time.Second))
		require.Empty(t, tr.due, "nothing is left on the clock")
		require.Nil(t, tr.timer, "an empty clock keeps no timer: an idle connection has none")
		require.Empty(t, ct.wait(time.Hour), "call 1's total limit went with it")
	})
}

func TestTrackerClockPausesAndResumesTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(1), 10*time.Second, 40*time.Second, nil)
		ct.wait(4 * time.Second)
		in := tr.inputStarted(nil, req(100), "", "", time.Minute)
		require.True(t, in.grant.hasCall, "the only call in flight is the input's call")
		require.Empty(t, ct.wait(20*time.Second), "paused: the deadline is off the clock")
		require.Nil(t, tr.inputEnded(in))
		require.Empty(t, ct.wait(5*time.Second), "6 s were left at the pause")
		require.Equal(t, []string{"call 1 total=false active=30s paused=20s"}, ct.wait(time.Second))
		require.Empty(t, ct.wait(time.Hour), "the handler timeout left the clock with its input")
	})
}

func TestTrackerClockTotalLimitEndsAPausedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(1), 10*time.Second, 30*time.Second, nil)
		in := tr.inputStarted(nil, messages.ID{}, "", "", 0)
		require.Equal(t, []string{"call 1 total=true active=30s paused=30s"}, ct.wait(30*time.Second))
		require.Nil(t, tr.inputEnded(in), "its call is gone: nothing resumes")
	})
}

func TestTrackerClockHandlerTimeoutOutlivesItsCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(1), time.Minute, time.Hour, nil)
		in7 := tr.inputStarted(nil, req(7), "", "", 3*time.Second)
		in8 := tr.inputStarted(nil, req(8), "", "", 2*time.Second) // both belong to call 1, the only call
		tr.end(messages.IntID(1))
		require.Equal(t, []string{"handler 8"}, ct.wait(2*time.Second))
		require.Equal(t, []string{"handler 7"}, ct.wait(time.Second))
		require.Nil(t, tr.inputEnded(in7))
		require.Nil(t, tr.inputEnded(in8))
		require.Empty(t, tr.inputs)
	})
}

func TestTrackerEmptyClockStopsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newClockTest().tr
		tr.start(messages.IntID(1), 10*time.Second, time.Hour, nil)
		tr.start(messages.IntID(2), 20*time.Second, time.Hour, nil)
		tr.end(messages.IntID(1))
		require.False(t, tr.armed.IsZero(), "call 2 is still on the clock")
		tr.end(messages.IntID(2))
		require.True(t, tr.armed.IsZero())
		require.Nil(t, tr.timer, "the clock emptied: its timer was stopped and dropped")
	})
}

func TestTrackerStopLeavesNothingToFire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(1), time.Second, time.Hour, nil)
		tr.inputStarted(nil, req(7), "", "", 2*time.Second)
		tr.stop()
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Zero(t, len(ct.fired))
		require.Empty(t, tr.due)
	})
}

// An input that names its call (MRTR, tasks) belongs to that call alone:
// once it has ended, to none, even with exactly one other call in flight
// (which the relation by "the only call" would have picked).
func TestTrackerInputOfAnEndedCallBelongsToNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newClockTest().tr
		tr.start(messages.IntID(1), 10*time.Second, time.Hour, map[string]any{"who": "other"})
		g := &tr.inputOf(messages.IntID(2)).grant // call 2 has ended
		require.False(t, g.hasCall)
		require.Nil(t, g.assigns)
		require.Equal(t, 1, g.inFlight)
		require.Zero(t, tr.calls[messages.IntID(1)].open, "call 1 was not paused")
		g = &tr.inputOf(messages.IntID(1)).grant
		require.True(t, g.hasCall)
		require.Equal(t, "other", g.assigns["who"])
		require.Equal(t, 1, tr.calls[messages.IntID(1)].open)
	})
}

// Handler timeouts of one length wait in a lane, of which only the head is
// in the heap: ending one in the middle, the head or the tail keeps the
// others due at their own moments, in order, beside a lane of another
// length and a call's deadline.
func TestTrackerHandlerTimeoutLanes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ct := newClockTest()
		tr := ct.tr
		tr.start(messages.IntID(100), 25*time.Second, 0, nil)
		ins := map[int64]*trackedInput{}
		for n := int64(1); n <= 5; n++ {
			ins[n] = tr.inputStarted(nil, req(n), "", "", 10*time.Second)
			ins[10+n] = tr.inputStarted(nil, req(10+n), "", "", 4*time.Second)
			time.Sleep(time.Second)
		}
		require.Len(t, tr.lanes, 2)
		require.Len(t, tr.due, 2, "the two lanes' heads (the call is paused, without a total limit)")
		tr.inputEnded(ins[3])  // the middle of its lane
		tr.inputEnded(ins[1])  // the head: the next takes its place in the heap
		tr.inputEnded(ins[15]) // the tail of the other lane
		require.Equal(t, []string{"handler 11", "handler 12", "handler 13", "handler 14"}, ct.wait(3*time.Second),
			"4 s timeouts clocked at 0..4 s, now 8 s: 11 to 14 are due, 15 ended")
		require.Equal(t, []string{"handler 2"}, ct.wait(3*time.Second), "11 s: 2 (clocked at 1 s) due, 1 and 3 ended")
		require.Equal(t, []string{"handler 4"}, ct.wait(2*time.Second), "13 s")
		require.Equal(t, []string{"handler 5"}, ct.wait(time.Second), "14 s")
		require.Empty(t, tr.lanes[0].head)
		require.Empty(t, tr.lanes[1].head)
		for _, n := range []int64{2, 4, 5, 11, 12, 13, 14} {
			tr.inputEnded(ins[n]) // the children answer after their timeout
		}
		require.Equal(t, []string{"call 100 total=false active=39s paused=14s"}, ct.wait(25*time.Second), "its 25 s run from the last input's end, at 14 s")
		require.Empty(t, tr.due)
	})
}

// An input is ended by its entry, once: ending it again, ending one the
// tracker did not keep (no call, no timeout), or one kept before a stop
// whose slot another input holds now, ends nothing and leaves the others.
func TestTrackerEndsOnlyTheEntriesItHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := newClockTest().tr
		tr.start(messages.IntID(1), 10*time.Second, 0, nil)
		a := tr.inputStarted(nil, req(7), "", "", time.Second)
		b := tr.inputStarted(nil, req(8), "", "", time.Second)
		require.Nil(t, tr.inputEnded(a))
		require.Equal(t, 0, b.slot, "the last entry took the ended one's slot")
		require.Nil(t, tr.inputEnded(a))
		require.Equal(t, []*trackedInput{b}, tr.inputs)
		require.Equal(t, 1, tr.calls[messages.IntID(1)].open, "ending a twice resumed the call")

		none := tr.inputStarted(nil, messages.ID{}, "", "", 0)
		tr.end(messages.IntID(1))
		loose := tr.inputStarted(nil, messages.ID{}, "", "", 0)
		require.Equal(t, -1, loose.slot, "an input of no call and no timeout is not kept")
		require.Nil(t, tr.inputEnded(loose))
		require.Nil(t, tr.inputEnded(none), "kept while its call ran; its call has ended")
		require.Equal(t, []*trackedInput{b}, tr.inputs)

		tr.stop()
		c := tr.inputStarted(nil, req(9), "", "", time.Second)
		require.Equal(t, 0, c.slot)
		require.Nil(t, tr.inputEnded(b), "b's slot is c's now")
		require.Equal(t, []*trackedInput{c}, tr.inputs)
		tr.stop()
	})
}

// Random sequences of calls starting and ending, inputs opening and
// ending (again, or after a stop), and stops keep the tracker's books
// exact against a model: every open input at its own slot and nothing else
// there, and every call counting the open inputs that paused it.
func TestTrackerInputsAgainstAModel(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		synctest.Test(t, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			tr := newClockTest().tr
			calls := map[messages.ID]bool{}            // the calls in flight
			related := map[*trackedInput]messages.ID{} // open inputs, with the call each paused
			open := map[*trackedInput]bool{}           // the inputs the tracker should hold
			var seen []*trackedInput                   // every entry ever returned
			var next int64
			pick := func() (messages.ID, bool) {
				for id := range calls {
					return id, true
				}
				return messages.ID{}, false
			}
			for step := 0; step < 200; step++ {
				switch op := rng.IntN(20); {
				case op < 4:
					next++
					tr.start(messages.IntID(next), time.Hour, 0, nil)
					calls[messages.IntID(next)] = true
				case op < 6:
					if id, ok := pick(); ok {
						tr.end(id)
						delete(calls, id)
						for in, c := range related {
							if c == id {
								delete(related, in)
							}
						}
					}
				case op < 10:
					var timeout time.Duration
					if rng.IntN(2) == 0 {
						timeout = time.Minute
					}
					var only messages.ID
					hasCall := len(calls) == 1
					if hasCall {
						only, _ = pick()
					}
					in := tr.inputStarted(nil, messages.IntID(rng.Int64N(50)), "", "", timeout)
					seen = append(seen, in)
					if hasCall || timeout > 0 {
						open[in] = true
					}
					if hasCall {
						related[in] = only
					}
				case op < 12:
					id := messages.IntID(rng.Int64N(next + 2)) // perhaps ended, perhaps never started
					in := tr.inputOf(id)
					seen = append(seen, in)
					if calls[id] {
						open[in], related[in] = true, id
					}
				case op < 19:
					if len(seen) > 0 {
						in := seen[rng.IntN(len(seen))]
						tr.inputEnded(in)
						delete(open, in)
						delete(related, in)
					}
				default:
					tr.stop()
					clear(calls)
					clear(open)
					clear(related)
				}
				require.Len(t, tr.inputs, len(open), "step %d", step)
				for i, in := range tr.inputs {
					require.Equal(t, i, in.slot, "step %d", step)
					require.True(t, open[in], "step %d: an input held that should not be", step)
				}
				for id := range calls {
					want := 0
					for _, c := range related {
						if c == id {
							want++
						}
					}
					require.Equal(t, want, tr.calls[id].open, "step %d: call %s", step, id)
				}
			}
			tr.stop()
		})
	}
}
