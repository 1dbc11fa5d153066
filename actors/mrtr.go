package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
)

// Modern describes one modern (2026-07-28) call for CallModern.
type Modern struct {
	Method string
	// Params are the request's own params, without _meta.
	Params json.RawMessage
	// Meta returns the _meta members of each request, fresh each round.
	Meta     func() ([]era.Member, error)
	Version  string
	Declared era.Declared
	// Tasks: the tasks extension was declared (a "task" result is valid).
	Tasks bool
	// MaxRounds caps the rounds of one call that are answered with input
	// (0: DefaultMaxRounds): CallModern's input_required results and a
	// modern task's input_required statuses alike (capRounds).
	MaxRounds int
	// StateBackoff is the pause before retrying a state-only result (0:
	// 100 ms).
	StateBackoff time.Duration
	// Manual returns an input_required result that asks for input to the
	// caller, as a KindInputRequired error whose Err is an
	// *messages.InputRequiredError, instead of answering it (a state-only
	// one is still retried).
	Manual bool
	// Responses and State, when set, are the first request's
	// inputResponses and requestState: the caller's answers to a manual
	// round.
	Responses map[string]any
	State     json.RawMessage
	// Legacy runs the rounds on a legacy session: a result that asks for
	// input (era.AsksForInput: inputRequests, with or without requestState,
	// no resultType) is a round, answered through the same pipeline and
	// retried with inputResponses and requestState as a modern round is;
	// any other result ends the call. Meta gives only what a legacy
	// request's _meta carries (the progress token, the trace context).
	// Received is the result of the call's first request when it was
	// already received (a legacy call that turned out to ask for input):
	// the loop starts from it instead of sending.
	Legacy   bool
	Received json.RawMessage
}

// era is the era of m's session, as its inputs' records name it.
func (m Modern) era() messages.Era {
	if m.Legacy {
		return messages.EraLegacy
	}
	return messages.EraModern
}

// CallModern runs a modern call with multi round-trip requests, in the
// caller's goroutine: while the result is input_required it answers the
// input requests through the input pipeline legacy requests take, and
// retries with a new id, the same method and params, a fresh _meta, the
// answers keyed like the latest inputRequests and requestState exactly as
// received. The call's deadline runs across rounds and is paused while input
// is gathered, never beyond MaxTotalTimeout.
func (rt *Runtime) CallModern(ctx context.Context, m Modern, opts CallOptions) (json.RawMessage, error) {
	if m.StateBackoff <= 0 {
		m.StateBackoff = 100 * time.Millisecond
	}
	if err := rt.begin(m.Method, &opts); err != nil {
		return nil, err
	}
	logical := messages.IntID(rt.nextID.Add(1))
	expired := make(chan error, 1)
	rt.post(&logicalStart{id: logical, method: m.Method, timeout: opts.Timeout, maxTotal: opts.MaxTotalTimeout, assigns: opts.Assigns, expired: expired})
	defer rt.post(&logicalEnd{id: logical})
	if m.Legacy && rt.m.sh.traceCall(ctx, logical) {
		// The spans of the server→client requests of its rounds.
		defer rt.m.sh.untraceCall(logical)
	}

	protocolErr := func(format string, args ...any) error {
		return &messages.Error{Kind: messages.KindProtocol, Method: m.Method, Message: fmt.Sprintf(format, args...)}
	}
	own, err := era.ParseParams(m.Params) // read once, written again each round
	if err != nil {
		return nil, &messages.Error{Kind: messages.KindUsage, Method: m.Method, Err: err} // the caller's params
	}
	responses, state := m.Responses, m.State
	if state != nil && messages.FirstByte(state) != '"' {
		return nil, &messages.Error{Kind: messages.KindUsage, Method: m.Method, Message: "requestState must be the JSON string the server sent"}
	}
	for round := 1; ; round++ {
		extra := make([]era.Member, 0, 2)
		if responses != nil {
			b, err := era.MarshalObject(responses)
			if err != nil {
				return nil, protocolErr("input responses could not be encoded: %v", err)
			}
			extra = append(extra, era.Member{Key: "inputResponses", Value: b})
		}
		if state != nil {
			// The bytes as received, never re-escaped: the server may
			// sign or compare them (it was checked to be a JSON string
			// or null below).
			extra = append(extra, era.Member{Key: "requestState", Value: state})
		}
		meta, err := m.Meta()
		if err != nil {
			return nil, &messages.Error{Kind: messages.KindUsage, Method: m.Method, Err: err} // the caller's progress token
		}
		var raw json.RawMessage
		if round == 1 && m.Received != nil {
			raw = m.Received
		} else if raw, err = rt.round(ctx, logical, m.Method, own.With(extra, meta), expired, opts.Header); err != nil {
			return nil, err
		}
		if m.Legacy {
			if !era.AsksForInput(raw) {
				return raw, nil
			}
		} else if kind, err := era.ResultType(raw, m.Method, m.Tasks); err != nil {
			return nil, protocolErr("%v", err)
		} else if kind != era.ResultInputRequired {
			return raw, nil
		}
		ir, err := era.ReadInputRequired(raw)
		if err != nil {
			return nil, protocolErr("malformed input_required result: %v", err)
		}
		if ir.InputRequests == nil && ir.RequestState == nil {
			return nil, protocolErr("input_required result has neither inputRequests nor requestState")
		}
		// Valid JSON that decodes into a string: a string, or null.
		if ir.RequestState != nil && messages.FirstByte(ir.RequestState) != '"' && !messages.IsNull(ir.RequestState) {
			return nil, protocolErr("requestState must be a string")
		}
		if m.Manual && len(ir.InputRequests) > 0 {
			return nil, manualInput(m.Method, ir)
		}
		if err := m.capRounds(round, ir.InputRequests); err != nil {
			rt.m.sh.count().roundsCapped.Add(1)
			return nil, err
		}
		state = ir.RequestState
		if len(ir.InputRequests) == 0 {
			// State only (e.g. load shedding): retry after a short pause.
			responses = nil
			t := time.NewTimer(m.StateBackoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, messages.ContextEnded(ctx, m.Method)
			case err := <-expired:
				t.Stop()
				return nil, err
			}
			continue
		}
		responses, err = rt.gather(ctx, logical, m, ir.InputRequests, expired)
		if err != nil {
			return nil, err
		}
	}
}

// manualInput is the error that gives an input_required result to a
// caller that answers it itself (Modern.Manual).
func manualInput(method string, ir era.InputRequired) error {
	reqs := make(map[string]messages.InputRequest, len(ir.InputRequests))
	for k, raw := range ir.InputRequests {
		r, ok := readInputRequest(raw)
		if !ok || r.Method == "" {
			return &messages.Error{Kind: messages.KindProtocol, Method: method, Message: fmt.Sprintf("input request %q is malformed", k)}
		}
		reqs[k] = messages.InputRequest{Method: r.Method, Params: slices.Clone(r.Params)}
	}
	var state json.RawMessage
	if ir.RequestState != nil && !messages.IsNull(ir.RequestState) {
		state = slices.Clone(ir.RequestState)
	}
	return &messages.Error{Kind: messages.KindInputRequired, Method: method, Message: "the server asks for input (WithManualInput)",
		Err: &messages.InputRequiredError{Method: method, InputRequests: reqs, RequestState: state}}
}

// DefaultMaxRounds is the default of Modern.MaxRounds.
const DefaultMaxRounds = 10

// capRounds is the one round cap of modern input: the error of a call whose
// server still asks for input (inputRequests) after round requests, nil
// while round is under m.MaxRounds (DefaultMaxRounds for 0 or less).
func (m Modern) capRounds(round int, inputRequests map[string]json.RawMessage) error {
	limit := m.MaxRounds
	if limit <= 0 {
		limit = DefaultMaxRounds
	}
	if round < limit {
		return nil
	}
	reqs, _ := json.Marshal(inputRequests)
	return &messages.Error{Kind: messages.KindProtocol, Method: m.Method,
		Message: fmt.Sprintf("still input_required after %d rounds", limit), InputRequests: reqs}
}

// round sends one request of a modern call and waits for its answer. Its
// params are written as they are (Frame.EncodeAsIs): era.Params.With
// made them compact and escaped as json.Marshal would, except the
// requestState, which goes back byte for byte as the server sent it.
func (rt *Runtime) round(ctx context.Context, logical messages.ID, method string, params json.RawMessage, expired chan error, header http.Header) (json.RawMessage, error) {
	m, err := newCallEncoded(messages.IntID(rt.nextID.Add(1)), method, params, (*messages.Frame).EncodeAsIs)
	if err != nil {
		return nil, err
	}
	defer rt.requestHeader(m.id, header)()
	return rt.send(ctx, m, logical, expired, false)
}

// roundAs is round with the request's id given and its params escaped as
// json.Marshal would; bindsTask: see callRequest.
func (rt *Runtime) roundAs(ctx context.Context, id, logical messages.ID, method string, params json.RawMessage, expired chan error, bindsTask bool) (json.RawMessage, error) {
	m, err := newCall(id, method, params)
	if err != nil {
		return nil, err
	}
	return rt.send(ctx, m, logical, expired, bindsTask)
}

// send sends the request m of the logical call and waits for its answer.
func (rt *Runtime) send(ctx context.Context, m *callRequest, logical messages.ID, expired chan error, bindsTask bool) (json.RawMessage, error) {
	id, method := m.id, m.method
	m.logical, m.bindsTask = logical, bindsTask
	reply := m.reply
	rt.post(m)
	select {
	case out := <-reply:
		return rt.outcome(ctx, out)
	case err := <-expired:
		return nil, err
	case <-ctx.Done():
		rt.post(&cancelCall{id: id, reason: "cancelled by the caller"})
		return nil, messages.ContextEnded(ctx, method)
	case <-rt.done:
		return nil, rt.m.life.closedErr(method)
	}
}

// inputRequest is one entry of inputRequests.
type inputRequest struct {
	key    string
	method string
	params json.RawMessage
	round  int // how many input requests its round holds
}

// gather answers one round's input requests through the input pipeline,
// concurrently (at most MaxServerRequests at once); the first failure
// cancels the rest. Every request is checked against the declared
// capabilities before any callback runs. The call's deadline is paused
// meanwhile; when it expires anyway (MaxTotalTimeout) the round ends with
// that error. A round of one input request, the common case, is driven
// from the caller's goroutine: only its handler has a goroutine of its own.
func (rt *Runtime) gather(ctx context.Context, logical messages.ID, m Modern, raw map[string]json.RawMessage, expired chan error) (map[string]any, error) {
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	reqs := make([]inputRequest, 0, len(keys))
	for _, k := range keys {
		r, ok := readInputRequest(raw[k])
		if !ok || r.Method == "" {
			return nil, &messages.Error{Kind: messages.KindProtocol, Method: m.Method, Message: fmt.Sprintf("input request %q is malformed", k)}
		}
		reqs = append(reqs, inputRequest{key: k, method: r.Method, params: r.Params, round: len(keys)})
	}
	if err := rt.refuseUndeclared(m, reqs); err != nil {
		return nil, err
	}

	input, err := rt.inputStarted(m.Method, logical)
	if err != nil {
		return nil, err
	}
	defer rt.post(&inputEnded{input: input})
	grant := &input.grant

	if len(reqs) == 1 {
		res, err := rt.answerInput(ctx, m, reqs[0], grant, expired)
		if ctx.Err() != nil {
			return nil, messages.ContextEnded(ctx, m.Method)
		}
		if err != nil {
			return nil, err
		}
		return map[string]any{reqs[0].key: res}, nil
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(rt.m.sh.ctx, func() { cancel(rt.m.life.closedErr(m.Method)) })
	defer stop()
	g, gctx := errgroup.WithContext(rctx)
	g.SetLimit(rt.cfg.MaxServerRequests)
	var mu sync.Mutex
	answers := make(map[string]any, len(reqs))
	waited := make(chan error, 1)
	go func() { // g.Go blocks at the limit: start the inputs off this goroutine
		for _, r := range reqs {
			g.Go(func() error {
				// Once the round failed, the input is cancelled (and
				// audited) before any handler runs.
				res, err := rt.answerInput(gctx, m, r, grant, nil)
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				answers[r.key] = res
				return nil
			})
		}
		waited <- g.Wait()
	}()
	select {
	case err = <-waited:
	case err = <-expired:
		cancel(err)
		<-waited
	}
	if ctx.Err() != nil {
		return nil, messages.ContextEnded(ctx, m.Method)
	}
	if err != nil {
		return nil, err
	}
	return answers, nil
}

// refuseUndeclared fails a round that asks for a capability the client did
// not declare, naming the first such request, and audits the whole round
// in key order: each undeclared request refused, each other one cancelled
// (no callback runs for it).
func (rt *Runtime) refuseUndeclared(m Modern, reqs []inputRequest) error {
	allowed := func(r inputRequest) bool { return m.Declared.Allows(r.method, m.Version) }
	if !slices.ContainsFunc(reqs, func(r inputRequest) bool { return !allowed(r) }) {
		return nil
	}
	var first error
	for _, r := range reqs {
		rec := messages.AuditRecord{ServerID: rt.cfg.ServerID, Era: m.era(), Method: r.method, Key: r.key}
		if allowed(r) {
			rec.Time, rec.Outcome = time.Now(), guards.OutcomeCancelled
			rt.m.sh.audit(rec, nil)
			continue
		}
		e := rt.m.sh.undeclared(rec)
		if first == nil {
			first = &messages.Error{Kind: messages.KindProtocol, Method: m.Method, RPC: e,
				Message: fmt.Sprintf("input request %q asks for %s, which the client did not declare", r.key, r.method)}
		}
	}
	return first
}

// wireInputRequest is an entry of inputRequests as the wire has it.
type wireInputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

var inputRequestNames = []string{"method", "params"}

// readInputRequest decodes an entry of inputRequests, valid JSON (its
// frame was checked), in one pass when it can and through encoding/json
// otherwise (an escaped or repeated key, a method that is not a plain
// string): the same result either way. Params alias raw.
func readInputRequest(raw []byte) (wireInputRequest, bool) {
	var r wireInputRequest
	fast := jsonscan.Struct(raw, inputRequestNames, func(name string, v []byte) bool {
		if name == "params" {
			r.Params = v
			return true
		}
		var ok bool
		r.Method, ok = jsonscan.String(v)
		return ok
	})
	if fast {
		return r, true
	}
	r = wireInputRequest{}
	return r, json.Unmarshal(raw, &r) == nil
}

// inputStarted pauses the logical call's deadline while its input is
// gathered and returns the input's entry: its grant (its assigns, the
// calls in flight) to read, and what inputEnded takes to end the pause.
// Once the connection is ending there is no grant, and the input is not
// answered.
func (rt *Runtime) inputStarted(method string, logical messages.ID) (*trackedInput, error) {
	reply := make(chan *trackedInput, 1)
	rt.post(&inputStarted{call: logical, reply: reply})
	select {
	case in := <-reply:
		if in != nil {
			return in, nil
		}
	case <-rt.done: // the connection actor is gone: the message was dropped
	}
	return nil, rt.m.life.closedErr(method)
}

// answerInput runs one input request through the pipeline and maps its
// outcome onto the error that ends the call, if any: an error on abort
// (the call's deadline, or the connection's end) ends it with that error.
func (rt *Runtime) answerInput(ctx context.Context, m Modern, r inputRequest, g *inputGrant, abort <-chan error) (any, error) {
	rc := messages.RequestContext{Client: rt.cfg.Name, ServerID: rt.cfg.ServerID, Era: m.era(), Assigns: rt.cfg.Assigns, InputKey: r.key, InputsInRound: r.round}
	in := new(input).init(&rt.m.sh, guards.Input{Method: r.method, Params: r.params, Context: rc, Version: m.Version, Origin: rt.cfg.Origin}, r.key, rt.cfg.handlerTimeout(r.method))
	o, aborted := in.run(ctx, g, abort)
	switch o.ending {
	case answered:
		return o.raw, nil
	case refused:
		return nil, &messages.Error{Kind: messages.KindRefused, Method: m.Method, RPC: o.rpc,
			Message: fmt.Sprintf("input request %q refused", r.key)}
	case failed:
		return nil, &messages.Error{Kind: messages.KindInputHandler, Method: m.Method,
			Message: fmt.Sprintf("input request %q", r.key), Err: o.err}
	case rejected:
		return nil, &messages.Error{Kind: messages.KindInputHandler, Method: m.Method, RPC: o.rpc,
			Message: fmt.Sprintf("input request %q: answer refused", r.key)}
	case timedOut:
		return nil, &messages.Error{Kind: messages.KindInputHandler, Method: m.Method,
			Message: fmt.Sprintf("input request %q: handler timed out after %s", r.key, in.timeout)}
	}
	// Cancelled: the call's deadline or the connection's end (aborted),
	// the caller or a sibling (ctx), else the connection's end.
	switch {
	case aborted != nil:
		return nil, aborted
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	}
	return nil, rt.m.life.closedErr(m.Method)
}
