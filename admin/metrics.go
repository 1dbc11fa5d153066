package admin

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/messages"
)

// MaxToolLabels bounds the tool names one server contributes to the tool
// label: the names of its last tools/list, at most this many; a call to
// any other name is counted under the tool "other".
const MaxToolLabels = 1000

// OtherTool is the tool label of a call to a tool that is not in its
// server's catalog.
const OtherTool = "other"

// Metrics is the Prometheus registry of a host (or a gateway's host): the
// Go runtime and process collectors, the host's servers read at each
// scrape (Host.Status), and what the clients' hooks count (ServerOptions).
// Give ServerOptions to host.Options before the host starts, then Attach
// the host.
type Metrics struct {
	reg *prometheus.Registry

	calls      *prometheus.CounterVec   // server, tool, outcome
	callTime   *prometheus.HistogramVec // server
	inFlight   *prometheus.GaugeVec     // server
	requests   *prometheus.CounterVec   // server, method, outcome
	waiting    *prometheus.GaugeVec     // server, method
	paused     *prometheus.CounterVec   // server, method
	received   *prometheus.CounterVec   // server
	sent       *prometheus.CounterVec   // server
	starts     *prometheus.CounterVec   // server
	streamsOff prometheus.Counter

	mu     sync.Mutex
	tools  map[string]map[string]bool // by server: its last tools/list
	inputs map[*Input]struct{}        // with a handler now
	flying map[string]int             // tool calls in flight, by server
}

// Input is an input request of a server that waits for its handler (a
// person, for conduit host's prompts; the downstream client, for a
// gateway). Never its content.
type Input struct {
	Server string `json:"server"`
	Method string `json:"method"`
	// Session is the session of the call it belongs to, when the call
	// named one (conduit.AssignSession): a gateway's downstream session.
	Session string    `json:"session,omitempty"`
	Since   time.Time `json:"since"`
}

// NewMetrics makes a registry with the Go runtime and process collectors
// and the counters the hooks of ServerOptions feed.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_tool_calls_total",
			Help: "Tool calls sent to a server, by tool (in its catalog, else other) and outcome (ok, tool_error, or the error kind)."}, []string{"server", "tool", "outcome"}),
		callTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "conduit_tool_call_duration_seconds",
			Help:    "Time from sending a tool call to its result or error, input rounds included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"server"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "conduit_tool_calls_in_flight",
			Help: "Tool calls sent to a server and not yet answered."}, []string{"server"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_server_requests_total",
			Help: "Input requests of a server (sampling, elicitation, roots) by outcome: answered, refused (a guard's rule, an undeclared capability or the handler's error), rate_limited, busy, timeout, cancelled."}, []string{"server", "method", "outcome"}),
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "conduit_input_requests_waiting",
			Help: "Input requests of a server waiting for their handler now (a person, or a gateway's downstream client)."}, []string{"server", "method"}),
		paused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_deadline_paused_seconds_total",
			Help: "Time input requests spent with their handler, during which their call's deadline is paused."}, []string{"server", "method"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_server_received_bytes_total",
			Help: "Bytes of JSON the client read from a server: the results of its requests and the params of the server's input requests."}, []string{"server"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_server_sent_bytes_total",
			Help: "Bytes of JSON the client wrote to a server: the params of its requests and its answers to input requests."}, []string{"server"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "conduit_server_starts_total",
			Help: "Starts of a server (each attempt: its process or connection, the handshake, the first tools/list)."}, []string{"server"}),
		streamsOff: prometheus.NewCounter(prometheus.CounterOpts{Name: "conduit_admin_event_streams_refused_total",
			Help: "GET /events refused because MaxEventStreams were open."}),
		tools:  map[string]map[string]bool{},
		inputs: map[*Input]struct{}{},
		flying: map[string]int{},
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls, m.callTime, m.inFlight, m.requests, m.waiting, m.paused, m.received, m.sent, m.starts, m.streamsOff)
	return m
}

// Registry is the registry, for more collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ServerOptions is the host.Options hook: o with a sending middleware
// that counts tool calls and the catalog, a receiving one that times
// input requests, and an Audit hook that counts their outcomes and then
// calls o's own.
func (m *Metrics) ServerOptions(server string, o conduit.Options) conduit.Options {
	o.SendingMiddleware = append(slices.Clip(o.SendingMiddleware), m.sending(server))
	o.ReceivingMiddleware = append(slices.Clip(o.ReceivingMiddleware), m.receiving(server))
	next := o.Audit
	o.Audit = func(r conduit.AuditRecord) {
		m.requests.WithLabelValues(server, inputMethod(r.Method), outcome(r.Outcome)).Inc()
		if next != nil {
			next(r)
		}
	}
	return o
}

// inputMethod bounds the method label to the input methods.
func inputMethod(method string) string {
	switch method {
	case messages.MethodCreateMessage, messages.MethodElicit, messages.MethodListRoots:
		return method
	}
	return "other"
}

// outcome bounds the outcome label to the audit's outcomes.
func outcome(o string) string {
	switch o {
	case conduit.OutcomeAnswered, conduit.OutcomeRefused, conduit.OutcomeTimeout, conduit.OutcomeCancelled, conduit.OutcomeBusy, conduit.OutcomeRateLimited:
		return o
	}
	return "other"
}

func (m *Metrics) sending(server string) conduit.Middleware {
	return func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			m.sent.WithLabelValues(server).Add(float64(len(params)))
			if method != messages.MethodCallTool {
				res, err := next(ctx, method, params)
				m.received.WithLabelValues(server).Add(float64(len(res)))
				if method == messages.MethodListTools && err == nil {
					m.listed(server, params, res)
				}
				return res, err
			}
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(params, &p)
			tool := m.toolLabel(server, p.Name)
			m.fly(server, 1)
			start := time.Now()
			res, err := next(ctx, method, params)
			m.callTime.WithLabelValues(server).Observe(time.Since(start).Seconds())
			m.fly(server, -1)
			m.received.WithLabelValues(server).Add(float64(len(res)))
			m.calls.WithLabelValues(server, tool, callOutcome(res, err)).Inc()
			return res, err
		}
	}
}

// callOutcome is ok, tool_error (a result with isError) or the error's
// kind.
func callOutcome(res json.RawMessage, err error) string {
	if err != nil {
		var ce *conduit.Error
		if errors.As(err, &ce) && ce.Kind != "" {
			return string(ce.Kind)
		}
		return "error"
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(res, &r) == nil && r.IsError {
		return "tool_error"
	}
	return "ok"
}

// listed keeps the names of a tools/list page as the server's catalog: the
// first page (no cursor) replaces it, the next ones add to it.
func (m *Metrics) listed(server string, params, res json.RawMessage) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(params, &p)
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(res, &r) != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.tools[server]
	if p.Cursor == "" || set == nil {
		set = map[string]bool{}
		m.tools[server] = set
	}
	for _, t := range r.Tools {
		if len(set) >= MaxToolLabels {
			break
		}
		set[t.Name] = true
	}
}

func (m *Metrics) toolLabel(server, tool string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tools[server][tool] {
		return tool
	}
	return OtherTool
}

func (m *Metrics) receiving(server string) conduit.Middleware {
	return func(next conduit.MethodHandler) conduit.MethodHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			if inputMethod(method) == "other" { // a notification or a log entry
				return next(ctx, method, params)
			}
			m.received.WithLabelValues(server).Add(float64(len(params)))
			in := &Input{Server: server, Method: method, Since: time.Now()}
			if rc, ok := conduit.InputContext(ctx); ok {
				in.Session, _ = rc.Assigns[conduit.AssignSession].(string)
			}
			m.mu.Lock()
			m.inputs[in] = struct{}{}
			m.mu.Unlock()
			waiting := m.waiting.WithLabelValues(server, method)
			waiting.Inc()
			defer func() {
				waiting.Dec()
				m.paused.WithLabelValues(server, method).Add(time.Since(in.Since).Seconds())
				m.mu.Lock()
				delete(m.inputs, in)
				m.mu.Unlock()
			}()
			res, err := next(ctx, method, params)
			m.sent.WithLabelValues(server).Add(float64(len(res)))
			return res, err
		}
	}
}

// Waiting returns the input requests waiting for their handler now, the
// oldest first.
func (m *Metrics) Waiting() []Input {
	m.mu.Lock()
	out := make([]Input, 0, len(m.inputs))
	for in := range m.inputs {
		out = append(out, *in)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Input) int { return a.Since.Compare(b.Since) })
	return out
}

// inFlightOf returns the tool calls in flight to server.
func (m *Metrics) inFlightOf(server string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.flying[server]
}

// fly adds d to the calls in flight to server.
func (m *Metrics) fly(server string, d int) {
	m.mu.Lock()
	m.flying[server] += d
	if m.flying[server] == 0 {
		delete(m.flying, server)
	}
	m.mu.Unlock()
	m.inFlight.WithLabelValues(server).Add(float64(d))
}

// hostCollector reads the host's servers at each scrape.
type hostCollector struct {
	h                                    Source
	state, restarts, tools, drops, stuck *prometheus.Desc
	variants, variantsRefused            *prometheus.Desc
}

// states are the values of the state label.
var states = []host.State{host.StateStarting, host.StateReady, host.StateRestarting, host.StateParked, host.StateStopped}

func newHostCollector(h Source) *hostCollector {
	return &hostCollector{
		h: h,
		state: prometheus.NewDesc("conduit_server_state",
			"1 for the state a server is in (starting, ready, restarting, parked, stopped), 0 for the others.", []string{"server", "state"}, nil),
		restarts: prometheus.NewDesc("conduit_server_restarts_total",
			"Restarts of a server since its supervisor started (the host's start, a restart by hand, a change of its configuration).", []string{"server"}, nil),
		tools: prometheus.NewDesc("conduit_server_tools",
			"Tools of a ready server in the catalog.", []string{"server"}, nil),
		drops: prometheus.NewDesc("conduit_server_messages_dropped_total",
			"Messages of a server's current connection dropped, by kind: notification (1000 waiting), log (over the rate limit), discarded (waiting at close), write_queue (connections closed: the server stopped reading), malformed, unknown_response, unsubscribed.", []string{"server", "kind"}, nil),
		stuck: prometheus.NewDesc("conduit_server_abandoned_handlers",
			"Callbacks that ignored their context and still run after Conduit stopped waiting for them.", []string{"server"}, nil),
		variants: prometheus.NewDesc("conduit_server_variants",
			"Connections a legacy server runs for its callers' capability sets, beside its main one (host variants).", []string{"server"}, nil),
		variantsRefused: prometheus.NewDesc("conduit_server_variants_refused_total",
			"Calls refused because the server ran as many variants as it may, each with a call in flight.", []string{"server"}, nil),
	}
}

func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.state
	ch <- c.restarts
	ch <- c.tools
	ch <- c.drops
	ch <- c.stuck
	ch <- c.variants
	ch <- c.variantsRefused
}

func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.h.Status() {
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, st.Server, string(s))
		}
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(st.Restarts), st.Server)
		ch <- prometheus.MustNewConstMetric(c.tools, prometheus.GaugeValue, float64(st.Tools), st.Server)
		for _, d := range []struct {
			kind string
			n    int64
		}{
			{"notification", st.Stats.NotificationsDropped},
			{"log", st.Stats.LogsDropped},
			{"discarded", st.Stats.NotificationsDiscarded},
			{"write_queue", st.Stats.WriteQueueOverflows},
			{"malformed", st.Stats.Malformed},
			{"unknown_response", st.Stats.UnknownResponses},
			{"unsubscribed", st.Stats.Unsubscribed},
		} {
			ch <- prometheus.MustNewConstMetric(c.drops, prometheus.CounterValue, float64(d.n), st.Server, d.kind)
		}
		ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, float64(st.Stats.AbandonedHandlers), st.Server)
		ch <- prometheus.MustNewConstMetric(c.variants, prometheus.GaugeValue, float64(len(st.Variants)), st.Server)
		ch <- prometheus.MustNewConstMetric(c.variantsRefused, prometheus.CounterValue, float64(st.VariantsRefused), st.Server)
	}
}
