package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

const (
	defaultMaxEventBytes  = defaultMaxMessageBytes
	defaultMaxBodyBytes   = defaultMaxMessageBytes
	defaultMaxSessionID   = 4 << 10
	defaultConnectTimeout = 30 * time.Second
	defaultIdleTimeout    = 5 * time.Minute

	// defaultRetry is the wait before resuming a stream whose server gave
	// no retry field.
	defaultRetry = time.Second
	// maxResumeAttempts bounds the reconnections of one request's stream
	// that bring nothing new (no event, no event id) in a row.
	maxResumeAttempts = 5
	// maxStandaloneFailures bounds the failed (re)connections of the
	// legacy standalone GET stream in a row; maxBackoff caps their backoff.
	maxStandaloneFailures = 5
	maxBackoff            = 30 * time.Second
	// deleteTimeout bounds the DELETE that ends a legacy session on Close.
	deleteTimeout = 2 * time.Second
	// maxLoggedBody caps the error body of a notification POST kept for the
	// log.
	maxLoggedBody = 4 << 10

	acceptPost = "application/json, text/event-stream"
	acceptSSE  = "text/event-stream"
)

// ErrSessionTerminated is returned by Read (wrapping io.EOF, after every
// message already received) once a legacy server answered 404 to a request
// that carried its Mcp-Session-Id (a POST, the standalone GET or the GET
// resuming a stream): the session is gone, and the client must connect
// again (a new initialize).
var ErrSessionTerminated = errors.New("transport: the server ended the HTTP session (404)")

// errCancelled ends the response stream of a request the client cancelled.
var errCancelled = errors.New("transport: request cancelled by the client")

// errNoAnswer fails a request whose JSON response body held other messages
// but not its response.
var errNoAnswer = errors.New("transport: the JSON response body did not answer the request")

// HTTP is a Transport that speaks MCP's Streamable HTTP to one endpoint, in
// both eras: legacy (2025-06-18, 2025-11-25: sessions, a standalone GET
// stream, server requests on SSE streams, resumption with Last-Event-ID) and
// modern (2026-07-28: stateless POSTs with mirrored headers, cancellation by
// closing the response stream). Until the client calls SetSession, a message
// whose params._meta carries io.modelcontextprotocol/protocolVersion is sent
// the modern way and any other the legacy way, which is what era detection
// (a server/discover probe, then initialize) needs.
//
// The zero value of every field but URL is a valid configuration.
type HTTP struct {
	// URL is the MCP endpoint (http or https).
	URL string
	// Client sends the requests. Nil means a client of our own, with dial
	// and TLS handshake timeouts, that refuses redirects to another origin.
	// Its timeout, if any, must allow for long-lived SSE streams.
	Client *http.Client
	// Header is added to every request (authentication, for example). The
	// headers the transport owns (Accept, Content-Type, MCP-Protocol-Version,
	// Mcp-Session-Id, Mcp-Method, Mcp-Name, Mcp-Param-*, Last-Event-ID) are
	// ignored here.
	Header http.Header
	// MaxEventBytes caps one SSE event; 0 means 64 MiB. A larger event fails
	// the request it belongs to with *MessageTooLongError and ends its
	// stream (on the standalone stream, it is logged as a warning).
	MaxEventBytes int
	// MaxBodyBytes caps one application/json response body (and an HTTP
	// error body); 0 means 64 MiB. A larger body fails its request with
	// *MessageTooLongError. Both limits take memory as a message arrives,
	// as Command.MaxMessageBytes does.
	MaxBodyBytes int
	// MaxSessionIDBytes caps the Mcp-Session-Id a legacy server may give;
	// 0 means 4 KiB. The id is sent back on every request: a longer one,
	// or one with a byte outside visible ASCII, fails the request whose
	// response carried it with *SessionIDError (an initialize: no session).
	MaxSessionIDBytes int
	// ConnectTimeout bounds the time from sending a message to its response
	// headers; 0 means 30 s. A request other than the handshake
	// (server/discover, initialize) is not bounded by it: a server may
	// answer with one JSON body once the work is done, so such a request
	// waits as long as its call does (the call's deadline or its caller
	// cancels it, which closes its exchange).
	ConnectTimeout time.Duration
	// IdleTimeout drops a response stream on which no byte (not even a
	// keep-alive comment) arrived for this long; 0 means 5 min.
	IdleTimeout time.Duration
	// Logger receives what the transport cannot report as a message: a
	// notification the server refused, a standalone stream that failed. Nil
	// discards.
	Logger *slog.Logger
	// SSEFallback moves the connection to the deprecated HTTP+SSE
	// transport (see SSE) at the same URL when the server answers the
	// first initialize with a 4xx other than 401 and 403, as servers that
	// speak only HTTP+SSE do; the initialize is sent again there. If no
	// SSE stream with an endpoint event can be opened either, the
	// initialize fails with the first answer.
	SSEFallback bool
}

// Connect checks the configuration and returns a Conn. It does no I/O: the
// first request is the first contact with the server.
func (h *HTTP) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := ParseEndpoint(h.URL)
	if err != nil {
		return nil, err
	}
	if err := checkHeader(h.Header); err != nil {
		return nil, err
	}

	c := &httpConn{
		endpoint:       u.String(),
		redacted:       u.Redacted(),
		origin:         u.Scheme + "://" + strings.ToLower(u.Host),
		client:         h.Client,
		extra:          h.Header.Clone(),
		maxEvent:       orDefault(h.MaxEventBytes, defaultMaxEventBytes),
		maxBody:        orDefault(h.MaxBodyBytes, defaultMaxBodyBytes),
		maxSessionID:   orDefault(h.MaxSessionIDBytes, defaultMaxSessionID),
		connectTimeout: orDefault(h.ConnectTimeout, defaultConnectTimeout),
		idleTimeout:    orDefault(h.IdleTimeout, defaultIdleTimeout),
		log:            h.Logger,
		calls:          make(map[messages.ID]*httpCall),
	}
	c.in = newBoundedInbox(&c.mu, MaxQueuedBytes)
	if c.client == nil {
		c.client, c.ownClient = newHTTPClient(), true
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.extra == nil {
		c.extra = http.Header{}
	}
	for name := range c.extra {
		if protocolHeader(name) {
			delete(c.extra, name)
		}
	}
	c.errNoHeaders = fmt.Errorf("no response headers within %v", c.connectTimeout)
	c.errIdle = fmt.Errorf("stream idle for %v", c.idleTimeout)
	c.base, c.stop = context.WithCancelCause(context.Background())
	if h.SSEFallback {
		return &fallbackConn{cur: c, sse: SSE{URL: h.URL, Client: h.Client, Header: h.Header, MaxEventBytes: h.MaxEventBytes,
			ConnectTimeout: h.ConnectTimeout, Logger: h.Logger}}, nil
	}
	return c, nil
}

// ParseEndpoint checks that raw can be the URL of an HTTP transport: http
// or https, with a host. It returns the URL with its scheme in lower case
// and without a fragment.
func ParseEndpoint(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("transport: invalid HTTP endpoint: %w", err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("transport: HTTP endpoint %s: scheme must be http or https", u.Redacted())
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("transport: HTTP endpoint %s has no host", u.Redacted())
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// protocolHeader reports whether the transport owns header name.
func protocolHeader(name string) bool {
	switch name = http.CanonicalHeaderKey(name); name {
	case "Accept", "Content-Type", "Mcp-Protocol-Version", "Mcp-Session-Id", "Mcp-Method", "Mcp-Name", "Last-Event-Id":
		return true
	}
	return strings.HasPrefix(name, "Mcp-Param-")
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// newHTTPClient is the client used when HTTP.Client is nil. It has no
// overall timeout (streams live long); ConnectTimeout and IdleTimeout bound
// each exchange instead.
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 10 * time.Second
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || !strings.EqualFold(req.URL.Host, first.Host) {
				return fmt.Errorf("refusing a redirect to another origin (%s)", req.URL.Redacted())
			}
			return nil
		},
	}
}

// httpConn is one Streamable HTTP connection.
//
// Concurrency: every client message is its own HTTP exchange. Write builds
// the request and, for a request, hands it to a goroutine of its own
// (runCall) that reads the response — a JSON body or an SSE stream, resumed
// if need be — and returns once the request is on the wire; for a
// notification or a response it waits for the status (202) itself. In the
// legacy era one more goroutine (runStandalone) keeps the GET stream open.
// All of them append what they receive to one unbounded queue that Read
// drains, so no stream ever waits for the reader. Everything shared is
// guarded by mu; per-request state lives in httpCall. Close cancels the
// base context every exchange derives from, waits for every goroutine and
// for every Write in progress (wg), then ends the legacy session.
type httpConn struct {
	endpoint       string // the URL, credentials included
	redacted       string // the URL for messages and logs
	origin         string
	client         *http.Client
	ownClient      bool
	extra          http.Header // read-only after Connect
	maxEvent       int
	maxBody        int
	maxSessionID   int
	connectTimeout time.Duration
	idleTimeout    time.Duration
	errNoHeaders   error
	errIdle        error
	log            *slog.Logger

	base      context.Context // cancelled by Close, with ErrClosed
	stop      context.CancelCauseFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu          sync.Mutex
	closed      bool
	in          inbox // what Read returns; in.done is closed when Close begins
	fatal       error // returned by Read once the inbox is empty
	sessionID   string
	version     string
	era         messages.Era
	standalone  bool                         // the GET stream was started
	toolHeaders map[string]map[string]string // replaced, never mutated
	calls       map[messages.ID]*httpCall    // requests in flight, by id
	reqHeaders  map[messages.ID]http.Header  // SetRequestHeader's, by request id
}

// httpCall is one client request in flight.
type httpCall struct {
	key    messages.ID // the id, by which a response names it (messages.ResponseTo)
	id     string      // the raw id, compact: Message.Related
	modern bool        // sent the modern way: closing its stream cancels it
	ctx    context.Context
	cancel context.CancelCauseFunc

	// Guarded by httpConn.mu.
	answered  bool // its response (or its failure) was queued
	withdrawn bool // the client cancelled it: nothing more is delivered
}

// settled reports whether cl needs nothing more; mu is held.
func (cl *httpCall) settled() bool { return cl.answered || cl.withdrawn }

// Origin returns scheme://host[:port] of the endpoint, in lower case.
func (c *httpConn) Origin() string { return c.origin }

// SetSession records the negotiated version and era. In the legacy era it
// opens the standalone GET stream.
func (c *httpConn) SetSession(version string, era messages.Era) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version, c.era = version, era
	if era == messages.EraLegacy && !c.standalone && !c.closed {
		c.standalone = true
		c.wg.Add(1)
		go c.runStandalone()
	}
}

// SetToolHeaders replaces the map tool → argument → header name used for
// the Mcp-Param-* headers of modern tools/call requests.
func (c *httpConn) SetToolHeaders(headers map[string]map[string]string) {
	copied := make(map[string]map[string]string, len(headers))
	for tool, args := range headers {
		copied[tool] = maps.Clone(args)
	}
	c.mu.Lock()
	c.toolHeaders = copied
	c.mu.Unlock()
}

// SetRequestHeader sets the caller's headers of the request id (nil: forget
// them); reserved names are left out.
func (c *httpConn) SetRequestHeader(id messages.ID, h http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h == nil {
		delete(c.reqHeaders, id)
		return
	}
	if c.reqHeaders == nil {
		c.reqHeaders = map[messages.ID]http.Header{}
	}
	c.reqHeaders[id] = h.Clone()
}

// Read returns the next message from any stream, in arrival order; the
// fatal error once the inbox is empty.
func (c *httpConn) Read(ctx context.Context) (Message, error) {
	return c.in.next(ctx, func() bool { return c.closed }, func() error { return c.fatal })
}

// Write sends one message as its own POST. For a request it returns once
// the request is written (its response is read in the background; a
// failure becomes an error response for that id). For a notification or a
// response it returns once the server answered (a status other than 202 is
// logged, not returned). A modern notifications/cancelled is not sent: the
// request's response stream is closed instead. Write returns an error only
// for a message that is not a JSON object, for ctx, or after Close.
func (c *httpConn) Write(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := parseOutgoing(data)
	if err != nil {
		return err
	}
	m.data = bytes.Clone(data)

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	modern := c.era == messages.EraModern || (c.era == "" && m.metaVersion != "")
	if m.kind == kindNotification && m.method == methodCancelled {
		target := c.callFor(m.params["requestId"])
		if modern || (target != nil && target.modern) {
			// Modern: closing the response stream is the cancellation.
			if target != nil {
				target.withdrawn = true
			}
			c.mu.Unlock()
			if target != nil {
				target.cancel(errCancelled)
			} else {
				c.log.Debug("transport: cancellation of a request not in flight dropped", "requestId", string(m.params["requestId"]))
			}
			return nil
		}
	}
	hdr, sessionSent := c.postHeaderLocked(m, modern)
	c.wg.Add(1)
	c.mu.Unlock()

	if m.kind == kindRequest {
		return c.startCall(ctx, m, hdr, modern, sessionSent)
	}
	defer c.wg.Done()
	c.post(ctx, m, hdr, modern, sessionSent)
	if c.isClosed() {
		return ErrClosed
	}
	return ctx.Err()
}

// callFor returns the request in flight with this id, if any; mu is held.
func (c *httpConn) callFor(id []byte) *httpCall {
	if key, _, ok := messages.NamedID(id); ok {
		return c.calls[key]
	}
	return nil
}

// postHeaderLocked builds the headers of the POST of m. sessionSent reports
// whether it carries Mcp-Session-Id (a 404 then means the session is gone).
func (c *httpConn) postHeaderLocked(m *outgoing, modern bool) (h http.Header, sessionSent bool) {
	h = c.extra.Clone()
	if m.kind == kindRequest {
		for k, vs := range c.reqHeaders[m.key] {
			if !ReservedHeader(k) {
				h[http.CanonicalHeaderKey(k)] = vs
			}
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", acceptPost)
	switch {
	case modern:
		version := m.metaVersion // the header must equal the body's
		if version == "" {
			version = c.version
		}
		if version != "" {
			h.Set("Mcp-Protocol-Version", version)
		}
		if m.method != "" {
			h.Set("Mcp-Method", m.method)
		}
		if name, ok := m.nameParam(); ok {
			h.Set("Mcp-Name", encodeHeaderValue(name))
		}
		for k, v := range m.paramHeaders(c.toolHeaders) {
			h.Set(k, v)
		}
	case m.method == methodInitialize:
		// A new session: no version, no session id.
	default:
		if c.version != "" {
			h.Set("Mcp-Protocol-Version", c.version)
		}
		if c.sessionID != "" {
			h.Set("Mcp-Session-Id", c.sessionID)
			sessionSent = true
		}
	}
	return h, sessionSent
}

// getHeader builds the headers of a legacy GET (standalone stream or
// resumption).
func (c *httpConn) getHeader(lastEventID string) http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.extra.Clone()
	h.Set("Accept", acceptSSE)
	if c.version != "" {
		h.Set("Mcp-Protocol-Version", c.version)
	}
	if c.sessionID != "" {
		h.Set("Mcp-Session-Id", c.sessionID)
	}
	if lastEventID != "" {
		h.Set("Last-Event-ID", lastEventID)
	}
	return h
}

// startCall registers request m and starts its exchange; the caller has
// done wg.Add(1) for it. It returns once the request is written or failed.
func (c *httpConn) startCall(ctx context.Context, m *outgoing, hdr http.Header, modern, sessionSent bool) error {
	cctx, cancel := context.WithCancelCause(c.base)
	cl := &httpCall{key: m.key, id: m.id, modern: modern, ctx: cctx, cancel: cancel}
	c.mu.Lock()
	c.calls[cl.key] = cl // a duplicate id in flight: the newer one wins
	c.mu.Unlock()

	sent := make(chan struct{})
	var once sync.Once
	wrote := func() { once.Do(func() { close(sent) }) }
	go c.runCall(cl, m.data, hdr, sessionSent, wrote, c.headerTimeout(m.method))
	select {
	case <-sent:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.base.Done(): // Close
		return ErrClosed
	}
}

// headerTimeout is how long a request of method may wait for its response
// headers: ConnectTimeout for the handshake, which the client never
// cancels; no bound (0) for any other request, whose call's end cancels it.
func (c *httpConn) headerTimeout(method string) time.Duration {
	if method == messages.MethodInitialize || method == messages.MethodDiscover {
		return c.connectTimeout
	}
	return 0
}

// runCall performs the POST of one request and reads its response until the
// response arrived, the request failed, it was cancelled or Close.
// awaitHeaders bounds the wait for the response headers (0: none).
func (c *httpConn) runCall(cl *httpCall, body []byte, hdr http.Header, sessionSent bool, wrote func(), awaitHeaders time.Duration) {
	defer c.wg.Done()
	defer c.forget(cl)
	defer wrote()

	ex, err := c.open(cl.ctx, http.MethodPost, body, hdr, wrote, awaitHeaders)
	if err != nil {
		c.fail(cl, fmt.Errorf("transport: %w", err))
		return
	}
	defer func() { ex.close() }()
	resp := ex.resp
	if !cl.modern {
		if err := c.noteSession(resp); err != nil {
			c.fail(cl, err)
			return
		}
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		c.fail(cl, c.statusError(resp, nil))
	case resp.StatusCode == http.StatusNotFound && sessionSent:
		// The session is gone: no per-request error, Read ends with
		// ErrSessionTerminated, so every call in flight fails with it
		// and the client can start a fresh session and retry.
		c.sessionLost(hdr.Get("Mcp-Session-Id"))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		c.failHTTP(cl, ex)
	default:
		switch mediaType(resp) {
		case "application/json":
			c.readJSON(cl, ex)
		case "text/event-stream":
			ex = c.readStream(cl, ex)
		default:
			excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyExcerpt))
			c.fail(cl, c.statusError(resp, excerpt))
		}
	}
}

// forget removes a finished request and releases its context.
func (c *httpConn) forget(cl *httpCall) {
	c.mu.Lock()
	if c.calls[cl.key] == cl {
		delete(c.calls, cl.key)
	}
	c.mu.Unlock()
	cl.cancel(nil)
}

// readJSON delivers an application/json response; a JSON-RPC error with a
// null id answers the request, given its id, as after an HTTP error status.
func (c *httpConn) readJSON(cl *httpCall, ex *exchange) {
	body, err := readAll(ex.resp.Body, c.maxBody)
	var tooLong *MessageTooLongError
	switch {
	case errors.As(err, &tooLong):
		c.fail(cl, tooLong)
		return
	case err != nil:
		c.fail(cl, fmt.Errorf("transport: reading the response: %w", ex.why(err)))
		return
	}
	if errObj, ok := unattributedError(body); ok {
		c.settle(cl, Message{Data: passError(cl.id, errObj), Related: cl.id})
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		c.deliver(cl, body)
	}
	c.fail(cl, errNoAnswer)
}

// readStream delivers an SSE response stream, resuming it (legacy) if it
// ends before the response. It returns the exchange in use at the end.
func (c *httpConn) readStream(cl *httpCall, ex *exchange) *exchange {
	p := newSSEParser(c.maxEvent)
	p.reset(ex.resp.Body)
	fruitless := 0 // resumptions in a row that brought nothing
	for {
		err := c.pump(cl, p)
		reason := ex.why(err)
		ex.close()
		if c.isSettled(cl) {
			return ex
		}
		var tooLong *MessageTooLongError
		if errors.As(err, &tooLong) {
			c.fail(cl, tooLong)
			return ex
		}
		if cl.modern || p.lastID == "" {
			c.fail(cl, streamEnded("", reason))
			return ex
		}
		// Legacy (2025-11-25): a dropped stream is not a cancellation;
		// resume it with GET and Last-Event-ID after the server's retry.
		if p.takeProgress() {
			fruitless = 0
		}
		for {
			fruitless++
			if fruitless > maxResumeAttempts {
				c.fail(cl, streamEnded(fmt.Sprintf(" and could not be resumed (%d attempts)", maxResumeAttempts), reason))
				return ex
			}
			if !sleep(cl.ctx, p.retryOr(defaultRetry)) {
				return ex
			}
			hdr := c.getHeader(p.lastID)
			next, err := c.open(cl.ctx, http.MethodGet, nil, hdr, nil, c.connectTimeout)
			if err != nil {
				if cl.ctx.Err() != nil {
					return ex
				}
				reason = err
				c.log.Debug("transport: resuming a response stream failed", "url", c.redacted, "id", cl.id, "err", err)
				continue
			}
			if err := c.noteSession(next.resp); err != nil {
				next.close()
				c.fail(cl, err)
				return ex
			}
			if next.resp.StatusCode == http.StatusOK && mediaType(next.resp) == "text/event-stream" {
				ex = next
				break
			}
			status := next.resp.Status
			next.close()
			reason = fmt.Errorf("resumption answered HTTP %s", status)
			if next.resp.StatusCode >= 400 && next.resp.StatusCode <= 499 {
				c.fail(cl, streamEnded(" and could not be resumed", reason))
				if next.resp.StatusCode == http.StatusNotFound {
					c.sessionLost(hdr.Get("Mcp-Session-Id"))
				}
				return ex
			}
		}
		p.reset(ex.resp.Body)
	}
}

// pump delivers the messages of an SSE stream until it ends, or (cl is
// not nil) until cl is settled: once a request has its response the stream
// has nothing more to say (the server should have ended it), and closing
// it then cancels nothing. cl is nil for the standalone stream.
func (c *httpConn) pump(cl *httpCall, p *sseParser) error {
	for {
		data, err := p.next()
		if err != nil {
			return err
		}
		if c.deliver(cl, data) {
			return nil
		}
	}
}

// deliver queues the messages of one payload for Read, noting responses,
// and reports whether cl (nil: none) is now settled. Nothing is delivered
// for a request the client cancelled.
func (c *httpConn) deliver(cl *httpCall, data []byte) (settled bool) {
	msgs := splitMessages(data)
	related := ""
	if cl != nil {
		related = cl.id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Wait for room (c.mu is released meanwhile): this stream is not read
	// on while Read's caller is MaxQueuedBytes behind.
	c.in.waitRoom(int64(len(data)), func() bool { return c.closed || cl != nil && cl.withdrawn })
	if c.closed {
		return true
	}
	if cl != nil && cl.withdrawn {
		return true
	}
	for _, m := range msgs {
		// A response names its call by the runtime's own rule: a malformed
		// one (both result and error, neither, an id written 3.0) ends the
		// call there as it fails it there, at once.
		if key, ok := messages.ResponseTo(m); ok {
			if target := c.calls[key]; target != nil {
				target.answered = true
			}
		}
		c.in.push(Message{Data: m, Related: related})
	}
	return cl != nil && cl.settled()
}

// fail reports that request cl will get no response, unless it is already
// answered, cancelled, or the connection closed.
func (c *httpConn) fail(cl *httpCall, err error) {
	c.settle(cl, Message{Related: cl.id, Err: err})
}

// settle queues m as the answer to cl if cl has none yet.
func (c *httpConn) settle(cl *httpCall, m Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl.settled() || c.closed {
		return
	}
	cl.answered = true
	c.in.push(m)
}

// failHTTP answers cl after an HTTP error status: the server's JSON-RPC
// error if the body is one (given our id: servers often send a null id
// there), else an *HTTPStatusError.
func (c *httpConn) failHTTP(cl *httpCall, ex *exchange) {
	resp := ex.resp
	body, err := readAll(resp.Body, c.maxBody)
	if err == nil {
		if errObj, ok := rpcErrorObject(body); ok {
			c.settle(cl, Message{Data: passError(cl.id, errObj), Related: cl.id})
			return
		}
	}
	c.fail(cl, c.statusError(resp, body))
}

// statusError describes a response that carries no JSON-RPC answer; body
// is what was read of it.
func (c *httpConn) statusError(resp *http.Response, body []byte) *HTTPStatusError {
	if len(body) > maxBodyExcerpt {
		body = body[:maxBodyExcerpt]
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	if len(challenge) > maxBodyExcerpt {
		challenge = challenge[:maxBodyExcerpt]
	}
	return &HTTPStatusError{URL: c.redacted, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
		Body: strings.ToValidUTF8(string(body), "\uFFFD"), Challenge: strings.ToValidUTF8(challenge, "\uFFFD")}
}

// streamEnded is the failure of a request whose response stream ended
// before its response; more says what else was tried, reason why the
// stream ended (nil or io.EOF: the server ended it).
func streamEnded(more string, reason error) error {
	const ended = "transport: the response stream ended before the response"
	if reason == nil || errors.Is(reason, io.EOF) {
		return errors.New(ended + more)
	}
	return fmt.Errorf("%s%s: %w", ended, more, reason)
}

func (c *httpConn) isSettled(cl *httpCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cl.settled() || c.closed
}

// post sends a notification or a response and waits for the status.
// Failures are logged: a lost notification does not end the connection. A
// legacy notifications/cancelled also closes the stream of the request it
// cancels (the server will not answer it).
func (c *httpConn) post(ctx context.Context, m *outgoing, hdr http.Header, modern, sessionSent bool) {
	pctx, cancel := context.WithCancelCause(c.base)
	defer cancel(nil)
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()

	if m.method == methodCancelled {
		defer c.withdraw(m)
	}
	ex, err := c.open(pctx, http.MethodPost, m.data, hdr, nil, c.connectTimeout)
	if err != nil {
		if pctx.Err() == nil {
			c.log.Warn("transport: sending a message failed", "url", c.redacted, "method", m.method, "err", err)
		}
		return
	}
	defer ex.close()
	if !modern {
		if err := c.noteSession(ex.resp); err != nil {
			c.log.Warn("transport: refusing the session id of a response to a message", "url", c.redacted, "method", m.method, "err", err)
			return
		}
	}
	if ex.resp.StatusCode == http.StatusAccepted {
		return
	}
	attrs := []any{"url", c.redacted, "method", m.method, "status", ex.resp.Status}
	if ex.resp.StatusCode < 200 || ex.resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(ex.resp.Body, maxLoggedBody))
		attrs = append(attrs, "body", string(body))
	}
	c.log.Warn("transport: the server did not accept a message with 202", attrs...)
	if ex.resp.StatusCode == http.StatusNotFound && sessionSent {
		c.sessionLost(hdr.Get("Mcp-Session-Id"))
	}
}

// withdraw closes the stream of the request a legacy cancellation names:
// the server will not answer it, and the client ignores a late answer.
func (c *httpConn) withdraw(m *outgoing) {
	c.mu.Lock()
	target := c.callFor(m.params["requestId"])
	if target != nil {
		target.withdrawn = true
	}
	c.mu.Unlock()
	if target != nil {
		target.cancel(errCancelled)
	}
}

// noteSession captures an Mcp-Session-Id from a legacy response. An id it
// refuses (*SessionIDError) is not kept: the caller fails what the
// response answers.
func (c *httpConn) noteSession(resp *http.Response) error {
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		return nil
	}
	if err := checkSessionID(sid, c.maxSessionID); err != nil {
		return err
	}
	c.mu.Lock()
	c.sessionID = sid
	c.mu.Unlock()
	return nil
}

// sessionLost makes Read end once drained: the server answered 404 to a
// request (POST or GET) that carried session sid, so it no longer knows it.
func (c *httpConn) sessionLost(sid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal == nil && sid != "" && sid == c.sessionID {
		c.fatal = fmt.Errorf("%w: %w", ErrSessionTerminated, io.EOF)
		c.in.poke()
	}
}

// runStandalone keeps the legacy GET stream open until Close: it reconnects
// after the server's retry (with Last-Event-ID), backing off while
// connecting fails, and gives up on a 4xx (405: the server offers no such
// stream) or after maxStandaloneFailures failures in a row.
func (c *httpConn) runStandalone() {
	defer c.wg.Done()
	p := newSSEParser(c.maxEvent)
	failures := 0
	for first := true; ; first = false {
		if !first {
			if failures > maxStandaloneFailures {
				c.log.Warn("transport: giving up on the standalone SSE stream", "url", c.redacted, "failures", failures-1)
				return
			}
			if !sleep(c.base, backoff(p.retryOr(defaultRetry), failures)) {
				return
			}
		}
		hdr := c.getHeader(p.lastID)
		ex, err := c.open(c.base, http.MethodGet, nil, hdr, nil, c.connectTimeout)
		if err != nil {
			if c.base.Err() != nil {
				return
			}
			failures++
			c.log.Debug("transport: opening the standalone SSE stream failed", "url", c.redacted, "err", err)
			continue
		}
		if err := c.noteSession(ex.resp); err != nil {
			ex.close()
			c.log.Warn("transport: giving up on the standalone SSE stream", "url", c.redacted, "err", err)
			return
		}
		status := ex.resp.StatusCode
		switch {
		case status == http.StatusMethodNotAllowed:
			ex.close()
			c.log.Debug("transport: the server offers no standalone SSE stream (405)", "url", c.redacted)
			return
		case status >= 400 && status <= 499:
			ex.close()
			c.log.Warn("transport: the server refused the standalone SSE stream", "url", c.redacted, "status", ex.resp.Status)
			if status == http.StatusNotFound {
				c.sessionLost(hdr.Get("Mcp-Session-Id"))
			}
			return
		case status != http.StatusOK || mediaType(ex.resp) != "text/event-stream":
			ex.close()
			failures++
			c.log.Debug("transport: unexpected answer to the standalone GET", "url", c.redacted, "status", ex.resp.Status,
				"content-type", ex.resp.Header.Get("Content-Type"))
			continue
		}
		p.reset(ex.resp.Body)
		err = c.pump(nil, p)
		reason := ex.why(err)
		ex.close()
		if c.base.Err() != nil {
			return
		}
		var tooLong *MessageTooLongError
		if errors.As(err, &tooLong) {
			// No request to fail: the message is lost, say so.
			c.log.Warn("transport: dropped a message of the standalone SSE stream", "url", c.redacted, "err", tooLong)
		}
		if p.takeProgress() || errors.Is(reason, c.errIdle) {
			failures = 1 // a healthy stream that ended: wait retry, then reconnect
		} else {
			failures++
		}
		c.log.Debug("transport: the standalone SSE stream ended", "url", c.redacted, "err", reason)
	}
}

// backoff is base doubled for each failure after the first, at most
// maxBackoff (or base, if the server asked for more).
func backoff(base time.Duration, failures int) time.Duration {
	d := base
	for i := 1; i < failures && d < maxBackoff; i++ {
		d *= 2
	}
	return max(min(d, maxBackoff), min(base, maxRetry))
}

// Close cancels every stream, waits for every goroutine, ends a legacy
// session with DELETE (a 405 is fine), and makes Read and Write return
// ErrClosed. Every call returns nil once that is done.
func (c *httpConn) Close() error {
	c.closeOnce.Do(c.shutdown)
	return nil
}

func (c *httpConn) shutdown() {
	c.mu.Lock()
	c.closed = true
	c.in.clear()
	c.in.poke() // Read sees ErrClosed
	legacySession := c.era != messages.EraModern && c.sessionID != ""
	c.mu.Unlock()
	c.stop(ErrClosed)
	c.wg.Wait()
	if legacySession {
		c.deleteSession()
	}
	if c.ownClient {
		c.client.CloseIdleConnections()
	}
}

// deleteSession asks the server to end the legacy session.
func (c *httpConn) deleteSession() {
	ctx, cancel := context.WithTimeout(context.Background(), deleteTimeout)
	defer cancel()
	hdr := c.getHeader("")
	hdr.Del("Accept")
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return
	}
	req.Header = hdr
	resp, err := c.client.Do(req)
	if err != nil {
		c.log.Debug("transport: ending the HTTP session failed", "url", c.redacted, "err", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusMethodNotAllowed {
		c.log.Debug("transport: ending the HTTP session failed", "url", c.redacted, "status", resp.Status)
	}
}

func (c *httpConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// exchange is one HTTP request and its response, read under ctx: Close,
// a cancellation, the connect timeout and the idle timeout all end it by
// cancelling ctx, with a cause.
type exchange struct {
	resp   *http.Response
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   *time.Timer
}

// open sends a request and returns once the response headers arrived,
// within awaitHeaders (0: no bound). wrote, if set, is called once the
// request is written.
func (c *httpConn) open(ctx context.Context, method string, body []byte, hdr http.Header, wrote func(), awaitHeaders time.Duration) (*exchange, error) {
	ectx, cancel := context.WithCancelCause(ctx)
	reqCtx := ectx
	if wrote != nil {
		reqCtx = httptrace.WithClientTrace(ectx, &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() },
		})
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(reqCtx, method, c.endpoint, rd)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	req.Header = hdr
	var timer *time.Timer
	if awaitHeaders > 0 {
		timer = time.AfterFunc(awaitHeaders, func() { cancel(c.errNoHeaders) })
	}
	resp, err := c.client.Do(req)
	if timer != nil && !timer.Stop() && err == nil {
		// The timer fired as the headers arrived: ectx is cancelled, so the
		// body is unreadable; report the timeout.
		resp.Body.Close()
		err = c.errNoHeaders
	}
	if err != nil {
		cause := context.Cause(ectx)
		cancel(nil)
		if errors.Is(cause, c.errNoHeaders) {
			return nil, fmt.Errorf("%s %s: %w", method, c.redacted, cause)
		}
		return nil, err
	}
	ex := &exchange{resp: resp, ctx: ectx, cancel: cancel}
	ex.idle = time.AfterFunc(c.idleTimeout, func() { cancel(c.errIdle) })
	resp.Body = &idleBody{ReadCloser: resp.Body, timer: ex.idle, d: c.idleTimeout}
	return ex, nil
}

// close releases the exchange; it may be called more than once.
func (ex *exchange) close() {
	ex.idle.Stop()
	ex.resp.Body.Close()
	ex.cancel(nil)
}

// why explains a read error: the timeout or cancellation that caused it,
// if any.
func (ex *exchange) why(err error) error {
	if cause := context.Cause(ex.ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// idleBody re-arms the idle timer on every read that brings bytes.
type idleBody struct {
	io.ReadCloser
	timer *time.Timer
	d     time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.d)
	}
	return n, err
}

// readAll reads all of r, a response body, failing with
// *MessageTooLongError past limit bytes, which it refuses holding about
// the limit: the buffer grows as grow says, and fit trims it.
func readAll(r io.Reader, limit int) ([]byte, error) {
	var b []byte
	for {
		if len(b) > limit {
			return nil, &MessageTooLongError{What: "JSON response body", Limit: limit, Setting: "transport.HTTP.MaxBodyBytes"}
		}
		b = grow(b, 1, limit+1)
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case errors.Is(err, io.EOF):
			if len(b) > limit {
				continue
			}
			return fit(b), nil
		case err != nil:
			return nil, err
		}
	}
}

func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return fmt.Sprintf("%d %s", code, t)
	}
	return fmt.Sprint(code)
}

// sleep waits d, or reports false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
