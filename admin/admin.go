// Package admin is the admin listener of conduit host and conduit gateway
// (--admin ADDR): Prometheus metrics at /metrics, /healthz and /readyz,
// and a status page at / that server-sent events at /events keep live.
// It serves those five paths and nothing else (docs/operations.md).
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/internal/loopback"
)

// Defaults of Options.
const (
	// DefaultRecentEvents is how many recent events the page shows.
	DefaultRecentEvents = 50
	// DefaultMaxEventStreams bounds the GET /events streams open at once.
	DefaultMaxEventStreams = 16
	// eventWriteTimeout ends an event stream whose client stopped reading.
	eventWriteTimeout = 10 * time.Second
)

// Options configure a Server.
type Options struct {
	// Token, when set, is the bearer token every request must carry
	// (Authorization: Bearer TOKEN); others get 401.
	Token string
	// Event renders a host event as /events sends it, as JSON: conduit
	// host --json's object. nil sends host.Event as it marshals.
	Event func(host.Event) any
	// Sessions, when set, counts a gateway's open downstream sessions
	// (conduit_gateway_sessions_open).
	Sessions func() int
	// SessionStats, when set, reads a gateway's session counters
	// (gateway.SessionStats' ClosedBy and RefusedBy):
	// conduit_gateway_sessions_closed_total by reason and
	// conduit_gateway_session_refusals_total by limit.
	SessionStats func() (closed, refused map[string]int64)
	// ClusterStats, when set, reads a cluster member's counters
	// (conduit gateway --cluster): conduit_cluster_*.
	ClusterStats func() ClusterStats
	// RecentEvents is how many events the page keeps
	// (DefaultRecentEvents).
	RecentEvents int
	// MaxEventStreams bounds the /events streams open at once
	// (DefaultMaxEventStreams); past it, 503.
	MaxEventStreams int
	// Title names what the page shows ("conduit host").
	Title  string
	Logger *slog.Logger
}

// Server serves a host's admin paths. Close it before the host.
type Server struct {
	h    Source
	m    *Metrics
	opts Options

	metrics http.Handler
	recent  *recent
	streams chan struct{} // one slot per open /events stream
	cancel  func()
	done    chan struct{}
}

// Source is what a Server serves: a *host.Host, or a cluster member's
// view of the cluster's servers (package cluster). Its methods are safe
// for concurrent use.
type Source interface {
	Subscribe() (<-chan host.Event, func())
	Readiness() []host.NotReady
	Status() []host.Status
	Tools() []host.Tool
}

var _ Source = (*host.Host)(nil)

// New serves h, whose host.Options.ServerOptions was m.ServerOptions. It
// follows h's events (the page's recent events, the starts counter) until
// Close.
func New(h Source, m *Metrics, opts Options) *Server {
	if opts.RecentEvents <= 0 {
		opts.RecentEvents = DefaultRecentEvents
	}
	if opts.MaxEventStreams <= 0 {
		opts.MaxEventStreams = DefaultMaxEventStreams
	}
	if opts.Event == nil {
		opts.Event = defaultEvent
	}
	if opts.Title == "" {
		opts.Title = "conduit host"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m.reg.MustRegister(newHostCollector(h))
	if opts.Sessions != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "conduit_gateway_sessions_open",
			Help: "Downstream sessions of the gateway open now."}, func() float64 { return float64(opts.Sessions()) }))
	}
	if opts.SessionStats != nil {
		m.reg.MustRegister(sessionCollector(opts.SessionStats))
	}
	if opts.ClusterStats != nil {
		m.reg.MustRegister(clusterCollector(opts.ClusterStats))
	}
	s := &Server{
		h: h, m: m, opts: opts,
		metrics: promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
		recent:  &recent{max: opts.RecentEvents},
		streams: make(chan struct{}, opts.MaxEventStreams),
		done:    make(chan struct{}),
	}
	events, cancel := h.Subscribe()
	s.cancel = cancel
	go s.follow(events)
	return s
}

// follow counts starts and keeps the recent events. A server's first
// event is its state when the subscription began, which may be past its
// first start (the host starts its servers as it is made): the starts
// until then are its restarts and the first.
func (s *Server) follow(events <-chan host.Event) {
	defer close(s.done)
	seen := map[string]bool{}
	for ev := range events {
		switch {
		case !seen[ev.Server]:
			seen[ev.Server] = true
			if ev.State != host.StateStopped {
				s.m.starts.WithLabelValues(ev.Server).Add(float64(ev.Restarts + 1))
			}
		case ev.State == host.StateStarting:
			s.m.starts.WithLabelValues(ev.Server).Inc()
		}
		s.recent.add(ev)
	}
}

// Close stops following the host's events.
func (s *Server) Close() {
	s.cancel()
	<-s.done
}

// Handler serves /metrics, /healthz, /readyz, / and /events (GET or HEAD),
// each behind the bearer token when there is one; any other path is 404.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", s.ready)
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /events", s.events)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token != "" && !bearer(r, s.opts.Token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="conduit-admin"`)
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		if s.opts.Token == "" && !loopback.Is(loopback.Host(r.Host)) {
			// Only a loopback listener has no token: a Host that is not
			// loopback is a page of another site rebinding its name.
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not loopback", r.Host), http.StatusForbidden)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// Readiness is the body of /readyz.
type Readiness struct {
	Ready    bool            `json:"ready"`
	NotReady []host.NotReady `json:"not_ready"`
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	rd := Readiness{NotReady: s.h.Readiness()}
	if rd.NotReady == nil {
		rd.NotReady = []host.NotReady{}
	}
	rd.Ready = len(rd.NotReady) == 0
	w.Header().Set("Content-Type", "application/json")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rd)
}

// events streams the host's events as server-sent events, one JSON object
// each (Options.Event): first one per server for its current state, then
// each change, as conduit host --json prints them.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		s.m.streamsOff.Inc()
		http.Error(w, fmt.Sprintf("Service Unavailable: %d event streams are open already", cap(s.streams)), http.StatusServiceUnavailable)
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	events, cancel := s.h.Subscribe()
	defer cancel()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			b, err := json.Marshal(s.opts.Event(ev))
			if err != nil {
				continue
			}
			_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
			if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

// recent keeps the last max events.
type recent struct {
	mu     sync.Mutex
	max    int
	events []host.Event
}

func (r *recent) add(ev host.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == r.max {
		r.events = append(r.events[:0], r.events[1:]...)
	}
	r.events = append(r.events, ev)
}

// list returns the events kept, the newest first.
func (r *recent) list() []host.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]host.Event, len(r.events))
	for i, ev := range r.events {
		out[len(out)-1-i] = ev
	}
	return out
}

func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// CheckListen refuses to serve the admin listener on addr, a host:port,
// anywhere but a loopback address unless a bearer token is required.
func CheckListen(addr, token string) error {
	where, err := loopback.Beyond(addr)
	if err != nil {
		return fmt.Errorf("admin address %q: %w", addr, err)
	}
	if where == "" || token != "" {
		return nil
	}
	return fmt.Errorf("refusing to serve the admin listener on %s (%s) without a bearer token: set --admin-token or CONDUIT_ADMIN_TOKEN, or use 127.0.0.1", addr, where)
}

// sessionCollector reads a gateway's session counters at each scrape.
type sessionCollector func() (closed, refused map[string]int64)

var (
	sessionsClosedDesc = prometheus.NewDesc("conduit_gateway_sessions_closed_total",
		"Downstream sessions of the gateway closed, by reason: deleted (the client's DELETE), idle (the idle timeout), disconnected (stdio), failed (its actor panicked; its calls failed with -32603).", []string{"reason"}, nil)
	sessionRefusalsDesc = prometheus.NewDesc("conduit_gateway_session_refusals_total",
		"Requests refused by a downstream session's limits: calls (in flight at once, -32000), inputs (its input budget, refused upstream as rate limited).", []string{"limit"}, nil)
)

func (c sessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- sessionsClosedDesc
	ch <- sessionRefusalsDesc
}

func (c sessionCollector) Collect(ch chan<- prometheus.Metric) {
	closed, refused := c()
	for reason, n := range closed {
		ch <- prometheus.MustNewConstMetric(sessionsClosedDesc, prometheus.CounterValue, float64(n), reason)
	}
	for limit, n := range refused {
		ch <- prometheus.MustNewConstMetric(sessionRefusalsDesc, prometheus.CounterValue, float64(n), limit)
	}
}
