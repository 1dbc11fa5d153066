package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
)

// inputTimer sums the time the handlers spent on one call's input
// requests. Several may run at once for one call (a modern round asking
// for two inputs): mu guards the sum.
type inputTimer struct {
	mu  sync.Mutex
	sum time.Duration
}

func (t *inputTimer) add(d time.Duration) {
	t.mu.Lock()
	t.sum += d
	t.mu.Unlock()
}

func (t *inputTimer) total() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sum
}

// inputMeter times the handlers and counts the audit records of every
// session. Handlers and the audit hook run on many goroutines: mu guards
// the counts.
type inputMeter struct {
	mu           sync.Mutex
	outcomes     map[string]map[string]int64 // method → outcome → count
	refusals     map[string]int64
	unattributed time.Duration
	// from is the end of the warm-up: unattributed input that starts
	// before it belongs to no counted call. Zero until the load starts.
	from time.Time
}

func newInputMeter() *inputMeter {
	return &inputMeter{outcomes: map[string]map[string]int64{}, refusals: map[string]int64{}}
}

// wrap times each input handler of h. The notification hooks are kept as
// they are.
func (in *inputMeter) wrap(h conduit.Handlers) conduit.Handlers {
	if f := h.Sampling; f != nil {
		h.Sampling = func(ctx context.Context, req *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			defer in.timed(req.Assigns, time.Now())
			return f(ctx, req)
		}
	}
	if f := h.Elicitation; f != nil {
		h.Elicitation = func(ctx context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			defer in.timed(req.Assigns, time.Now())
			return f(ctx, req)
		}
	}
	if f := h.Roots; f != nil {
		h.Roots = func(ctx context.Context, req *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			defer in.timed(req.Assigns, time.Now())
			return f(ctx, req)
		}
	}
	return h
}

// countFrom sets the end of the warm-up, before which no unattributed
// input counts.
func (in *inputMeter) countFrom(t time.Time) {
	in.mu.Lock()
	in.from = t
	in.mu.Unlock()
}

// timed adds the time since start to the call the assigns belong to, or to
// the unattributed input time when the request is not tied to one call and
// started after the warm-up (the counted calls' time split is the
// recorder's, which counts no warm-up call either).
func (in *inputMeter) timed(assigns map[string]any, start time.Time) {
	d := time.Since(start)
	if t, ok := assigns[assignKey].(*inputTimer); ok {
		t.add(d)
		return
	}
	in.mu.Lock()
	if !in.from.IsZero() && !start.Before(in.from) {
		in.unattributed += d
	}
	in.mu.Unlock()
}

// audit counts one audit record.
func (in *inputMeter) audit(r conduit.AuditRecord) {
	in.mu.Lock()
	defer in.mu.Unlock()
	m := in.outcomes[r.Method]
	if m == nil {
		m = map[string]int64{}
		in.outcomes[r.Method] = m
	}
	m[r.Outcome]++
	switch r.Outcome {
	case conduit.OutcomeRefused:
		key := r.Message
		if r.Code != nil {
			key = fmt.Sprintf("%d %s", *r.Code, r.Message)
		}
		in.refusals[key]++
	}
}

func (in *inputMeter) fill(rep *Report) {
	in.mu.Lock()
	defer in.mu.Unlock()
	rep.Input = map[string]map[string]int64{}
	for method, m := range in.outcomes {
		rep.Input[method] = map[string]int64{}
		for k, v := range m {
			rep.Input[method][k] = v
		}
	}
	if len(in.refusals) > 0 {
		rep.Refusals = map[string]int64{}
		for k, v := range in.refusals {
			rep.Refusals[k] = v
		}
	}
	rep.Time.UnattributedInput = Millis(in.unattributed)
}
