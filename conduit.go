// Package conduit is an MCP client runtime for Go hosts (agents, IDEs,
// gateways): [Connect] reaches one server over a [transport.Transport]
// and returns a [Client] whose calls ([Client.CallTool], [Client.ReadResource],
// [Client.GetPrompt] …) answer, while they run, the server's requests for
// input (sampling, elicitation, roots) through the [Handlers] set in
// [Options], safely and on time, on supervised actors. For many servers,
// supervised and restarted, use package host.
//
// Start with the examples (go doc -ex, or pkg.go.dev): Connect's (a
// sampling handler), Handlers' (roots and elicitation) and Options.System's
// (the client's actors in your own protoactor system); host.New's for a
// host built from code.
//
// The host answers through a handler set ([Options].Handlers: one typed
// function per kind, nil for a kind it does not implement) or a value
// implementing any of [SamplingHandler], [ElicitationHandler] (with
// [ElicitationModer]), [RootsLister], [NotificationHandler] and
// [LogHandler] ([Options].Handler). The client advertises exactly the
// capabilities implemented, and [Capabilities] says which and why. Calls
// take options ([CallOption]): [WithTimeout] (its clock pauses while input is
// gathered) and [WithMaxTotalTimeout] (the whole call). Errors are
// [*Error] with a [Kind].
//
// Everyday use needs this package and package transport (how to reach the
// server): the wire types, sentinel errors, error codes, content helpers and
// audit outcomes are re-exported here, as aliases, from package messages,
// which implements them; each alias's doc lists what a user reads of it.
package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/transport"
)

// Wire and API types, defined in package messages and re-exported here.
type (
	// Error is [messages.Error], the error of every call: Kind (switch
	// on it), Method, Message, RPC (the server's JSON-RPC error, or the
	// code a guard refused with), Active and Paused (how long the call was
	// in flight, and how much of it its deadline was paused while input
	// was gathered), InputRequests (a modern call that gave up: the last
	// ones the server sent), ConnectionEnded (see ErrConnectionEnded), and
	// Err (the cause, for errors.Is and errors.As).
	Error = messages.Error
	// Kind is [messages.Kind]: which of the Kind… constants an [Error] is.
	Kind = messages.Kind
	// RPCError is [messages.RPCError], a JSON-RPC error: Code, Message,
	// Data (raw JSON), Cause. errors.Is compares codes (see ErrMethodNotFound).
	RPCError = messages.RPCError
	// ID is [messages.ID], a JSON-RPC request id (number or string).
	ID = messages.ID
	// Era is [messages.Era]: EraLegacy (initialize) or EraModern
	// (server/discover, stateless requests).
	Era = messages.Era
	// Stats is [messages.Stats], the counters of [Client.Stats]: every
	// drop, refusal and bound that bit (see its fields there).
	Stats = messages.Stats
	// AuditRecord is [messages.AuditRecord], what [Options].Audit receives
	// for every input request, with its outcome.
	AuditRecord = messages.AuditRecord
	// RequestContext is [messages.RequestContext], embedded in every input
	// request: Client (Options.Name), ServerID (Options.ServerID, to route
	// the request), Era, Assigns (those of the related call, see
	// WithAssigns), RelatedRequestID and RequestID.
	RequestContext = messages.RequestContext
	// SamplingRequest is [messages.SamplingRequest], what a sampling
	// handler gets: RequestContext, Params (the guarded
	// [messages.CreateMessageParams]: Messages, SystemPrompt, MaxTokens,
	// ModelPreferences, Tools …) and Raw (the bytes the server sent).
	SamplingRequest = messages.SamplingRequest
	// ElicitationRequest is [messages.ElicitationRequest], what an
	// elicitation handler gets: RequestContext; Mode ("form" or "url");
	// for a form, Form (the typed fields, in order: build the UI from it;
	// see [FormField], [CheckField]) and Fields (flags by name); for a URL,
	// URL, Host, IDN, OriginMismatch, WrittenHost and HostMapped (what to
	// warn about); Params and Raw as the server sent them.
	ElicitationRequest = messages.ElicitationRequest
	// RootsRequest is [messages.RootsRequest], what a roots handler gets:
	// its RequestContext alone.
	RootsRequest = messages.RootsRequest
	// NotificationContext is [messages.NotificationContext], passed to the
	// notification and log hooks: Client, ServerID, Era.
	NotificationContext = messages.NotificationContext
	// FieldInfo is [messages.FieldInfo], a form field's flags:
	// SensitiveSuspected (the field seems to ask for a secret).
	FieldInfo = messages.FieldInfo
	// CreateMessageResult is [messages.CreateMessageResult], a sampling
	// handler's answer: Role ("assistant"), Content (see [Text]), Model,
	// StopReason, Meta.
	CreateMessageResult = messages.CreateMessageResult
	// ElicitResult is [messages.ElicitResult], an elicitation handler's
	// answer: Action (ActionAccept, ActionDecline, ActionCancel), Content
	// (the form's values by field name, accept only), Meta.
	ElicitResult = messages.ElicitResult
	// ListRootsResult is [messages.ListRootsResult], a roots handler's
	// answer: Roots, Meta.
	ListRootsResult = messages.ListRootsResult
	// Root is [messages.Root], one root the client shares: URI (a file://
	// URI), Name, Meta.
	Root = messages.Root
	// LoggingMessage is [messages.LoggingMessage], a server's log entry as
	// the log hook gets it, sanitised: Level, Logger, Data.
	LoggingMessage = messages.LoggingMessage
	// Notification is [messages.Notification], a server notification as
	// the notification hook gets it: Method, Params (raw JSON).
	Notification       = messages.Notification
	Implementation     = messages.Implementation
	Tool               = messages.Tool
	CallToolResult     = messages.CallToolResult
	Resource           = messages.Resource
	ReadResourceResult = messages.ReadResourceResult
	Prompt             = messages.Prompt
	GetPromptResult    = messages.GetPromptResult
	ContentBlock       = messages.ContentBlock
	Contents           = messages.Contents
)

// WriteQueueOverflowError says the server stopped reading its input (see
// Options.MaxWriteQueueBytes); defined in package messages.
type WriteQueueOverflowError = messages.WriteQueueOverflowError

// Error kinds.
const (
	KindTimeout      = messages.KindTimeout
	KindCancelled    = messages.KindCancelled
	KindRefused      = messages.KindRefused
	KindTransport    = messages.KindTransport
	KindProtocol     = messages.KindProtocol
	KindRPC          = messages.KindRPC
	KindInputHandler = messages.KindInputHandler
	KindClosed       = messages.KindClosed
	// KindTaskCancelled: the server cancelled the call's task.
	KindTaskCancelled = messages.KindTaskCancelled
	// KindUsage: the caller's own mistake, found before anything was sent.
	KindUsage = messages.KindUsage
	// KindInternal: Conduit's own fault, a bug.
	KindInternal = messages.KindInternal
	// KindInvalidResult: a tool's result breaks the tool's outputSchema
	// (see CallTool).
	KindInvalidResult = messages.KindInvalidResult
)

// ErrConnectionEnded matches, with errors.Is, the error of a call whose
// connection ended under it (closed, lost, failed as a whole), and not that
// of a request that failed alone while its connection goes on.
var ErrConnectionEnded = messages.ErrConnectionEnded

// Sentinel wire errors. errors.Is compares codes, so errors.Is(err,
// ErrMethodNotFound) matches any -32601, whether the server sent it or a
// guard refused with it. A handler may return one (or its own *RPCError) to
// refuse a legacy server request with that code.
var (
	ErrParse                   = messages.ErrParse
	ErrInvalidRequest          = messages.ErrInvalidRequest
	ErrMethodNotFound          = messages.ErrMethodNotFound
	ErrInvalidParams           = messages.ErrInvalidParams
	ErrInternal                = messages.ErrInternal
	ErrBusy                    = messages.ErrBusy
	ErrUnsupportedVersion      = messages.ErrUnsupportedVersion
	ErrMissingClientCapability = messages.ErrMissingClientCapability
	ErrHeaderMismatch          = messages.ErrHeaderMismatch
)

// JSON-RPC and MCP error codes (RPCError.Code).
const (
	CodeParseError     = messages.CodeParseError
	CodeInvalidRequest = messages.CodeInvalidRequest
	CodeMethodNotFound = messages.CodeMethodNotFound
	CodeInvalidParams  = messages.CodeInvalidParams
	CodeInternalError  = messages.CodeInternalError
	// CodeBusy is Conduit's code for "too many server requests at once"
	// and "rate limited".
	CodeBusy             = messages.CodeBusy
	CodeResourceNotFound = messages.CodeResourceNotFound
	// Modern (2026-07-28) codes.
	CodeHeaderMismatch             = messages.CodeHeaderMismatch
	CodeMissingClientCapability    = messages.CodeMissingClientCapability
	CodeUnsupportedProtocolVersion = messages.CodeUnsupportedProtocolVersion
	// CodeURLElicitationRequired is 2025-11-25 only.
	CodeURLElicitationRequired = messages.CodeURLElicitationRequired
	// CodeSamplingRejected is the code of a sampling request the user
	// rejected (and of the sampling guards' refusals by default).
	CodeSamplingRejected = messages.CodeSamplingRejected
)

// Text returns content made of a single text block, as a sampling answer
// usually is.
func Text(s string) Contents { return messages.Text(s) }

// Elicitation actions (ElicitResult.Action): a user who declines or cancels
// is an answer, not an error.
const (
	ActionAccept  = messages.ActionAccept
	ActionDecline = messages.ActionDecline
	ActionCancel  = messages.ActionCancel
)

// Elicitation modes (ElicitationRequest.Mode, ElicitationModer).
const (
	ModeForm = messages.ModeForm
	ModeURL  = messages.ModeURL
)

// Outcomes of an input request, as the audit hook receives them in
// AuditRecord.Outcome.
const (
	// OutcomeAnswered: the handler's answer passed the guards and was sent.
	OutcomeAnswered = guards.OutcomeAnswered
	// OutcomeRefused: refused with an error, by a guard, for a capability
	// the client did not declare, or because the handler failed.
	OutcomeRefused = guards.OutcomeRefused
	// OutcomeTimeout: the handler did not answer within its timeout.
	OutcomeTimeout = guards.OutcomeTimeout
	// OutcomeCancelled: the server cancelled the request, or the call or
	// the client it belonged to ended.
	OutcomeCancelled = guards.OutcomeCancelled
	// OutcomeBusy: MaxServerRequests were already running (-32000).
	OutcomeBusy = guards.OutcomeBusy
	// OutcomeRateLimited: over the server's input budget (-32000).
	OutcomeRateLimited = guards.OutcomeRateLimited
)

// Eras.
const (
	EraLegacy = messages.EraLegacy
	EraModern = messages.EraModern
)

// Defaults (docs/input-handling.md lists them all).
const (
	DefaultTimeout            = 60 * time.Second
	DefaultMaxTotalTimeout    = 30 * time.Minute
	DefaultHandlerTimeout     = actors.DefaultHandlerTimeout
	DefaultElicitationTimeout = actors.DefaultElicitationTimeout
	DefaultMaxServerRequests  = actors.DefaultMaxServerRequests
)

// SamplingOptions configure the sampling guards. Zero values take defaults.
type SamplingOptions struct {
	MaxTokens         int  // maxTokens is clamped to this (4096)
	Context           bool // allow includeContext other than "none" (advertises sampling.context)
	AllowIdle         bool // allow legacy sampling while no call is in flight
	MaxToolIterations int  // refuse more assistant tool_use turns than this (5)
	RejectionCode     int  // the code of sampling refusals (-1)
}

// ElicitationOptions configure the elicitation guards.
type ElicitationOptions struct {
	// Origin is the server's origin (https://host[:port]) for URL checks,
	// when the transport does not report it.
	Origin string
}

// Options configure a Client. The zero value is valid.
type Options struct {
	// Name and Version identify the client (clientInfo); Name defaults to
	// "conduit".
	Name, Version string
	// ServerID is the operator-assigned id of the server, passed to every
	// callback.
	ServerID string
	// Handlers answer the server's input requests and receive its
	// notifications; a nil function is a kind not implemented (not
	// advertised, refused before any callback).
	Handlers Handlers
	// Handler is the same as a value implementing the handler interfaces
	// (adapted by HandlersOf). Set Handler or Handlers, not both.
	Handler any
	// Assigns are passed to callbacks not tied to a call.
	Assigns map[string]any
	// HandlerTimeout overrides the per-kind handler timeouts (5 min for
	// elicitation, 60 s otherwise).
	HandlerTimeout time.Duration
	// MaxServerRequests caps server requests running at once (8).
	MaxServerRequests int
	// InputRateLimit and InputBurst budget one server's input requests,
	// sampling, elicitation and roots together: 10 a second, bursts of 20
	// (the specification's numbers), for 0 or less; rate.Inf lifts the
	// budget. A request over it is refused, not queued: sampling with
	// Sampling.RejectionCode (-1, "Sampling rejected: rate limited"),
	// elicitation and roots with -32000 ("rate limited"); in the modern era
	// the call that asked fails with KindRefused and that code. Each
	// refusal is counted in Stats.RateLimited and audited rate_limited. An
	// agent that fans out calls that each make the server ask for input
	// raises both (README, "Fan-out agents").
	InputRateLimit rate.Limit
	InputBurst     int
	// LogRateLimit and LogBurst limit the server's log entries (50/s,
	// bursts of 100, for 0 or less; rate.Inf lifts the limit).
	LogRateLimit rate.Limit
	LogBurst     int
	Sampling     SamplingOptions
	Elicitation  ElicitationOptions
	// MaxInboundBytes bounds the bytes of server messages read and not yet
	// handled (16 MiB): past it the client reads nothing more until they
	// are, so a flooding server's writes wait (backpressure on its pipe or
	// socket). A larger message is read alone.
	MaxInboundBytes int
	// MaxWaitingNotificationBytes bounds the bytes of notifications and
	// log entries waiting for their callback (16 MiB; a log entry weighs
	// what is left of it once sanitised), beside the 1 000 entries: past
	// either, newer ones are dropped and counted in
	// Stats.NotificationsDropped.
	MaxWaitingNotificationBytes int
	// Timeout and MaxTotalTimeout are the defaults of every call (60 s and
	// 30 min). A call's deadline is paused while input is gathered for it,
	// but it never outlives MaxTotalTimeout.
	Timeout, MaxTotalTimeout time.Duration
	// Era pins the era: "" (auto: probe server/discover, fall back to
	// initialize), EraLegacy or EraModern; any other value fails Connect.
	Era Era
	// ProtocolVersion pins the version: a legacy one is offered in
	// initialize (default 2025-11-25), and a server that answers another
	// fails Connect; a modern one is used on every modern request (default
	// 2026-07-28).
	ProtocolVersion string
	// DiscoverTimeout bounds the server/discover probe (10 s); no answer
	// means a legacy server.
	DiscoverTimeout time.Duration
	// DeclareOnly, when not nil, narrows what the client tells the server
	// it can do to the capabilities named, by WithCapabilities's paths, as
	// if every call were made WithCapabilities(DeclareOnly...): the
	// initialize params in the legacy era (the one place a legacy server
	// learns them), every request's _meta in the modern era. The handlers
	// are not narrowed: in the legacy era a server's input request for a
	// capability left out still reaches them, as under WithCapabilities
	// (a handler that must refuse it finds the call's assigns). Nil
	// declares what the handlers allow; empty, none. An unknown name fails
	// Connect with KindUsage. The host runs a legacy server's connection
	// per capability set of its callers with it (docs/decisions.md #78).
	DeclareOnly []string
	// Tasks lets tool calls run as tasks (see CallTool, AwaitTask): the
	// client declares the tasks extension (modern) or the tasks capability
	// (2025-11-25).
	Tasks bool
	// MaxRounds caps the rounds of one modern call that ask for input
	// (DefaultMaxRounds, 10, for 0 or less): the call's first request and
	// each retry with answers count, and a server still asking for input
	// at the cap fails the call with KindProtocol (its InputRequests set).
	// A modern task's input_required statuses count under the same cap
	// (its creating call, then each tasks/update), and the task is then
	// cancelled.
	MaxRounds int
	// MaxWriteQueueBytes bounds the bytes of messages queued for the server
	// and not yet written (16 MiB for 0 or less). A server that stops
	// reading its input while it makes the client answer would otherwise
	// grow the queue without end: past the bound the connection closes
	// with a KindTransport error whose Err is a *WriteQueueOverflowError,
	// counted in Stats.WriteQueueOverflows. One message alone in the queue
	// passes whatever its size.
	MaxWriteQueueBytes int
	// Logger receives Conduit's own logs, and the server's stderr when the
	// transport is a *transport.Command without a Logger of its own: each
	// stderr line with the attribute "server" = ServerID when ServerID is
	// set.
	Logger *slog.Logger
	// Audit, when set, is called for every input request after the guards,
	// with its outcome. It runs on an actor: it must not block.
	Audit func(AuditRecord)
	// KeepAlive, when positive, pings the server every KeepAlive
	// (Client.Ping, each bounded by half the interval) and ends the client
	// once KeepAliveFailures (DefaultKeepAliveFailures, 3, for 0 or less)
	// pings in a row have failed: Err is then a KindTransport error whose
	// Err is a *KeepAliveError.
	// Zero sends none and costs nothing.
	KeepAlive         time.Duration
	KeepAliveFailures int
	// System, when set, hosts this client's actors: for a program that
	// already runs protoactor-go and wants them in its own actor system.
	// Nil (the default) means the one system every client of the process
	// shares, made on first use. Either way, once Close returns nothing of
	// the client is left in the system (no actor, registry entry or
	// goroutine), and Conduit never shuts the system down. A system of
	// your own logs where its options say; the shared one logs, from Warn
	// up, to slog.Default().
	System *actor.ActorSystem
	// SendingMiddleware wraps each request the client sends through its
	// methods (Call, CallTool, ListTools …, Ping, SetLogLevel, the
	// tools/list CallTool makes, tasks/cancel), the first outermost: a
	// middleware sees the method and params, then the result or error,
	// on the caller's goroutine, and may rewrite any of them or fail the
	// request (an error not an *Error is returned as KindUsage; a panic
	// as KindInternal). A modern call is one request to it however many
	// input rounds it takes. The handshake (server/discover, initialize),
	// notifications and the requests of a task (a 2025-11-25
	// task-augmented tools/call, tasks/get, tasks/update, tasks/result)
	// do not go through it.
	SendingMiddleware []Middleware
	// ReceivingMiddleware wraps each server request the client answers
	// (sampling, elicitation, roots) and each notification and log entry
	// it hands to a callback, the first outermost, on the handler's
	// goroutine. It runs inside the guards, around the handler alone: a
	// request the guards refuse never reaches it (Audit sees it), and its
	// result is checked as the handler's is. See receiving for the rules.
	ReceivingMiddleware []Middleware
	// TracerProvider makes the OpenTelemetry spans of this client's calls
	// and of the input requests they gather (trace.go); nil means otel's
	// global provider, a no-op until the program sets one.
	TracerProvider trace.TracerProvider
}

// handlers is the handler set opts configure.
func (o Options) handlers() (Handlers, error) {
	if o.Handler == nil {
		return o.Handlers, nil
	}
	h := o.Handlers
	if h.Sampling != nil || h.Elicitation != nil || h.Roots != nil || h.Notification != nil || h.Log != nil || h.Progress != nil || h.ElicitationComplete != nil || h.SamplingTools || h.ElicitationModes != nil || hasChangeHooks(&h) {
		return Handlers{}, fmt.Errorf("%w: set Options.Handler or Options.Handlers, not both", ErrHandler)
	}
	return HandlersOf(o.Handler)
}

// Client is a connection to one MCP server. Its methods are safe for
// concurrent use.
//
// A client outlives its sessions: when a legacy HTTP server forgets the
// session (404), the next call starts a fresh one, and Done, Err and Stats
// carry on across it. The client ends when Close is called or when its
// session is lost for good: the transport failed, or a fresh session could
// not be started.
type Client struct {
	// Set by Connect, then only read.
	// The handlers are the session runtime's (actors.Runtime.Handlers): one
	// copy. What an idle client does not use is made on first use
	// (clientidle.go, decision 60).
	t        transport.Transport
	opts     settings // Connect's Options, defaults filled in, less what only Connect reads
	declared era.Declared
	tracer   trace.Tracer                 // nil when tracing is off for good (a no-op provider)
	global   atomic.Pointer[globalTracer] // callTracer's, with the global provider

	logLevel  atomic.Pointer[string]   // SetLogLevel's: in every modern request's _meta, sent again to a renewed legacy session
	fixedMeta atomic.Pointer[era.Meta] // the _meta members fixed for the version last asked of sessionMeta
	cur       atomic.Pointer[session]  // read freely; stored by Connect, then only with redial and mu held
	watchers  sync.WaitGroup           // one per session, until its runtime's AfterDone callback has run

	// redial is held for a whole renewal (closing the lost session, dialling
	// the fresh one), so there is one at a time; Close takes it to wait for
	// the renewal it aborted.
	redial sync.Mutex

	// mu guards the fields below; it is only held briefly, never across a
	// dial or a Close.
	mu sync.Mutex
	// err says why the client ended; nil while it lives. Set once, never
	// changed; once set, no session is dialled.
	err error
	// done is closed once the client has ended and released everything
	// (finished): made by Done or finish, whichever is first.
	done     chan struct{}
	finished bool
	// aborted is set by Close: a renewal's dial is aborted (closing); the
	// watchers then do nothing. Atomic, not under mu: it sits beside
	// finished so that the two share a word (decision 75).
	aborted atomic.Bool
	// rare is what only a renewal, the keep-alive or a renewal's dial
	// needs, made by the first of them (clientidle.go).
	rare *rare

	// ch is the change state (subscriptions, awaited tasks, refreshers,
	// the list cache): nil until the first that needs it (changes).
	ch atomic.Pointer[changes]
}

// session is one connection to the server: a transport connection, the
// runtime on it, and what was negotiated.
type session struct {
	rt   *actors.Runtime // its Conn is the session's transport connection
	init messages.InitializeResult
	// tools is what the session's last tools/list said of each tool
	// (task support, output schema), nil before one.
	tools atomic.Pointer[toolIndex]
	// tasks is init's tasks capability, decoded once (serverTasks).
	tasks atomic.Pointer[serverTaskCaps]
}

func (c *Client) sess() *session { return c.cur.Load() }

// Connect opens t, performs the handshake and returns a ready Client.
func Connect(ctx context.Context, t transport.Transport, opts Options) (*Client, error) {
	if opts.Name == "" {
		opts.Name = "conduit"
	}
	if opts.Version == "" {
		opts.Version = "0.1.0"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = discardLogger // one for every client (decision 60)
	}
	if opts.MaxTotalTimeout <= 0 {
		opts.MaxTotalTimeout = DefaultMaxTotalTimeout
	}
	if cmd, ok := t.(*transport.Command); ok && cmd.Logger == nil && opts.Logger.Enabled(ctx, slog.LevelInfo) {
		// The server's stderr goes to the client's logger unless the
		// command says otherwise.
		// Its lines carry "server" = ServerID (when set), as under a host.
		withLogger := *cmd
		withLogger.Logger = opts.Logger
		if opts.ServerID != "" {
			withLogger.Logger = opts.Logger.With("server", opts.ServerID)
		}
		t = &withLogger
	}
	h, err := opts.handlers()
	if err != nil {
		return nil, err
	}
	declared := era.Declare(h, opts.Sampling.Context)
	h = receiving(h, opts.ReceivingMiddleware)
	declared.Tasks = opts.Tasks
	c := &Client{t: t, opts: settingsOf(&opts), declared: declared, tracer: tracerOf(opts.TracerProvider)}
	// The runtime and the guards take what the handlers allow; what the
	// server is told may be less (DeclareOnly).
	dc := c.dialConfig(&opts, c.withRefresh(h))
	if c.declared, err = declareOnly(opts.DeclareOnly, declared); err != nil {
		return nil, err
	}
	s, err := c.dial(ctx, dc)
	if err != nil {
		return nil, err
	}
	c.start(s)
	c.startKeepAlive()
	c.startListening(ctx, s)
	return c, nil
}

// dial opens a connection, starts its runtime and negotiates. dc is the
// runtime's and its guards' settings, but for what the connection gives
// (dialConfig at Connect, the lost session's at a renewal).
func (c *Client) dial(ctx context.Context, dc dialConfig) (*session, error) {
	conn, err := c.t.Connect(ctx)
	if err != nil {
		return nil, &Error{Kind: KindTransport, Message: "could not connect", Err: err}
	}
	origin := c.opts.Elicitation.Origin
	if o, ok := conn.(transport.Origin); ok && o.Origin() != "" {
		origin = o.Origin()
	}
	dc.guards.Elicitation.Origin = origin
	dc.rt.Conn, dc.rt.Guards, dc.rt.Origin = conn, guards.New(dc.guards), origin
	rt := actors.Start(dc.rt)
	s := &session{rt: rt}
	if err := c.negotiate(ctx, s); err != nil {
		_ = rt.Close()
		return nil, err
	}
	if rt.Era() == EraLegacy {
		c.fixedMeta.Store(nil) // the probe's: a legacy session sends no _meta of that kind
	}
	return s, nil
}

// start makes s the current session and watches it: a session that ends
// while current ends the client, unless the server only forgot it (the next
// call renews it) or the client is already ending.
func (c *Client) start(s *session) {
	c.cur.Store(s)
	c.watchers.Add(1)
	// No goroutine waits for the session: the runtime calls back when it
	// is done (every session's runtime is closed before Close waits).
	s.rt.AfterDone(func() {
		defer c.watchers.Done()
		if c.aborted.Load() {
			return // Close ends the client
		}
		err := s.rt.Err()
		if errors.Is(err, transport.ErrSessionTerminated) {
			return
		}
		c.mu.Lock()
		ends := c.err == nil && c.sess() == s
		if ends {
			c.err = err
		}
		c.mu.Unlock()
		if ends {
			c.finish()
		}
	})
}

// ended is the error a call gets from a client that has ended: why it
// ended, for method.
func (c *Client) ended(method string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var e *Error
	if errors.As(c.err, &e) {
		cp := *e
		cp.Method, cp.ConnectionEnded = method, true
		return &cp
	}
	return &Error{Kind: KindClosed, Method: method, Message: "client ended", Err: c.err, ConnectionEnded: true}
}

// renew replaces a session the server ended (a legacy HTTP 404 for its
// session id) with a fresh one, once per lost session: concurrent callers
// that saw the same loss share the new session. Close aborts it; a renewal
// that fails ends the client, unless the caller's ctx ended first.
func (c *Client) renew(ctx context.Context, lost *session, method string) (*session, error) {
	c.redial.Lock()
	defer c.redial.Unlock()
	c.mu.Lock()
	cur, over := c.sess(), c.err != nil
	c.mu.Unlock()
	switch {
	case over:
		return nil, c.ended(method)
	case cur != lost:
		return cur, nil
	}
	_ = lost.rt.Close()
	c.opts.Logger.Info("the server ended the session; starting a new one")
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.closingCtx(), cancel)()
	s, err := c.dial(dctx, dialConfigOf(lost.rt))
	if err == nil {
		c.restoreLogLevel(dctx, s)
		c.restoreSubscriptions(dctx, s)
	}

	c.mu.Lock()
	switch {
	case c.err != nil: // closed while dialling
		c.mu.Unlock()
		if s != nil {
			_ = s.rt.Close()
		}
		return nil, c.ended(method)
	case err != nil && ctx.Err() != nil: // the caller gave up: the next call tries again
		c.mu.Unlock()
		return nil, err
	case err != nil:
		c.err = err
		c.mu.Unlock()
		c.finish()
		return nil, err
	}
	c.retire(lost.rt)
	c.start(s)
	c.mu.Unlock()
	return s, nil
}

// restoreLogLevel sends the level the host set to a fresh legacy session,
// which starts at the server's default. A failure is logged: the session
// works without it.
func (c *Client) restoreLogLevel(ctx context.Context, s *session) {
	l := c.logLevel.Load()
	if l == nil || s.rt.Era() != EraLegacy {
		return
	}
	p, err := encodeParams(messages.MethodSetLevel, messages.SetLevelParams{Level: *l})
	if err == nil {
		_, err = c.callOn(ctx, s, messages.MethodSetLevel, p, callOptions{timeout: c.opts.Timeout, maxTotal: c.opts.MaxTotalTimeout})
	}
	if err != nil {
		c.opts.Logger.Warn("the renewed session did not take the log level", "level", *l, "err", err)
	}
}

// retire adds the counters of a session renewed away to past. Called with
// mu held.
func (c *Client) retire(rt *actors.Runtime) {
	r := c.rareLocked()
	st := rt.Stats()
	if st.AbandonedHandlers > 0 {
		r.lingering = append(r.lingering, rt)
	}
	st.AbandonedHandlers = 0
	r.past = r.past.Add(st)
	kept := r.lingering[:0]
	for _, l := range r.lingering {
		if l.Stats().AbandonedHandlers > 0 {
			kept = append(kept, l)
		}
	}
	clear(r.lingering[len(kept):])
	r.lingering = kept
}

func (c *Client) initialize(ctx context.Context, s *session) error {
	p, offered, err := era.EncodeInitializeParams(c.declared, Implementation{Name: c.opts.Name, Version: c.opts.Version}, c.opts.ProtocolVersion)
	if err != nil {
		return &Error{Kind: KindUsage, Method: messages.MethodInitialize, Message: "params could not be encoded", Err: err}
	}
	raw, err := s.rt.Call(ctx, messages.MethodInitialize, p, actors.CallOptions{Timeout: c.opts.Timeout, MaxTotalTimeout: c.opts.MaxTotalTimeout})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &s.init); err != nil {
		return &Error{Kind: KindProtocol, Method: messages.MethodInitialize, Message: "malformed initialize result", Err: err}
	}
	if err := era.CheckInitialize(&s.init, offered); err != nil {
		return &Error{Kind: KindProtocol, Method: messages.MethodInitialize, Err: err}
	}
	if c.opts.ProtocolVersion != "" && s.init.ProtocolVersion != c.opts.ProtocolVersion {
		return &Error{Kind: KindProtocol, Method: messages.MethodInitialize, Message: fmt.Sprintf(
			"server answered initialize with protocol version %q; Conduit offered %s, pinned by Options.ProtocolVersion", s.init.ProtocolVersion, c.opts.ProtocolVersion)}
	}
	s.rt.SetSession(s.init.ProtocolVersion, EraLegacy)
	return s.rt.Notify(messages.MethodInitialized, nil)
}

// ProtocolVersion is the negotiated protocol version. It and the methods
// below describe the current session: a renewed one has negotiated again.
func (c *Client) ProtocolVersion() string { return c.sess().rt.Version() }

// Era is the negotiated era.
func (c *Client) Era() Era { return c.sess().rt.Era() }

// ServerInfo is what the server said about itself.
func (c *Client) ServerInfo() Implementation { return c.sess().init.ServerInfo }

// ServerCapabilities are the server's capabilities as sent.
func (c *Client) ServerCapabilities() json.RawMessage { return c.sess().init.Capabilities }

// Instructions are the server's instructions, if any.
func (c *Client) Instructions() string { return c.sess().init.Instructions }

// Stats returns a snapshot of the client's counters, over every session
// of its life.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.sess().rt.Stats()
	if r := c.rare; r != nil {
		st = r.past.Add(st)
		for _, rt := range r.lingering {
			st.AbandonedHandlers += rt.Stats().AbandonedHandlers
		}
	}
	if ch := c.ch.Load(); ch != nil {
		st.CacheHits = ch.cache.hits.Load()
	}
	return st
}

// Done is closed once the client has ended (Close, or the connection lost
// for good) and everything is released. A session the server ends and the
// client renews does not end the client.
func (c *Client) Done() <-chan struct{} { return c.doneChan() }

// Err says why the client ended: nil before Done is closed, a KindClosed
// error after Close, otherwise the failure that ended it (the first reason
// wins: a Close after a failure keeps the failure).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.finished {
		return nil
	}
	return c.err
}

// Close ends the client: calls in flight fail with KindClosed, handler
// contexts are cancelled, the server is shut down (stdio: stdin closed, then
// SIGTERM, then SIGKILL; HTTP: a legacy session is ended with DELETE), and a session being
// renewed is abandoned and released. It waits until everything is released.
// It may be called more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.err == nil {
		c.err = &Error{Kind: KindClosed, Message: "client closed"} // as a Runtime says
	}
	c.mu.Unlock()
	c.abort()
	c.stopRefresh()
	c.redial.Lock() // wait for a renewal to give up and release its session
	s := c.sess()
	c.redial.Unlock()
	_ = s.rt.Close()
	c.watchers.Wait()
	c.waitKeepAlive()
	c.finish()
	return nil
}

// CallOption adjusts one call.
type CallOption func(*callOptions)

type callOptions struct {
	timeout, maxTotal time.Duration
	assigns           map[string]any
	progressToken     any
	awaitTask         bool
	task              bool           // WithTask
	taskTTL           time.Duration  // WithTaskTTL
	taskStatus        func(Task)     // WithTaskStatus
	manual            *manualInput   // WithManualInput, WithInputResponses
	meta              map[string]any // WithMeta
	unvalidated       bool           // WithUnvalidatedResult
	header            http.Header    // WithHeader
	capabilities      *narrowed      // WithCapabilities
	logLevel          *string        // WithLogLevel
	usage             error          // an option's misuse, reported by the call
}

// callOptions applies opts to the client's defaults.
func (c *Client) callOptions(opts []CallOption) callOptions {
	o := callOptions{timeout: c.opts.Timeout, maxTotal: c.opts.MaxTotalTimeout, assigns: c.opts.Assigns}
	if len(opts) == 0 {
		return o
	}
	// An option gets a pointer it may keep: its target is on the heap,
	// and a call without options does not pay for one.
	p := &callOptions{}
	*p = o
	for _, opt := range opts {
		opt(p)
	}
	return *p
}

// WithTimeout sets the call's deadline (paused while input is gathered).
func WithTimeout(d time.Duration) CallOption { return func(o *callOptions) { o.timeout = d } }

// WithMaxTotalTimeout bounds the call's whole life, pauses included.
func WithMaxTotalTimeout(d time.Duration) CallOption { return func(o *callOptions) { o.maxTotal = d } }

// WithAssigns sets the assigns passed to handlers answering input for this
// call.
func WithAssigns(a map[string]any) CallOption { return func(o *callOptions) { o.assigns = a } }

// WithProgressToken asks the server for progress notifications of this call
// under token (a string or an integer); they reach Handlers.Progress
// (ProgressHandler) decoded, with Progress.Token the token, or, when that
// hook is not set, Handlers.Notification (NotificationHandler) as
// notifications/progress.
func WithProgressToken(token any) CallOption { return func(o *callOptions) { o.progressToken = token } }

// WithAwaitTask makes CallTool wait for a task the call became
// (Options.Tasks) and return its result, as AwaitTask does.
func WithAwaitTask() CallOption { return func(o *callOptions) { o.awaitTask = true } }

// Call sends method with params and decodes the result into result (which
// may be nil). It is the primitive under the typed methods.
func (c *Client) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	raw, err := c.call(ctx, method, params, c.callOptions(opts))
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return &Error{Kind: KindProtocol, Method: method, Message: "malformed result", Err: err}
	}
	return nil
}

// Ping checks the server is alive: with ping in the legacy era, with
// server/discover in the modern one, which has no ping (a server answers
// it -32601) while every server of that era answers the probe.
func (c *Client) Ping(ctx context.Context, opts ...CallOption) error {
	method := messages.MethodPing
	if c.Era() == EraModern {
		method = messages.MethodDiscover
	}
	return c.Call(ctx, method, nil, nil, opts...)
}

// SetLogLevel asks the server for log entries at level and above.
// In the modern era there is no logging/setLevel: the level is sent in the
// _meta of every later request instead, and one that is not an RFC 5424
// name (debug … emergency) is refused with KindUsage. In the legacy era
// it is sent again to a session the client renews.
func (c *Client) SetLogLevel(ctx context.Context, level string, opts ...CallOption) error {
	if c.Era() == EraModern && sanitize.Level(level) != level {
		// Sent with every later request, an unknown level would have
		// each of them refused (-32602); a legacy server refuses it once.
		return &Error{Kind: KindUsage, Method: messages.MethodSetLevel,
			Message: fmt.Sprintf("unknown log level %q: want one of debug, info, notice, warning, error, critical, alert, emergency", level)}
	}
	if c.Era() != EraModern {
		if err := c.Call(ctx, messages.MethodSetLevel, messages.SetLevelParams{Level: level}, nil, opts...); err != nil {
			return err
		}
	}
	c.logLevel.Store(&level)
	return nil
}

// CallTool calls a tool. args is marshalled as the arguments object (nil
// sends none). A tool result with IsError is returned as a result, not an
// error.
//
// With Options.Tasks the call may become a task: in the modern era when
// the server decides so; in 2025-11-25 when the tool's
// execution.taskSupport is "required", or "optional" and WithTask is given
// (the tools are listed first when nobody has). The result then carries
// the Task, to await with AwaitTask, unless WithAwaitTask awaits it here.
//
// A result is checked against the tool's outputSchema (JSON Schema,
// 2020-12 by default), in both eras: structuredContent that breaks it, or
// its absence from the result of a tool that declares one, fails the call
// with KindInvalidResult, whose message names the failing JSON pointer and
// schema keyword. The schema is the one the session's last tools/list
// gave (ListTools, Tools, ListToolsPage; a Host lists at each start):
// CallTool sends no tools/list of its own, so a call on a session whose
// tools nobody listed, or of a tool the listing does not name, is not
// checked. An outputSchema
// that does not compile, refers outside itself ($ref to anything but
// itself: nothing is fetched) or passes MaxOutputSchemaBytes fails every
// call of the tool with KindInvalidResult, and is logged once. A result
// with IsError, and the result AwaitTask gives, are not checked;
// WithUnvalidatedResult returns the result as it came.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	p := messages.CallToolParams{Name: name}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, &Error{Kind: KindUsage, Method: messages.MethodCallTool, Message: "arguments could not be encoded", Err: err}
		}
		p.Arguments = raw
	}
	o := c.callOptions(opts)
	if err := checkHeader(c.sess(), messages.MethodCallTool, o); err != nil {
		return nil, err
	}
	res, err := c.callTool(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := c.checkResult(name, res, o); err != nil {
		return nil, err
	}
	return res, nil
}

func (c *Client) callTool(ctx context.Context, p messages.CallToolParams, o callOptions) (*CallToolResult, error) {
	if res, ok, err := c.callToolAsTask(ctx, p, o); ok {
		return res, err
	}
	// The result is decoded once, by toolResult.
	raw, err := c.call(ctx, messages.MethodCallTool, p, o)
	if errors.Is(err, messages.ErrHeaderMismatch) && c.Era() == EraModern {
		// The server disagrees with our Mcp-Param-* headers: the tool's
		// annotations may have changed. Refresh them and retry once.
		if _, lerr := c.ListTools(ctx); lerr == nil {
			raw, err = c.call(ctx, messages.MethodCallTool, p, o)
		}
	}
	if err != nil {
		return nil, err
	}
	return c.toolResult(ctx, raw, o)
}

// ReadResource reads a resource.
func (c *Client) ReadResource(ctx context.Context, uri string, opts ...CallOption) (*ReadResourceResult, error) {
	var r ReadResourceResult
	if err := c.Call(ctx, messages.MethodReadResource, messages.ReadResourceParams{URI: uri}, &r, opts...); err != nil {
		return nil, err
	}
	return &r, nil
}

// GetPrompt gets a prompt with its arguments.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string, opts ...CallOption) (*GetPromptResult, error) {
	var r GetPromptResult
	if err := c.Call(ctx, messages.MethodGetPrompt, messages.GetPromptParams{Name: name, Arguments: args}, &r, opts...); err != nil {
		return nil, err
	}
	return &r, nil
}
