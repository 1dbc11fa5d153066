// Package conduit is an MCP client runtime for hosts (agents, IDEs,
// gateways) whose core job is answering a server's requests for input —
// sampling, elicitation, roots — and its notifications and logs, safely and
// on time, on supervised actors.
//
// A handler is any value; it implements zero or more of SamplingHandler,
// ElicitationHandler (with ElicitationModer), RootsLister,
// NotificationHandler and LogHandler, and the client advertises exactly the
// capabilities whose interface is implemented.
package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// Wire and API types, defined in package messages and re-exported here.
type (
	Error               = messages.Error
	Kind                = messages.Kind
	RPCError            = messages.RPCError
	ID                  = messages.ID
	Era                 = messages.Era
	Stats               = messages.Stats
	AuditRecord         = messages.AuditRecord
	SamplingHandler     = messages.SamplingHandler
	SamplingToolUser    = messages.SamplingToolUser
	ElicitationHandler  = messages.ElicitationHandler
	ElicitationModer    = messages.ElicitationModer
	RootsLister         = messages.RootsLister
	NotificationHandler = messages.NotificationHandler
	LogHandler          = messages.LogHandler
	RequestContext      = messages.RequestContext
	SamplingRequest     = messages.SamplingRequest
	ElicitationRequest  = messages.ElicitationRequest
	RootsRequest        = messages.RootsRequest
	NotificationContext = messages.NotificationContext
	FieldInfo           = messages.FieldInfo
	CreateMessageResult = messages.CreateMessageResult
	ElicitResult        = messages.ElicitResult
	ListRootsResult     = messages.ListRootsResult
	Root                = messages.Root
	LoggingMessage      = messages.LoggingMessage
	Notification        = messages.Notification
	Implementation      = messages.Implementation
	Tool                = messages.Tool
	CallToolResult      = messages.CallToolResult
	Resource            = messages.Resource
	ReadResourceResult  = messages.ReadResourceResult
	Prompt              = messages.Prompt
	GetPromptResult     = messages.GetPromptResult
	ContentBlock        = messages.ContentBlock
	Contents            = messages.Contents
)

// Error kinds.
const (
	KindTimeout      = messages.KindTimeout
	KindCancelled    = messages.KindCancelled
	KindTransport    = messages.KindTransport
	KindProtocol     = messages.KindProtocol
	KindRPC          = messages.KindRPC
	KindInputHandler = messages.KindInputHandler
	KindClosed       = messages.KindClosed
)

// Eras.
const (
	EraLegacy = messages.EraLegacy
	EraModern = messages.EraModern
)

// Defaults (the seed's).
const (
	DefaultTimeout            = 60 * time.Second
	DefaultMaxTotalTimeout    = 30 * time.Minute
	DefaultHandlerTimeout     = actors.DefaultHandlerTimeout
	DefaultElicitationTimeout = actors.DefaultElicitationTimeout
	DefaultMaxServerRequests  = 8
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
	// Handler answers the server's input requests; see the package doc.
	Handler any
	// Assigns are passed to callbacks not tied to a call.
	Assigns map[string]any
	// HandlerTimeout overrides the per-kind handler timeouts (5 min for
	// elicitation, 60 s otherwise).
	HandlerTimeout time.Duration
	// MaxServerRequests caps server requests running at once (8).
	MaxServerRequests int
	// InputRateLimit and InputBurst budget one server's input requests
	// (10/s, bursts of 20).
	InputRateLimit rate.Limit
	InputBurst     int
	// LogRateLimit and LogBurst limit the server's log entries (50/s,
	// bursts of 100).
	LogRateLimit rate.Limit
	LogBurst     int
	Sampling     SamplingOptions
	Elicitation  ElicitationOptions
	// Timeout and MaxTotalTimeout are the defaults of every call (60 s and
	// 30 min). A call's deadline is paused while input is gathered for it,
	// but it never outlives MaxTotalTimeout.
	Timeout, MaxTotalTimeout time.Duration
	// Era pins the era: "" (auto: probe server/discover, fall back to
	// initialize), EraLegacy or EraModern.
	Era Era
	// ProtocolVersion pins the version: a legacy one is offered in
	// initialize (default 2025-11-25), a modern one is used on every modern
	// request (default 2026-07-28).
	ProtocolVersion string
	// DiscoverTimeout bounds the server/discover probe (3 s); no answer
	// means a legacy server.
	DiscoverTimeout time.Duration
	// Tasks declares the tasks extension (modern): a tools/call may then
	// be answered with a task (see CallToolResult.Task, AwaitTask).
	Tasks bool
	// MaxRounds caps the input_required rounds of one modern call (10).
	MaxRounds int
	// Logger receives Conduit's own logs, and the server's stderr when the
	// transport is a *transport.Command without a Logger of its own.
	Logger *slog.Logger
	// Audit, when set, is called for every input request after the guards,
	// with its outcome. It runs on an actor: it must not block.
	Audit func(AuditRecord)
}

// Client is a connection to one MCP server. Its methods are safe for
// concurrent use.
type Client struct {
	t        transport.Transport
	opts     Options
	declared era.Declared
	logLevel atomic.Pointer[string] // modern: sent in every request's _meta
	cur      atomic.Pointer[session]
	redial   sync.Mutex // one fresh session at a time
}

// session is one connection to the server: a transport connection, the
// runtime on it, and what was negotiated. A legacy HTTP server that forgets
// its session makes the client start a new one.
type session struct {
	rt   *actors.Runtime
	conn transport.Conn
	init messages.InitializeResult
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
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxTotalTimeout <= 0 {
		opts.MaxTotalTimeout = DefaultMaxTotalTimeout
	}
	if cmd, ok := t.(*transport.Command); ok && cmd.Logger == nil && opts.Logger.Enabled(ctx, slog.LevelInfo) {
		// The server's stderr goes to the client's logger unless the
		// command says otherwise.
		withLogger := *cmd
		withLogger.Logger = opts.Logger
		t = &withLogger
	}
	c := &Client{t: t, opts: opts, declared: era.Declare(opts.Handler, opts.Sampling.Context)}
	s, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.cur.Store(s)
	return c, nil
}

// dial opens a connection, starts its runtime and negotiates.
func (c *Client) dial(ctx context.Context) (*session, error) {
	opts := c.opts
	conn, err := c.t.Connect(ctx)
	if err != nil {
		return nil, &Error{Kind: KindTransport, Message: "could not connect", Err: err}
	}
	origin := opts.Elicitation.Origin
	if o, ok := conn.(transport.Origin); ok && o.Origin() != "" {
		origin = o.Origin()
	}
	pipeline := guards.New(guards.Config{
		Sampling: guards.SamplingConfig{
			MaxTokens: opts.Sampling.MaxTokens, Context: opts.Sampling.Context, AllowIdle: opts.Sampling.AllowIdle,
			MaxToolIterations: opts.Sampling.MaxToolIterations, RejectionCode: opts.Sampling.RejectionCode,
			Tools: c.declared.SamplingTools,
		},
		Elicitation: guards.ElicitationConfig{Modes: c.declared.ElicitModes, Origin: origin},
		InputRate:   opts.InputRateLimit,
		InputBurst:  opts.InputBurst,
		Logger:      opts.Logger,
	})
	rt := actors.Start(actors.Config{
		Conn: conn, Handler: opts.Handler, Declared: c.declared, Guards: pipeline,
		Name: opts.Name, ServerID: opts.ServerID, Assigns: opts.Assigns,
		HandlerTimeout: opts.HandlerTimeout, MaxServerRequests: opts.MaxServerRequests,
		LogRate: opts.LogRateLimit, LogBurst: opts.LogBurst,
		Logger: opts.Logger, Audit: opts.Audit, Origin: origin,
	})
	s := &session{rt: rt, conn: conn}
	if err := c.negotiate(ctx, s); err != nil {
		_ = rt.Close()
		return nil, err
	}
	return s, nil
}

// renew replaces a session the server ended (a legacy HTTP 404 for its
// session id) with a fresh one, once per lost session: concurrent callers
// that saw the same loss share the new session.
func (c *Client) renew(ctx context.Context, lost *session) (*session, error) {
	c.redial.Lock()
	defer c.redial.Unlock()
	if cur := c.sess(); cur != lost {
		return cur, nil
	}
	_ = lost.rt.Close()
	c.opts.Logger.Info("the server ended the session; starting a new one")
	s, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.cur.Store(s)
	return s, nil
}

func (c *Client) initialize(ctx context.Context, s *session) error {
	params := era.InitializeParams(c.declared, Implementation{Name: c.opts.Name, Version: c.opts.Version}, c.opts.ProtocolVersion)
	p, err := encodeParams(messages.MethodInitialize, params)
	if err != nil {
		return err
	}
	raw, err := s.rt.Call(ctx, messages.MethodInitialize, p, actors.CallOptions{Timeout: c.opts.Timeout, MaxTotalTimeout: c.opts.MaxTotalTimeout})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &s.init); err != nil {
		return &Error{Kind: KindProtocol, Method: messages.MethodInitialize, Message: "malformed initialize result", Err: err}
	}
	if err := era.CheckInitialize(&s.init, params.ProtocolVersion); err != nil {
		return &Error{Kind: KindProtocol, Method: messages.MethodInitialize, Err: err}
	}
	s.rt.SetSession(s.init.ProtocolVersion, EraLegacy)
	return s.rt.Notify(messages.MethodInitialized, nil)
}

// ProtocolVersion is the negotiated protocol version.
func (c *Client) ProtocolVersion() string { return c.sess().rt.Version() }

// Era is the negotiated era.
func (c *Client) Era() Era { return c.sess().rt.Era() }

// ServerInfo is what the server said about itself.
func (c *Client) ServerInfo() Implementation { return c.sess().init.ServerInfo }

// ServerCapabilities are the server's capabilities as sent.
func (c *Client) ServerCapabilities() json.RawMessage { return c.sess().init.Capabilities }

// Instructions are the server's instructions, if any.
func (c *Client) Instructions() string { return c.sess().init.Instructions }

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats { return c.sess().rt.Stats() }

// Done is closed once the connection has ended and everything is released.
func (c *Client) Done() <-chan struct{} { return c.sess().rt.Done() }

// Err says why the connection ended, once Done is closed.
func (c *Client) Err() error { return c.sess().rt.Err() }

// Close ends the connection: calls in flight fail with KindClosed, handler
// contexts are cancelled, the server is shut down (stdio: stdin closed, then
// SIGTERM, then SIGKILL). It waits until everything is released.
func (c *Client) Close() error { return c.sess().rt.Close() }

// CallOption adjusts one call.
type CallOption func(*callOptions)

type callOptions struct {
	timeout, maxTotal time.Duration
	assigns           map[string]any
	progressToken     any
	awaitTask         bool
}

// WithTimeout sets the call's deadline (paused while input is gathered).
func WithTimeout(d time.Duration) CallOption { return func(o *callOptions) { o.timeout = d } }

// WithMaxTotalTimeout bounds the call's whole life, pauses included.
func WithMaxTotalTimeout(d time.Duration) CallOption { return func(o *callOptions) { o.maxTotal = d } }

// WithAssigns sets the assigns passed to handlers answering input for this
// call.
func WithAssigns(a map[string]any) CallOption { return func(o *callOptions) { o.assigns = a } }

// WithProgressToken asks the server for progress notifications of this call
// under token (a string or an integer); they reach HandleNotification.
func WithProgressToken(token any) CallOption { return func(o *callOptions) { o.progressToken = token } }

// WithAwaitTask makes CallTool wait for a task the server answers with
// (modern, Options.Tasks) and return its result.
func WithAwaitTask() CallOption { return func(o *callOptions) { o.awaitTask = true } }

// Call sends method with params and decodes the result into result (which
// may be nil). It is the primitive under the typed methods.
func (c *Client) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	o := callOptions{timeout: c.opts.Timeout, maxTotal: c.opts.MaxTotalTimeout, assigns: c.opts.Assigns}
	for _, opt := range opts {
		opt(&o)
	}
	raw, err := c.call(ctx, method, params, o)
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

// Ping checks the server is alive.
func (c *Client) Ping(ctx context.Context, opts ...CallOption) error {
	return c.Call(ctx, messages.MethodPing, nil, nil, opts...)
}

// SetLogLevel asks the server for log entries at level and above.
// In the modern era there is no logging/setLevel: the level is sent in the
// _meta of every later request instead.
func (c *Client) SetLogLevel(ctx context.Context, level string, opts ...CallOption) error {
	if c.Era() == EraModern {
		c.logLevel.Store(&level)
		return nil
	}
	return c.Call(ctx, messages.MethodSetLevel, messages.SetLevelParams{Level: level}, nil, opts...)
}

// ListTools lists every tool, following pagination. In the modern era a
// tool whose x-mcp-header annotations are invalid is dropped (and logged),
// and the valid ones are given to the transport (Mcp-Param-* headers).
func (c *Client) ListTools(ctx context.Context, opts ...CallOption) ([]Tool, error) {
	tools, err := listAll(ctx, c, messages.MethodListTools, opts, func(r *messages.ListToolsResult) ([]Tool, string) { return r.Tools, r.NextCursor })
	s := c.sess()
	if err != nil || s.rt.Era() != EraModern {
		return tools, err
	}
	kept := tools[:0]
	headers := map[string]map[string]string{}
	for _, t := range tools {
		h, err := era.ToolHeaders(t.InputSchema)
		if err != nil {
			c.opts.Logger.Warn("tool dropped: invalid x-mcp-header annotation", "tool", t.Name, "err", err)
			continue
		}
		if h != nil {
			headers[t.Name] = h
		}
		kept = append(kept, t)
	}
	if th, ok := s.conn.(transport.ToolHeaders); ok {
		th.SetToolHeaders(headers)
	}
	return kept, nil
}

// ListResources lists every resource, following pagination.
func (c *Client) ListResources(ctx context.Context, opts ...CallOption) ([]Resource, error) {
	return listAll(ctx, c, messages.MethodListResources, opts, func(r *messages.ListResourcesResult) ([]Resource, string) { return r.Resources, r.NextCursor })
}

// ListPrompts lists every prompt, following pagination.
func (c *Client) ListPrompts(ctx context.Context, opts ...CallOption) ([]Prompt, error) {
	return listAll(ctx, c, messages.MethodListPrompts, opts, func(r *messages.ListPromptsResult) ([]Prompt, string) { return r.Prompts, r.NextCursor })
}

// maxPages stops a server that returns cursors forever.
const maxPages = 1000

// listAll calls a paginated list method until the server stops returning a
// cursor; page picks the items and the next cursor out of one result.
func listAll[R, T any](ctx context.Context, c *Client, method string, opts []CallOption, page func(*R) ([]T, string)) ([]T, error) {
	var all []T
	cursor := ""
	for range maxPages {
		var r R
		if err := c.Call(ctx, method, messages.ListParams{Cursor: cursor}, &r, opts...); err != nil {
			return nil, err
		}
		items, next := page(&r)
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
	return nil, &Error{Kind: KindProtocol, Method: method, Message: "more than 1000 pages"}
}

// CallTool calls a tool. args is marshalled as the arguments object (nil
// sends none). A tool result with IsError is returned as a result, not an
// error.
func (c *Client) CallTool(ctx context.Context, name string, args any, opts ...CallOption) (*CallToolResult, error) {
	p := messages.CallToolParams{Name: name}
	if args != nil {
		raw, err := json.Marshal(args)
		if err != nil {
			return nil, &Error{Kind: KindProtocol, Method: messages.MethodCallTool, Message: "arguments could not be encoded", Err: err}
		}
		p.Arguments = raw
	}
	var raw json.RawMessage
	err := c.Call(ctx, messages.MethodCallTool, p, &raw, opts...)
	if errors.Is(err, messages.ErrHeaderMismatch) && c.Era() == EraModern {
		// The server disagrees with our Mcp-Param-* headers: the tool's
		// annotations may have changed. Refresh them and retry once.
		if _, lerr := c.ListTools(ctx); lerr == nil {
			err = c.Call(ctx, messages.MethodCallTool, p, &raw, opts...)
		}
	}
	if err != nil {
		return nil, err
	}
	return c.toolResult(ctx, raw, opts)
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
