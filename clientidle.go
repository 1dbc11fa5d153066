package conduit

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
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

// closingCtx is cancelled once Close (or a keep-alive failure) has begun;
// made on first use, by a renewal or the keep-alive goroutine.
func (c *Client) closingCtx() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing == nil {
		c.closing, c.cancelClosing = context.WithCancel(context.Background())
		if c.aborted.Load() {
			c.cancelClosing()
		}
	}
	return c.closing
}

// abort begins the end: a renewal's dial is aborted, the keep-alive stops,
// and a session that ends is no longer reported as the client's failure.
func (c *Client) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted.Store(true)
	if c.cancelClosing != nil {
		c.cancelClosing()
	}
}

// settings are the Options a Client reads after Connect, under the same
// names: Connect's copy without what only Connect uses (the handlers, in
// the session's runtime already; Handler; ReceivingMiddleware, applied to
// them), 176 bytes a connection. A field of Options that the client reads
// later is added here and in settingsOf.
type settings struct {
	Name, Version, ServerID, ProtocolVersion string
	Assigns                                  map[string]any
	Sampling                                 SamplingOptions
	Elicitation                              ElicitationOptions
	HandlerTimeout, Timeout, MaxTotalTimeout time.Duration
	DiscoverTimeout, KeepAlive               time.Duration
	InputRateLimit, LogRateLimit             rate.Limit
	MaxServerRequests, InputBurst, LogBurst  int
	MaxInboundBytes, MaxWriteQueueBytes      int
	MaxWaitingNotificationBytes              int
	MaxRounds, KeepAliveFailures             int
	Logger                                   *slog.Logger
	Audit                                    func(AuditRecord)
	System                                   *actor.ActorSystem
	SendingMiddleware                        []Middleware
	TracerProvider                           trace.TracerProvider
	Era                                      Era
	Tasks                                    bool
}

func settingsOf(o *Options) settings {
	return settings{
		Name: o.Name, Version: o.Version, ServerID: o.ServerID, ProtocolVersion: o.ProtocolVersion,
		Assigns: o.Assigns, Sampling: o.Sampling, Elicitation: o.Elicitation,
		HandlerTimeout: o.HandlerTimeout, Timeout: o.Timeout, MaxTotalTimeout: o.MaxTotalTimeout,
		DiscoverTimeout: o.DiscoverTimeout, KeepAlive: o.KeepAlive,
		InputRateLimit: o.InputRateLimit, LogRateLimit: o.LogRateLimit,
		MaxServerRequests: o.MaxServerRequests, InputBurst: o.InputBurst, LogBurst: o.LogBurst,
		MaxInboundBytes: o.MaxInboundBytes, MaxWriteQueueBytes: o.MaxWriteQueueBytes,
		MaxWaitingNotificationBytes: o.MaxWaitingNotificationBytes,
		MaxRounds:                   o.MaxRounds, KeepAliveFailures: o.KeepAliveFailures,
		Logger: o.Logger, Audit: o.Audit, System: o.System,
		SendingMiddleware: o.SendingMiddleware, TracerProvider: o.TracerProvider,
		Era: o.Era, Tasks: o.Tasks,
	}
}
