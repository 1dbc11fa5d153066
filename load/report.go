package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/sanitize"
)

// Report is what a run measured. Only the calls started after the warm-up
// count; durations are in milliseconds in JSON.
type Report struct {
	// Shape is the load as it was configured.
	Shape Shape `json:"shape"`
	// LatencyFrom says where each call's latency starts: "intended send
	// time" with a rate (open loop: a call that waits for a free caller
	// counts its wait, so coordinated omission does not hide a stall), "send
	// time" without (closed loop).
	LatencyFrom string `json:"latency_from"`
	// Elapsed is the measured phase: from the end of the warm-up until the
	// last counted call ended.
	Elapsed Millis `json:"elapsed_ms"`
	// Interrupted is true when the run's context ended before the load did.
	Interrupted bool `json:"interrupted,omitempty"`

	Calls      int64   `json:"calls"`
	OK         int64   `json:"ok"`
	Failed     int64   `json:"failed"`
	Throughput float64 `json:"calls_per_second"`
	// Latency of every counted call, failed ones included.
	Latency Percentiles `json:"latency"`
	// LatencyOK and LatencyFailed split Latency: the calls that succeeded,
	// those that did not (absent when there were none).
	LatencyOK     *Percentiles `json:"latency_ok,omitempty"`
	LatencyFailed *Percentiles `json:"latency_failed,omitempty"`
	// Time splits the calls' time (from send to end, summed over calls)
	// into active and paused for input. Input is the time the handlers
	// spent answering the server's input requests, measured around each
	// handler and attributed to its call through the call's assigns. An
	// input request not tied to one call (a legacy stdio server with
	// several calls in flight on a session: nothing on the wire says which
	// one asked) is summed in UnattributedInput, not in any call's time,
	// when it starts after the warm-up.
	// A timed-out call reports the split its error carries.
	Time TimeSplit `json:"time"`
	// Outcomes counts the calls by how they ended: "ok", "is_error",
	// "timeout", "transport", "rpc <code>" (the server's JSON-RPC error),
	// or the error's kind ("protocol", "refused", "input_handler", "cancelled",
	// "closed", "task_cancelled", "usage", "internal"), followed by the
	// code when the error carries one ("protocol -1": a modern input
	// request refused by a guard with -1).
	Outcomes map[string]int64 `json:"outcomes"`
	// Messages are, for each outcome but "ok", its most frequent messages
	// (the text of an is_error result, the error of a failed call), most
	// frequent first: what a failure said, not only how many there were.
	Messages map[string][]MessageCount `json:"messages,omitempty"`
	// Tools counts the calls by tool.
	Tools map[string]int64 `json:"tools"`
	// PerTool is each tool's share: calls, throughput, latency and its
	// distribution (what conduit load compare compares tool by tool).
	PerTool map[string]ToolReport `json:"per_tool,omitempty"`
	// Input counts the input requests answered, refused… (the audit
	// outcomes), by method then outcome, over the whole run (warm-up
	// included: an input request is not tied to a counted call).
	Input map[string]map[string]int64 `json:"input"`
	// Refusals counts refused input requests by the code and message sent:
	// which guard refused them.
	Refusals map[string]int64 `json:"refusals,omitempty"`
	// Stats sums the clients' counters: Busy server requests, drops…
	Stats conduit.Stats `json:"stats"`
	// RateLimited counts input requests over the input budget
	// (Stats.RateLimited).
	RateLimited int64 `json:"rate_limited"`
	// Servers are the server processes Run started, with their peak RSS;
	// empty when unknown (not a stdio server, or not Linux).
	Servers []ServerProcess `json:"servers,omitempty"`
	// Histogram is the latency distribution, for plots.
	Histogram []Bucket `json:"histogram"`
	// FailedHistogram is the part of Histogram that failed, in the same
	// buckets (the rest succeeded).
	FailedHistogram []Bucket `json:"failed_histogram,omitempty"`
	// Timeline has one entry per TimelineStep seconds of the measured
	// phase: 1 s for a run of up to an hour, more for a longer one, so
	// that it never has more than 3600 entries.
	Timeline     []Second `json:"timeline"`
	TimelineStep int      `json:"timeline_step_s"`
	// Stages are the stages of a ramp (Config.Stages), in the timeline's
	// time.
	Stages []StageReport `json:"stages,omitempty"`
}

// ToolReport is one tool's part of a report.
type ToolReport struct {
	Calls      int64       `json:"calls"`
	OK         int64       `json:"ok"`
	Failed     int64       `json:"failed"`
	Throughput float64     `json:"calls_per_second"`
	Latency    Percentiles `json:"latency"`
	Histogram  []Bucket    `json:"histogram"`
}

// Shape is the load a report measured.
type Shape struct {
	Sessions       int     `json:"sessions"`
	Concurrency    int     `json:"concurrency"`
	Calls          int     `json:"calls,omitempty"`
	Duration       Millis  `json:"duration_ms,omitempty"`
	Rate           float64 `json:"rate,omitempty"`
	Warmup         Millis  `json:"warmup_ms,omitempty"`
	Mix            []Call  `json:"mix"`
	UnlimitedInput bool    `json:"unlimited_input"`
	Mode           string  `json:"mode"` // "open loop" or "closed loop"
}

// Millis is a duration written in JSON as milliseconds.
type Millis time.Duration

// MarshalJSON writes milliseconds, to the microsecond.
func (m Millis) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, "%.3f", float64(m)/float64(time.Millisecond)), nil
}

// UnmarshalJSON reads milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var f float64
	if _, err := fmt.Sscan(string(b), &f); err != nil {
		return err
	}
	*m = Millis(f * float64(time.Millisecond))
	return nil
}

func (m Millis) String() string { return time.Duration(m).Round(time.Microsecond).String() }

// Percentiles of latency.
type Percentiles struct {
	Min  Millis `json:"min_ms"`
	P50  Millis `json:"p50_ms"`
	P90  Millis `json:"p90_ms"`
	P99  Millis `json:"p99_ms"`
	P999 Millis `json:"p99_9_ms"`
	Max  Millis `json:"max_ms"`
	Mean Millis `json:"mean_ms"`
}

// TimeSplit is time summed over calls (see Report.Time).
type TimeSplit struct {
	Active            Millis `json:"active_ms"`
	PausedForInput    Millis `json:"paused_for_input_ms"`
	UnattributedInput Millis `json:"unattributed_input_ms"`
}

// ServerProcess is a server process and its peak resident set size
// (VmHWM).
type ServerProcess struct {
	PID          int    `json:"pid"`
	Name         string `json:"name"`
	PeakRSSBytes int64  `json:"peak_rss_bytes"`
}

// Bucket is a histogram bar: Count calls took from From up to UpTo.
type Bucket struct {
	From  Millis `json:"from_ms"`
	UpTo  Millis `json:"up_to_ms"`
	Count int64  `json:"count"`
}

// Second is one entry of the timeline, a second of the measured phase
// (Report.TimelineStep seconds in a long run): calls that ended in it.
type Second struct {
	At     int    `json:"at_s"` // seconds since the end of the warm-up
	Calls  int64  `json:"calls"`
	Errors int64  `json:"errors"` // calls that failed; Calls-Errors succeeded
	P50    Millis `json:"p50_ms"`
	P99    Millis `json:"p99_ms"`
	// Failures counts the failed calls by outcome (at most 8 outcomes,
	// the rest as "other").
	Failures map[string]int64 `json:"failures,omitempty"`
	// Stage is the stage of a ramp the entry starts in, from 1; 0 without
	// stages.
	Stage int `json:"stage,omitempty"`
}

// Histograms record microseconds from 1 µs to 1 h, to 3 significant
// digits (the whole run) or 2 (a tool, a window of the timeline).
const (
	histMin, histMax = 1, int64(time.Hour / time.Microsecond)
)

func newHist(digits int) *hdrhistogram.Histogram {
	return hdrhistogram.New(histMin, histMax, digits)
}

func micros(d time.Duration) int64 { return min(max(int64(d/time.Microsecond), histMin), histMax) }

func fromMicros(v int64) Millis { return Millis(time.Duration(v) * time.Microsecond) }

// recorder accumulates the counted calls. Callers record concurrently: mu
// guards everything.
type recorder struct {
	mu       sync.Mutex
	origin   time.Time               // the end of the warm-up
	hist     *hdrhistogram.Histogram // every call
	okHist   *hdrhistogram.Histogram // the calls that succeeded
	failed   *hdrhistogram.Histogram // the calls that did not
	timeline *timeline
	perTool  map[string]*toolRec
	calls    int64
	ok       int64
	outcomes map[string]int64
	messages map[string]map[string]int64 // outcome → message → calls
	tools    map[string]int64
	active   time.Duration
	paused   time.Duration
	lastEnd  time.Time
	// min and max are exact; the histogram's are to its precision.
	min, max                           time.Duration
	okMin, okMax, failedMin, failedMax time.Duration
}

// toolRec is one tool's part of the recorder.
type toolRec struct {
	ok       int64
	hist     *hdrhistogram.Histogram
	min, max time.Duration
}

// MessageCount is one message of an outcome and how many calls ended
// with it.
type MessageCount struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// Bounds on the messages a report keeps: a server that words every failure
// differently (an id, a time in it) cannot grow the report without end.
const (
	maxMessageRunes   = 200 // a message is cut to this many runes
	maxKeptMessages   = 100 // distinct messages counted per outcome; later ones count as otherMessages
	reportedMessages  = 3   // messages per outcome in the report
	otherMessagesText = "(other messages)"
)

// newRecorder counts from origin, the end of the warm-up, a run expected
// to last about expected (0: unknown).
func newRecorder(origin time.Time, expected time.Duration) *recorder {
	return &recorder{origin: origin, hist: newHist(3), okHist: newHist(3), failed: newHist(3), timeline: newTimeline(stepFor(expected)),
		perTool: map[string]*toolRec{}, outcomes: map[string]int64{}, messages: map[string]map[string]int64{}, tools: map[string]int64{}}
}

// result is one call as measured.
type result struct {
	tool          string
	outcome       string
	message       string        // what a failed call said (messageOf); "" for ok
	latency       time.Duration // from intended (open loop) or actual send
	active, input time.Duration
	end           time.Time
}

func (r *recorder) record(res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := micros(res.latency)
	_ = r.hist.RecordValue(v)
	if r.calls == 0 || res.latency < r.min {
		r.min = res.latency
	}
	r.max = max(r.max, res.latency)
	if res.outcome == OutcomeOK {
		if r.ok == 0 || res.latency < r.okMin {
			r.okMin = res.latency
		}
		r.okMax = max(r.okMax, res.latency)
		r.ok++
		_ = r.okHist.RecordValue(v)
	} else {
		if r.calls == r.ok || res.latency < r.failedMin {
			r.failedMin = res.latency
		}
		r.failedMax = max(r.failedMax, res.latency)
		_ = r.failed.RecordValue(v)
	}
	r.calls++
	t := r.perTool[res.tool]
	if t == nil {
		t = &toolRec{hist: newHist(2), min: res.latency}
		r.perTool[res.tool] = t
	}
	_ = t.hist.RecordValue(v)
	t.min, t.max = min(t.min, res.latency), max(t.max, res.latency)
	if res.outcome == OutcomeOK {
		t.ok++
	}
	r.outcomes[res.outcome]++
	if res.outcome != OutcomeOK {
		m := r.messages[res.outcome]
		if m == nil {
			m = map[string]int64{}
			r.messages[res.outcome] = m
		}
		key := res.message
		if _, seen := m[key]; !seen && len(m) >= maxKeptMessages {
			key = otherMessagesText
		}
		m[key]++
	}
	r.tools[res.tool]++
	r.active += res.active
	r.paused += res.input
	if res.end.After(r.lastEnd) {
		r.lastEnd = res.end
	}
	r.timeline.add(res.end.Sub(r.origin), res.outcome, v)
}

// Progress is a snapshot of a run in progress, of the counted calls.
type Progress struct {
	Elapsed time.Duration `json:"-"`
	Calls   int64         `json:"calls"`
	Errors  int64         `json:"errors"`
	// Rate is the calls per second since the end of the warm-up.
	Rate float64 `json:"calls_per_second"`
	P99  Millis  `json:"p99_ms"`
	// Warmup is true while the warm-up runs (nothing counted yet).
	Warmup bool `json:"warmup,omitempty"`
	// Final is true for the last report, once the load is over.
	Final bool `json:"final,omitempty"`
	// Total is how long the measured phase should last (0: unknown, a
	// run of Calls without Duration).
	Total time.Duration `json:"-"`
	// RateNow and P99Now are of the last window of the timeline (the last
	// second, in a run of up to an hour): calls per second and p99.
	RateNow float64 `json:"calls_per_second_now"`
	P99Now  Millis  `json:"p99_now_ms"`
	// Stage is the stage of a ramp the run is in, from 1 (0: none).
	Stage int `json:"stage,omitempty"`
}

func (r *recorder) progress(now time.Time) Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := Progress{Elapsed: now.Sub(r.origin), Calls: r.calls, Errors: r.calls - r.ok, Warmup: now.Before(r.origin)}
	if s := p.Elapsed.Seconds(); s > 0 {
		p.Rate = float64(r.calls) / s
	}
	if r.calls > 0 {
		p.P99 = r.quantile(99)
	}
	if s, step, ok := r.timeline.last(p.Elapsed); ok {
		p.RateNow, p.P99Now = float64(s.Calls)/float64(step), s.P99
	}
	return p
}

// quantile is the latency at q percent. The histogram's values are to its
// precision: keep them within the exact min and max. mu must be held.
func (r *recorder) quantile(q float64) Millis {
	return quantile(r.hist, q, r.min, r.max)
}

// quantile is the latency at q percent of h, within the exact lo and hi.
func quantile(h *hdrhistogram.Histogram, q float64, lo, hi time.Duration) Millis {
	return min(max(fromMicros(h.ValueAtQuantile(q)), Millis(lo)), Millis(hi))
}

// percentiles of h, whose exact extremes are lo and hi.
func percentiles(h *hdrhistogram.Histogram, lo, hi time.Duration) Percentiles {
	return Percentiles{
		Min: Millis(lo), P50: quantile(h, 50, lo, hi), P90: quantile(h, 90, lo, hi), P99: quantile(h, 99, lo, hi),
		P999: quantile(h, 99.9, lo, hi), Max: Millis(hi), Mean: Millis(time.Duration(h.Mean()) * time.Microsecond),
	}
}

// fill writes the recorder's totals into rep.
func (r *recorder) fill(rep *Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep.Calls, rep.OK, rep.Failed = r.calls, r.ok, r.calls-r.ok
	rep.Outcomes, rep.Tools = maps.Clone(r.outcomes), maps.Clone(r.tools)
	for outcome, m := range r.messages {
		var top []MessageCount
		for msg, n := range m {
			top = append(top, MessageCount{Message: msg, Count: n})
		}
		slices.SortFunc(top, func(a, b MessageCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Message, b.Message))
		})
		if rep.Messages == nil {
			rep.Messages = map[string][]MessageCount{}
		}
		rep.Messages[outcome] = top[:min(len(top), reportedMessages)]
	}
	rep.Time.Active, rep.Time.PausedForInput = Millis(r.active), Millis(r.paused)
	if r.lastEnd.After(r.origin) {
		rep.Elapsed = Millis(r.lastEnd.Sub(r.origin))
		rep.Throughput = float64(r.calls) / r.lastEnd.Sub(r.origin).Seconds()
	}
	if r.calls > 0 {
		rep.Latency = percentiles(r.hist, r.min, r.max)
		rep.Histogram = buckets(r.hist)
	}
	if r.calls > r.ok {
		p := percentiles(r.failed, r.failedMin, r.failedMax)
		rep.LatencyFailed, rep.FailedHistogram = &p, buckets(r.failed)
	}
	if r.ok > 0 {
		p := percentiles(r.okHist, r.okMin, r.okMax)
		rep.LatencyOK = &p
	}
	for name, t := range r.perTool {
		if rep.PerTool == nil {
			rep.PerTool = map[string]ToolReport{}
		}
		n := r.tools[name]
		tr := ToolReport{Calls: n, OK: t.ok, Failed: n - t.ok, Latency: percentiles(t.hist, t.min, t.max), Histogram: buckets(t.hist)}
		if rep.Elapsed > 0 {
			tr.Throughput = float64(n) / time.Duration(rep.Elapsed).Seconds()
		}
		rep.PerTool[name] = tr
	}
	rep.Timeline, rep.TimelineStep = r.timeline.snapshot(), r.timeline.step
}

// bucketsPerDecade is the resolution of Report.Histogram: bars about 12%
// wide, on a log scale.
const bucketsPerDecade = 20

// buckets folds the histogram into log-spaced bars, skipping empty ones.
func buckets(h *hdrhistogram.Histogram) []Bucket {
	counts := map[int]int64{}
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			counts[int(math.Floor(bucketsPerDecade*math.Log10(float64(b.To)/1000)))] += b.Count
		}
	}
	edge := func(k int) Millis {
		return Millis(math.Pow(10, float64(k)/bucketsPerDecade) * float64(time.Millisecond))
	}
	var out []Bucket
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		out = append(out, Bucket{From: edge(k), UpTo: edge(k + 1), Count: counts[k]})
	}
	return out
}

// Outcomes of a call (Report.Outcomes) other than "rpc <code>" and the
// error kinds.
const (
	OutcomeOK      = "ok"
	OutcomeIsError = "is_error"
)

// messageOf is what a call that did not succeed said: the first text of an
// is_error result, or the error, on one line, sanitised and cut.
func messageOf(res *conduit.CallToolResult, err error) string {
	var msg string
	switch {
	case err != nil:
		msg = strings.TrimPrefix(err.Error(), "conduit: ")
	case res != nil && res.IsError:
		for _, c := range res.Content {
			if c.Type == "text" {
				msg = c.Text
				break
			}
		}
	}
	return sanitize.Text(strings.Join(strings.Fields(msg), " "), maxMessageRunes)
}

// outcomeOf classifies how a call ended.
func outcomeOf(res *conduit.CallToolResult, err error) string {
	if err == nil {
		if res != nil && res.IsError {
			return OutcomeIsError
		}
		return OutcomeOK
	}
	var ce *conduit.Error
	if errors.As(err, &ce) {
		if ce.RPC != nil {
			return fmt.Sprintf("%s %d", ce.Kind, ce.RPC.Code)
		}
		return string(ce.Kind)
	}
	var re *conduit.RPCError
	if errors.As(err, &re) {
		return fmt.Sprintf("rpc %d", re.Code)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The run's context ended: CallTool returns its error as is.
		return string(conduit.KindCancelled)
	}
	return "error"
}

// WriteText prints the report for a person.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	s := rep.Shape
	fmt.Fprintf(&b, "load: %s × %s, %s", plural(s.Sessions, "session"), plural(s.Concurrency, "caller"), s.Mode)
	if s.Rate > 0 {
		fmt.Fprintf(&b, " at %g calls/s", s.Rate)
	}
	if s.Warmup > 0 {
		fmt.Fprintf(&b, ", warm-up %s", s.Warmup)
	}
	if s.UnlimitedInput {
		b.WriteString(", input budget lifted")
	}
	b.WriteString("\n")
	if len(rep.Stages) > 0 {
		parts := make([]string, len(rep.Stages))
		for i, st := range rep.Stages {
			parts[i] = fmt.Sprintf("%d %s %g→%g %s", st.Stage, time.Duration((st.To-st.From)*float64(time.Second)).Round(time.Millisecond), st.StartTarget, st.Target, st.Unit)
		}
		fmt.Fprintf(&b, "stages:     %s\n", strings.Join(parts, ", "))
	}
	if rep.Interrupted {
		b.WriteString("interrupted before the end of the load\n")
	}
	fmt.Fprintf(&b, "calls:      %d in %s (%.1f calls/s): %d ok, %d failed\n", rep.Calls, rep.Elapsed, rep.Throughput, rep.OK, rep.Failed)
	l := rep.Latency
	fmt.Fprintf(&b, "latency:    min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", l.Min, l.P50, l.P90, l.P99, l.P999, l.Max)
	if rep.LatencyOK != nil && rep.LatencyFailed != nil {
		for _, part := range []struct {
			name string
			p    *Percentiles
		}{{"ok", rep.LatencyOK}, {"failed", rep.LatencyFailed}} {
			l := part.p
			fmt.Fprintf(&b, "            %-7s min %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", part.name, l.Min, l.P50, l.P90, l.P99, l.P999, l.Max)
		}
	}
	fmt.Fprintf(&b, "            measured from the %s\n", rep.LatencyFrom)
	fmt.Fprintf(&b, "time:       active %s, paused for input %s", rep.Time.Active, rep.Time.PausedForInput)
	if rep.Time.UnattributedInput > 0 {
		fmt.Fprintf(&b, ", input not tied to one call %s", rep.Time.UnattributedInput)
	}
	b.WriteString(" (summed over calls)\n")
	fmt.Fprintf(&b, "outcomes:   %s\n", counts(rep.Outcomes))
	for _, outcome := range slices.Sorted(maps.Keys(rep.Messages)) {
		for _, m := range rep.Messages[outcome] {
			fmt.Fprintf(&b, "            %s %d × %s\n", outcome, m.Count, cmp.Or(m.Message, "(no message)"))
		}
	}
	if len(rep.Tools) > 1 {
		fmt.Fprintf(&b, "tools:      %s\n", counts(rep.Tools))
	}
	if len(rep.Input) == 0 {
		b.WriteString("input:      none asked\n")
	}
	for _, m := range slices.Sorted(maps.Keys(rep.Input)) {
		fmt.Fprintf(&b, "input:      %s: %s\n", m, counts(rep.Input[m]))
	}
	for _, k := range slices.Sorted(maps.Keys(rep.Refusals)) {
		fmt.Fprintf(&b, "refused:    %d × %s\n", rep.Refusals[k], k)
	}
	st := rep.Stats
	fmt.Fprintf(&b, "server requests: %d busy, %d rate limited; dropped: %d notifications, %d log entries\n",
		st.Busy, rep.RateLimited, st.NotificationsDropped, st.LogsDropped)
	if len(rep.Servers) == 0 {
		b.WriteString("server peak RSS: unknown\n")
	} else {
		peak, n := map[string]int64{}, map[string]int{}
		for _, sv := range rep.Servers {
			peak[sv.Name], n[sv.Name] = max(peak[sv.Name], sv.PeakRSSBytes), n[sv.Name]+1
		}
		for _, name := range slices.Sorted(maps.Keys(peak)) {
			of := "1 process"
			if n[name] > 1 {
				of = fmt.Sprintf("highest of %d processes", n[name])
			}
			fmt.Fprintf(&b, "server peak RSS: %s %.1f MiB (%s)\n", name, float64(peak[name])/(1<<20), of)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// counts prints a count map as "k n, k n", the largest first.
func counts(m map[string]int64) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// plural is "1 session", "4 sessions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
