// Package guards holds the safety checks applied around every input request
// (sampling, elicitation, roots), in both eras, before and after the user's
// callback. It is plain code: no goroutines, no actors. The legacy path (a
// request child) and the modern path (MRTR in the caller's goroutine) call
// the same Pipeline, so each rule is written once.
//
// docs/safety.md lists every check, the code it answers with and the spec
// text behind it.
//
// The actors import it; a host does not need to (the audit outcomes and
// CheckField are re-exported by the root package conduit). Import it to run
// a check on its own, for instance in a test of a server's forms.
package guards

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
)

// Outcomes recorded for an input request (see the audit hook).
const (
	OutcomeAnswered    = "answered"
	OutcomeRefused     = "refused"
	OutcomeTimeout     = "timeout"
	OutcomeCancelled   = "cancelled"
	OutcomeBusy        = "busy"
	OutcomeRateLimited = "rate_limited"
)

// Defaults of the zero Config.
const (
	DefaultInputRate         rate.Limit = 10 // input requests per second, per server
	DefaultInputBurst                   = 20
	DefaultMaxTokens                    = 4096
	DefaultMaxToolIterations            = 5
	DefaultRejectionCode                = messages.CodeSamplingRejected // -1
)

// Refusal is a guard's "no": the JSON-RPC error the server gets (legacy), or
// that a modern call fails with, and the outcome to record. It is an error
// that unwraps to Err, whose Cause is the typed reason when there is one (a
// *messages.FieldError when an elicitation answer does not fit its form),
// so errors.As finds it through either.
type Refusal struct {
	Err     *messages.RPCError
	Outcome string // OutcomeRefused or OutcomeRateLimited
}

func (r *Refusal) Error() string { return r.Err.Error() }

// Unwrap exposes Err.
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(code int, format string, args ...any) *Refusal {
	return &Refusal{Err: &messages.RPCError{Code: code, Message: fmt.Sprintf(format, args...)}, Outcome: OutcomeRefused}
}

func invalidParams(format string, args ...any) *Refusal {
	return refuse(messages.CodeInvalidParams, "Invalid params: "+format, args...)
}

func internalError(format string, args ...any) *Refusal {
	return refuse(messages.CodeInternalError, "Internal error: "+format, args...)
}

// Input is one input request as it reaches the guards: after the capability
// check, before any callback. Pass the same *Input to Before and After: Before
// caches what After needs (the compiled form schema) in it.
type Input struct {
	// Method is sampling/createMessage, elicitation/create or roots/list.
	Method string
	// Params are the params exactly as the server sent them.
	Params json.RawMessage
	// Context is filled by the caller (client, server id, era, assigns,
	// related request id).
	Context messages.RequestContext
	// Version is the negotiated protocol version.
	Version string
	// CallsInFlight is how many client calls are in flight (the sampling
	// idle rule).
	CallsInFlight int
	// Origin is the server's origin (scheme://host[:port]) as the transport
	// reports it, or "" when unknown.
	Origin string
	// Invited marks a roots/list the client asked for: the first after
	// its notifications/roots/list_changed. It spends no budget.
	Invited bool
	// ParamsValid says Params are valid JSON already (a member of a frame
	// the caller decoded, which checked the whole frame): the decoders do
	// not check them a second time. Set it for nothing else.
	ParamsValid bool

	// form is the elicitation form Before parsed and compiled, reused by
	// After (compiled once per request).
	form *Form
}

// Config configures a Pipeline. The zero value is usable: every limit takes
// its default (docs/input-handling.md).
type Config struct {
	Sampling    SamplingConfig
	Elicitation ElicitationConfig
	// InputRate and InputBurst limit the input requests (all three methods
	// together) of the one server the Pipeline serves. InputRate <= 0 means
	// 10 per second (rate.Inf disables the limit); InputBurst <= 0 means 20.
	InputRate  rate.Limit
	InputBurst int
	// Logger receives one record per dropped root (and nothing else); nil
	// discards.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero setting replaced by its default.
func (c Config) WithDefaults() Config {
	c.Sampling = c.Sampling.WithDefaults()
	c.Elicitation = c.Elicitation.WithDefaults()
	if c.InputRate <= 0 {
		c.InputRate = DefaultInputRate
	}
	if c.InputBurst <= 0 {
		c.InputBurst = DefaultInputBurst
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// SamplingConfig holds the sampling rules' settings.
type SamplingConfig struct {
	MaxTokens         int  // clamp for maxTokens; 0 means 4096
	Context           bool // allow includeContext other than "none"
	AllowIdle         bool // allow legacy sampling while no call is in flight
	MaxToolIterations int  // 0 means 5
	RejectionCode     int  // 0 means -1
	Tools             bool // sampling.tools was declared
}

// WithDefaults returns c with every zero (or negative) limit replaced by its
// default.
func (c SamplingConfig) WithDefaults() SamplingConfig {
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxToolIterations <= 0 {
		c.MaxToolIterations = DefaultMaxToolIterations
	}
	if c.RejectionCode == 0 {
		c.RejectionCode = DefaultRejectionCode
	}
	return c
}

// ElicitationConfig holds the elicitation rules' settings.
type ElicitationConfig struct {
	Modes  []string // declared modes; empty means form only
	Origin string   // the server's origin when the transport cannot tell
}

// WithDefaults returns c with Modes defaulted to ["form"]. The slice is
// copied, so the caller may reuse its own.
func (c ElicitationConfig) WithDefaults() ElicitationConfig {
	if len(c.Modes) == 0 {
		c.Modes = []string{messages.ModeForm}
	} else {
		c.Modes = append([]string(nil), c.Modes...)
	}
	return c
}

// Pipeline runs the checks for one server connection. It is safe for
// concurrent use: its settings never change after New, the limiter, the
// counter and the form cache are synchronised, and per-request state lives
// in the Input.
type Pipeline struct {
	cfg      Config
	limiter  *rate.Limiter // nil when InputRate is rate.Inf: no budget, no clock read
	withheld atomic.Int64
	forms    formCache
	// now is the limiter's clock; tests replace it.
	now func() time.Time
}

// New returns a Pipeline for cfg.
func New(cfg Config) *Pipeline {
	cfg = cfg.WithDefaults()
	p := &Pipeline{cfg: cfg, now: time.Now}
	if cfg.InputRate != rate.Inf {
		p.limiter = rate.NewLimiter(cfg.InputRate, cfg.InputBurst)
	}
	return p
}

// Config returns the Pipeline's settings, defaults filled in.
func (p *Pipeline) Config() Config {
	c := p.cfg
	c.Elicitation.Modes = append([]string(nil), c.Elicitation.Modes...)
	return c
}

// RootsWithheld is how many roots After has withheld from the server so
// far (not file://, not on the local host, or unparsable).
func (p *Pipeline) RootsWithheld() int64 { return p.withheld.Load() }

// Before decodes and checks in. It returns the value the handler receives
// (*messages.SamplingRequest, *messages.ElicitationRequest or
// *messages.RootsRequest), or the refusal to send instead of calling it.
//
// The budget is checked first: a request over it is refused without being
// decoded. A method other than the three input methods is refused with
// -32601 and does not spend budget, nor does an Invited roots/list.
func (p *Pipeline) Before(in *Input) (any, *Refusal) {
	switch in.Method {
	case messages.MethodCreateMessage, messages.MethodElicit, messages.MethodListRoots:
	default:
		return nil, refuse(messages.CodeMethodNotFound, "Method not found: %s", in.Method)
	}
	// A roots/list the client's own notifications/roots/list_changed
	// asked for is not charged.
	if invited := in.Invited && in.Method == messages.MethodListRoots; !invited {
		if r := p.budget(in.Method); r != nil {
			return nil, r
		}
	}
	switch in.Method {
	case messages.MethodCreateMessage:
		return p.beforeSampling(in)
	case messages.MethodElicit:
		return p.beforeElicitation(in)
	default:
		if r := checkObject(in.Params); r != nil {
			return nil, r
		}
		return &messages.RootsRequest{RequestContext: in.Context}, nil
	}
}

// budget spends one token of the server's input budget.
func (p *Pipeline) budget(method string) *Refusal {
	if p.limiter == nil || p.limiter.AllowN(p.now(), 1) {
		return nil
	}
	return RateLimited(method, p.cfg.Sampling.RejectionCode)
}

// RateLimited is the refusal of an input request over an input budget (a
// server's, or a gateway's downstream session's): samplingCode (0: -1) for
// sampling, -32000 for the other methods; its outcome is rate_limited.
func RateLimited(method string, samplingCode int) *Refusal {
	var r *Refusal
	if method == messages.MethodCreateMessage {
		r = refuse(cmp.Or(samplingCode, DefaultRejectionCode), "Sampling rejected: rate limited")
	} else {
		r = refuse(messages.CodeBusy, "rate limited")
	}
	r.Outcome = OutcomeRateLimited
	return r
}

// After checks the handler's answer to req and returns the result to send:
// a copy when it is filtered or completed (never the handler's own value
// mutated), else the handler's value itself.
func (p *Pipeline) After(in *Input, req any, result any) (any, *Refusal) {
	switch r := result.(type) {
	case *messages.CreateMessageResult:
		return p.afterSampling(r)
	case *messages.ElicitResult:
		return p.afterElicitation(in, req, r)
	case *messages.ListRootsResult:
		return p.afterRoots(in, r)
	case nil:
		return nil, internalError("handler returned no result")
	}
	return nil, internalError("handler returned an unexpected %T", result)
}

// decode unmarshals params (absent params decode as {}) and turns a type
// mismatch into -32602.
func decode(raw json.RawMessage, v any) *Refusal {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return invalidParams("%v", err)
	}
	return nil
}

// checkObject refuses params that are present but not a JSON object: it
// accepts what rawFields accepts (absent params, null, any object) without
// splitting the object.
func checkObject(raw json.RawMessage) *Refusal {
	if len(raw) == 0 || jsonscan.Valid(raw) && (messages.FirstByte(raw) == '{' || messages.IsNull(raw)) {
		return nil
	}
	return invalidParams("params must be an object")
}

// rawFields splits params into their top-level members (absent or null
// params are {}), in one scan when messages.Members can.
func rawFields(raw json.RawMessage) (map[string]json.RawMessage, *Refusal) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]json.RawMessage{}, nil
	}
	if fields, ok := messages.Members(raw); ok {
		return fields, nil
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, invalidParams("params must be an object")
	}
	return fields, nil
}

// present reports whether key is in fields with a non-null value.
func present(fields map[string]json.RawMessage, key string) bool {
	v, ok := fields[key]
	return ok && given(v)
}

// given reports whether a decoded member holds a value other than null.
func given(v json.RawMessage) bool { return len(v) > 0 && !messages.IsNull(v) }
