package conduit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/guards"
)

// What a Client makes only when it is used (decision 60): an idle
// connection pays for none of it.

// closedChan is the done channel of a client that ended before anyone
// asked for it.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// doneChan is Done's channel, made on first use.
func (c *Client) doneChan() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

// finish marks the client ended and closes its done channel; later calls
// do nothing.
func (c *Client) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		return
	}
	c.finished = true
	if c.done == nil {
		c.done = closedChan
	} else {
		close(c.done)
	}
}

// rare is what a Client makes only when it needs it: the counters of the
// sessions renewed away, the keep-alive goroutine's WaitGroup, and the
// ctx a renewal's dial or the keep-alive ends with. Guarded by mu.
type rare struct {
	// past sums the counters of the sessions renewed away (their
	// AbandonedHandlers left out: it is a gauge, read live from lingering).
	past Stats
	// lingering are sessions renewed away whose abandoned handlers were
	// still running: they count in AbandonedHandlers until they return.
	lingering []*actors.Runtime
	// keeper counts the keep-alive goroutine (Options.KeepAlive).
	keeper sync.WaitGroup
	// closing is cancelled by Close (aborted); made by closingCtx.
	closing       context.Context
	cancelClosing context.CancelFunc
}

// rareLocked is c.rare, made on first use. Called with mu held.
func (c *Client) rareLocked() *rare {
	if c.rare == nil {
		c.rare = new(rare)
	}
	return c.rare
}

// waitKeepAlive waits for the keep-alive goroutine, when there is one.
func (c *Client) waitKeepAlive() {
	c.mu.Lock()
	r := c.rare
	c.mu.Unlock()
	if r != nil {
		r.keeper.Wait()
	}
}

// closingCtx is cancelled once Close (or a keep-alive failure) has begun;
// made on first use, by a renewal or the keep-alive goroutine.
func (c *Client) closingCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.rareLocked()
	if r.closing == nil {
		r.closing, r.cancelClosing = context.WithCancel(context.Background())
		if c.aborted.Load() {
			r.cancelClosing()
		}
	}
	return r.closing
}

// abort begins the end: a renewal's dial is aborted, the keep-alive stops,
// and a session that ends is no longer reported as the client's failure.
func (c *Client) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted.Store(true)
	if r := c.rare; r != nil && r.cancelClosing != nil {
		r.cancelClosing()
	}
}

// settings are the Options a Client reads after Connect, under the same
// names: Connect's copy without the handlers (in the session's runtime
// already), Handler and ReceivingMiddleware (applied to them), and what
// only the runtime and its guards read (their Config holds it: a renewal
// takes it from the lost session's, dialConfigOf). 304 bytes a connection
// less than Options. A field of Options that the client reads later is
// added here and in settingsOf.
type settings struct {
	Name, Version, ServerID, ProtocolVersion string
	Assigns                                  map[string]any
	Elicitation                              ElicitationOptions
	Timeout, MaxTotalTimeout                 time.Duration
	DiscoverTimeout, KeepAlive               time.Duration
	MaxRounds, KeepAliveFailures             int
	Logger                                   *slog.Logger
	SendingMiddleware                        []Middleware
	TracerProvider                           trace.TracerProvider
	Era                                      Era
	// Options.Tasks is the Client's declared.Tasks (decision 75: a copy
	// here padded the Client into the 416-byte class).
}

func settingsOf(o *Options) settings {
	return settings{
		Name: o.Name, Version: o.Version, ServerID: o.ServerID, ProtocolVersion: o.ProtocolVersion,
		Assigns: o.Assigns, Elicitation: o.Elicitation,
		Timeout: o.Timeout, MaxTotalTimeout: o.MaxTotalTimeout,
		DiscoverTimeout: o.DiscoverTimeout, KeepAlive: o.KeepAlive,
		MaxRounds: o.MaxRounds, KeepAliveFailures: o.KeepAliveFailures,
		Logger: o.Logger, SendingMiddleware: o.SendingMiddleware, TracerProvider: o.TracerProvider,
		Era: o.Era,
	}
}

// dialConfig is what dial starts a runtime with, but for what the
// connection gives (its Conn, its origin and the guards made with it).
type dialConfig struct {
	rt     actors.Config
	guards guards.Config
}

// dialConfig is Connect's: from opts, with the handlers h.
func (c *Client) dialConfig(opts *Options, h Handlers) dialConfig {
	return dialConfig{
		guards: guards.Config{
			Sampling: guards.SamplingConfig{
				MaxTokens: opts.Sampling.MaxTokens, Context: opts.Sampling.Context, AllowIdle: opts.Sampling.AllowIdle,
				MaxToolIterations: opts.Sampling.MaxToolIterations, RejectionCode: opts.Sampling.RejectionCode,
				Tools: c.declared.SamplingTools,
			},
			Elicitation: guards.ElicitationConfig{Modes: c.declared.ElicitModes},
			InputRate:   opts.InputRateLimit,
			InputBurst:  opts.InputBurst,
			Logger:      opts.Logger,
		},
		rt: actors.Config{
			Handlers: h, Declared: c.declared,
			Name: opts.Name, ServerID: opts.ServerID, Assigns: opts.Assigns,
			HandlerTimeout: opts.HandlerTimeout, MaxServerRequests: opts.MaxServerRequests,
			LogRate: opts.LogRateLimit, LogBurst: opts.LogBurst,
			MaxInboundBytes: opts.MaxInboundBytes, MaxWaitingNotificationBytes: opts.MaxWaitingNotificationBytes,
			Logger: opts.Logger, Audit: opts.Audit,
			System: opts.System, MaxWriteQueueBytes: opts.MaxWriteQueueBytes,
			OnChange: c.listChanged, Tracer: c.tracer,
		},
	}
}

// dialConfigOf is a renewal's: the settings the lost session's runtime
// and guards were started with (their defaults filled in, which are
// filled in again to the same).
func dialConfigOf(rt *actors.Runtime) dialConfig {
	cfg := rt.Config()
	return dialConfig{rt: cfg, guards: cfg.Guards.Config()}
}

// discardLogger is the Logger of every client that sets none.
var discardLogger = slog.New(slog.DiscardHandler)
