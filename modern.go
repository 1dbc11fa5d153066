package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/internal/tracing"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// DefaultDiscoverTimeout bounds the server/discover probe. A legacy server
// almost always refuses the probe at once (-32601); the wait is for one that
// ignores unknown methods, and it must not misfire on a loaded machine (six
// servers starting at once on two cores took over 3 s to answer, and fell
// back to initialize).
const DefaultDiscoverTimeout = 10 * time.Second

// DefaultMaxRounds is Options.MaxRounds's default.
const DefaultMaxRounds = actors.DefaultMaxRounds

// negotiate picks the era: pinned legacy → initialize; else probe
// server/discover: a mutual modern version → modern; -32022 with a version
// list → modern, once more with a listed version (and no fallback when that
// fails too); a server that cannot be
// reached, or answers something that is not MCP → a failure to connect;
// anything else → initialize (unless modern was pinned).
func (c *Client) negotiate(ctx context.Context, s *session) error {
	pinned := c.opts.Era
	if pinned != "" && pinned != EraLegacy && pinned != EraModern {
		return &Error{Kind: KindUsage, Message: fmt.Sprintf("unknown era %q: want \"\", %q or %q", pinned, EraLegacy, EraModern)}
	}
	if e, ok := era.Of(c.opts.ProtocolVersion); ok {
		if pinned != "" && pinned != e {
			return &Error{Kind: KindUsage, Message: fmt.Sprintf("protocol version %s is not of the %s era", c.opts.ProtocolVersion, pinned)}
		}
		pinned = e
	} else if c.opts.ProtocolVersion != "" {
		return &Error{Kind: KindUsage, Message: fmt.Sprintf("Conduit does not speak protocol version %q", c.opts.ProtocolVersion)}
	}
	if lo, ok := s.rt.Conn().(transport.LegacyOnly); ok && lo.LegacyOnly() && pinned == "" {
		pinned = EraLegacy // HTTP+SSE: no probe
	}
	if pinned == EraLegacy {
		return notAnEndpoint(c.initialize(ctx, s))
	}
	version := era.ModernVersions[0]
	if pinned == EraModern && c.opts.ProtocolVersion != "" {
		version = c.opts.ProtocolVersion
	}
	for attempt := 0; attempt < 2; attempt++ {
		probe, err := c.discover(ctx, s, version)
		if err != nil {
			return err
		}
		switch {
		case probe.Era == messages.EraModern && probe.Retry != "" && attempt == 0:
			version = probe.Retry
			continue
		case probe.Era == messages.EraModern && probe.Retry == "":
			s.init = messages.InitializeResult{ProtocolVersion: probe.Version, Capabilities: probe.Result.Capabilities,
				ServerInfo: probe.Result.Meta.ServerInfo, Instructions: probe.Result.Instructions}
			s.rt.SetSession(probe.Version, EraModern)
			return nil
		}
		if attempt > 0 {
			// Its -32022 said the server is modern: no fallback to
			// initialize, whatever the second probe got.
			return &Error{Kind: KindProtocol, Method: messages.MethodDiscover,
				Message: fmt.Sprintf("the server answered -32022 listing %s, then did not accept it", version)}
		}
		break
	}
	if pinned == EraModern {
		return &Error{Kind: KindProtocol, Method: messages.MethodDiscover, Message: "the server does not speak the modern era (2026-07-28)"}
	}
	return notAnEndpoint(c.initialize(ctx, s))
}

// discover sends the probe. A JSON-RPC answer or error is read by
// era.ReadProbe; silence, and an HTTP 4xx without a JSON-RPC error (a
// legacy Streamable HTTP server refusing a request it does not know), mean
// a legacy server, except a 401 or 403 with a Bearer challenge: a server
// that needs sign-in, which is an error. Any other failure is an error: the server could not be
// reached (connection refused, DNS, TLS), failed (5xx), or is not an MCP
// endpoint.
func (c *Client) discover(ctx context.Context, s *session, version string) (era.Probe, error) {
	timeout := c.opts.DiscoverTimeout
	if timeout <= 0 {
		timeout = DefaultDiscoverTimeout
	}
	meta, err := c.meta(version, nil)
	if err != nil {
		// Conduit's own capabilities and info, with no progress token.
		return era.Probe{}, &Error{Kind: KindInternal, Method: messages.MethodDiscover, Message: "params could not be encoded", Err: err}
	}
	params := era.Params{}.With(nil, meta)
	raw, err := s.rt.Call(ctx, messages.MethodDiscover, params, actors.CallOptions{Timeout: timeout, MaxTotalTimeout: timeout})
	if err == nil {
		return era.ReadProbe(raw, nil), nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		switch ce.Kind {
		case KindRPC:
			return era.ReadProbe(nil, ce.RPC), nil
		case KindTimeout:
			if ctx.Err() != nil {
				break // the caller's own deadline, not the probe's: no verdict
			}
			c.opts.Logger.Debug("server/discover unanswered: a legacy server", "timeout", timeout)
			return era.Probe{Era: messages.EraLegacy}, nil
		}
	}
	var status *transport.HTTPStatusError
	if errors.As(err, &status) && status.NeedsSignIn() {
		// A server that wants a sign-in says nothing of its era: the
		// authorizing transport (transport/oauth) signs in and sends the
		// probe again; without one, the caller must sign in first.
		return era.Probe{}, &Error{Kind: KindTransport, Method: messages.MethodDiscover, Message: "the server needs sign-in (OAuth)", Err: status}
	}
	if errors.As(err, &status) && era.LegacyHTTPStatus(status.Status) {
		c.opts.Logger.Debug("server/discover refused over HTTP: a legacy server", "status", status.Status)
		return era.Probe{Era: messages.EraLegacy}, nil
	}
	return era.Probe{}, notAnEndpoint(err)
}

// notAnEndpoint explains a handshake that failed on an HTTP answer showing
// that the URL serves something other than MCP: a 2xx that is not
// JSON-RPC (a web page), or a 404 or 405 to the POST of initialize.
func notAnEndpoint(err error) error {
	var status *transport.HTTPStatusError
	if !errors.As(err, &status) {
		return err
	}
	switch {
	case status.Status >= 200 && status.Status <= 299:
	case status.Status == http.StatusNotFound, status.Status == http.StatusMethodNotAllowed:
	default:
		return err
	}
	var ce *Error
	method := ""
	if errors.As(err, &ce) {
		method = ce.Method
	}
	return &Error{Kind: KindTransport, Method: method, Message: status.URL + " is not an MCP endpoint", Err: status}
}

// meta returns the _meta members of a modern request.
func (c *Client) meta(version string, progressToken any) ([]era.Member, error) {
	m, err := c.sessionMeta(version)
	if err != nil {
		return nil, err
	}
	level := ""
	if l := c.logLevel.Load(); l != nil {
		level = *l
	}
	return m.Request(level, progressToken)
}

// sessionMeta returns the _meta members fixed for version, encoded once:
// the client's capabilities and info never change, and a connected client
// speaks one version (it asks another only while it negotiates).
func (c *Client) sessionMeta(version string) (*era.Meta, error) {
	if m := c.fixedMeta.Load(); m != nil && m.Version() == version {
		return m, nil
	}
	m, err := era.NewMeta(version, c.declared.ModernCapabilities(version), Implementation{Name: c.opts.Name, Version: c.opts.Version})
	if err != nil {
		return nil, err
	}
	c.fixedMeta.Store(&m)
	return &m, nil
}

// call sends one call in the negotiated era: legacy as a plain request,
// modern with _meta, resultType checks and MRTR.
func (c *Client) call(ctx context.Context, method string, params any, o callOptions) (json.RawMessage, error) {
	raw, err := o.encodeCall(method, params)
	if err != nil {
		return nil, err
	}
	key, cacheable := cacheKey(method, raw)
	var (
		cache *listCache
		gen   int64
	)
	if cacheable {
		cache = &c.changes().cache
		gen = cache.gen.Load()
		if hit, ok := cache.get(key); ok {
			return hit, nil // not sent: no middleware sees it
		}
	}
	ctx, span := c.startCall(ctx, method, params)
	var res json.RawMessage
	if len(c.opts.SendingMiddleware) > 0 {
		res, err = c.sendThrough(ctx, method, raw, func(ctx context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
			return c.callRenewing(ctx, method, raw, o)
		})
	} else {
		res, err = c.callRenewing(ctx, method, raw, o)
	}
	endCall(span, err)
	if err == nil && cacheable && c.Era() == EraModern {
		cache.put(key, res, gen)
	}
	return res, err
}

// callRenewing sends one call on the current session, renewing a session
// the server forgot and sending it once more.
func (c *Client) callRenewing(ctx context.Context, method string, raw json.RawMessage, o callOptions) (json.RawMessage, error) {
	s := c.sess()
	res, err := c.callOn(ctx, s, method, raw, o)
	if errors.Is(err, transport.ErrSessionTerminated) {
		// The server forgot the session (legacy HTTP 404): a fresh
		// initialize, then the call once more.
		if s, err = c.renew(ctx, s, method); err != nil {
			return nil, err
		}
		res, err = c.callOn(ctx, s, method, raw, o)
	}
	if err != nil {
		return nil, c.urlElicitationRequired(s, o, err)
	}
	return res, nil
}

func (c *Client) callOn(ctx context.Context, s *session, method string, raw json.RawMessage, o callOptions) (json.RawMessage, error) {
	if err := checkHeader(s, method, o); err != nil {
		return nil, err
	}
	opts := actors.CallOptions{Timeout: o.timeout, MaxTotalTimeout: o.maxTotal, Assigns: o.assigns, Header: o.header}
	var err error
	if s.rt.Era() != EraModern {
		if o.manual != nil && o.manual.answered {
			return nil, &Error{Kind: KindUsage, Method: method, Message: "WithInputResponses in the legacy era: there is no input_required to answer"}
		}
		if tc := tracing.Members(ctx); o.progressToken != nil || tc != nil {
			if raw, err = withCallMeta(raw, nil, tc, o.progressToken); err != nil {
				return nil, &Error{Kind: KindUsage, Method: method, Err: err}
			}
		}
		res, err := s.rt.Call(ctx, method, raw, opts)
		if err != nil || !asksForInput(method, res) {
			return res, err
		}
		// A legacy result that asks for input (a go-sdk server's second
		// round for a legacy client): the rounds go on as a modern call's,
		// through the same pipeline, under the same cap (legacyrounds.go).
		m := actors.Modern{
			Method: method, Params: raw, Version: s.rt.Version(), Declared: s.rt.Config().Declared, // the handlers' (DeclareOnly)
			MaxRounds: c.opts.MaxRounds, Legacy: true, Received: res,
			Meta: func() ([]era.Member, error) { return nil, nil }, // raw has its _meta
		}
		return s.rt.CallModern(ctx, m, opts)
	}
	version := s.rt.Version()
	m := actors.Modern{
		Method: method, Params: raw, Version: version, Declared: c.declared, Tasks: c.declared.Tasks,
		MaxRounds: c.opts.MaxRounds,
		Meta:      c.requestMeta(ctx, version, o.progressToken),
	}
	if o.capabilities != nil || o.logLevel != nil {
		m.Meta = c.callMeta(ctx, version, o, &m.Declared)
	}
	o.manual.apply(&m)
	return s.rt.CallModern(ctx, m, opts)
}

// requestMeta returns what makes the _meta members of each request of a
// modern call: c.meta's, and the W3C trace context of ctx's span.
func (c *Client) requestMeta(ctx context.Context, version string, progressToken any) func() ([]era.Member, error) {
	tc := tracing.Members(ctx)
	if tc == nil {
		return func() ([]era.Member, error) { return c.meta(version, progressToken) }
	}
	return func() ([]era.Member, error) {
		m, err := c.meta(version, progressToken)
		if err != nil {
			return nil, err
		}
		return append(m, tc...), nil // m is full or the request's own: append copies or owns it
	}
}

// withProgressToken returns params with extra set and, when token is not
// nil, a _meta that asks for progress notifications under token.
func withProgressToken(params json.RawMessage, extra []era.Member, token any) (json.RawMessage, error) {
	return withCallMeta(params, extra, nil, token)
}

// withCallMeta is withProgressToken with tc (the W3C trace context, nil
// for none) in the _meta too.
func withCallMeta(params json.RawMessage, extra, tc []era.Member, token any) (json.RawMessage, error) {
	p, err := era.ParseParams(params)
	if err != nil {
		return nil, err
	}
	meta := tc
	if token != nil {
		t, err := era.ProgressToken(token)
		if err != nil {
			return nil, err
		}
		meta = append(meta[:len(meta):len(meta)], t)
	}
	return p.With(extra, meta), nil
}

func encodeParams(method string, params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	if raw, ok := params.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, &Error{Kind: KindUsage, Method: method, Message: "params are not valid JSON"}
		}
		return raw, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, &Error{Kind: KindUsage, Method: method, Message: "params could not be encoded", Err: err}
	}
	return raw, nil
}
