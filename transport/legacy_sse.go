package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxEndpointBytes caps the URL of an endpoint event.
const maxEndpointBytes = 8 << 10

// SSE is a Transport that speaks the deprecated HTTP+SSE transport of
// protocol revision 2024-11-05, which servers of that age (and some later
// ones) still offer: a GET to URL opens a Server-Sent Events stream whose
// first "endpoint" event names the URL to POST every client message to;
// every server message (responses, requests, notifications) arrives as a
// "message" event on that one stream.
//
// The endpoint is resolved against URL and must be on its origin (scheme,
// host and port): an endpoint elsewhere fails Connect, so that the
// server cannot send the client's messages to a third party. The stream is
// the session: when the server ends it, Read ends with an error wrapping
// io.EOF once what was received has been read. Close ends the GET stream.
//
// The zero value of every field but URL is a valid configuration.
type SSE struct {
	// URL is the SSE endpoint (http or https), often ending in /sse.
	URL string
	// Client sends the requests, as HTTP.Client does (nil: a client of our
	// own that refuses redirects to another origin).
	Client *http.Client
	// Header is added to every request; the headers the transport owns
	// (see HTTP.Header) are ignored here.
	Header http.Header
	// MaxEventBytes caps one SSE event, as HTTP.MaxEventBytes does; 0
	// means 64 MiB. A larger event ends the stream (and so the
	// connection) with *MessageTooLongError.
	MaxEventBytes int
	// ConnectTimeout bounds the GET until the endpoint event, and each
	// POST until its answer; 0 means 30 s.
	ConnectTimeout time.Duration
	// Logger receives what the transport cannot report as a message: a
	// notification or response the server refused. Nil discards.
	Logger *slog.Logger
}

// Connect opens the GET stream and waits for its endpoint event, within
// ConnectTimeout and ctx. A server that answers the GET with anything but
// a 200 event stream fails with *HTTPStatusError.
func (s *SSE) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := ParseEndpoint(s.URL)
	if err != nil {
		return nil, err
	}
	if err := checkHeader(s.Header); err != nil {
		return nil, err
	}
	c := &sseConn{
		url:            u,
		redacted:       u.Redacted(),
		origin:         u.Scheme + "://" + strings.ToLower(u.Host),
		client:         s.Client,
		extra:          s.Header.Clone(),
		maxEvent:       orDefault(s.MaxEventBytes, defaultMaxEventBytes),
		connectTimeout: orDefault(s.ConnectTimeout, defaultConnectTimeout),
		log:            s.Logger,
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
	c.base, c.stop = context.WithCancelCause(context.Background())
	// A writer waiting for room re-checks once the stream is cancelled.
	context.AfterFunc(c.base, func() {
		c.mu.Lock()
		c.in.poke()
		c.mu.Unlock()
	})
	if err := c.open(ctx); err != nil {
		c.stop(err)
		c.release()
		return nil, err
	}
	return c, nil
}

// sseConn is one HTTP+SSE connection. One goroutine (run) reads the GET
// stream into the bounded inbox Read drains; Write POSTs each message
// itself and waits for its status. Close cancels the stream and waits for
// the reader.
type sseConn struct {
	url            *url.URL
	redacted       string
	origin         string
	endpoint       string // where messages are POSTed, resolved against url
	client         *http.Client
	ownClient      bool
	extra          http.Header
	maxEvent       int
	connectTimeout time.Duration
	log            *slog.Logger

	base      context.Context // cancelled by Close
	stop      context.CancelCauseFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu     sync.Mutex
	closed bool
	in     inbox
	fatal  error // why the stream ended; Read returns it once drained
}

// open sends the GET, reads up to the endpoint event and starts run.
func (c *sseConn) open(ctx context.Context) error {
	errTimeout := fmt.Errorf("transport: no endpoint event from %s within %v", c.redacted, c.connectTimeout)
	timer := time.AfterFunc(c.connectTimeout, func() { c.stop(errTimeout) })
	stopCtx := context.AfterFunc(ctx, func() { c.stop(context.Cause(ctx)) })
	// connecting ends the connect-time bounds; false if one already fired.
	connecting := func() bool {
		t, c := timer.Stop(), stopCtx()
		return t && c
	}
	fail := func(err error) error {
		if cause := context.Cause(c.base); cause != nil {
			return cause
		}
		return err
	}

	req, err := http.NewRequestWithContext(c.base, http.MethodGet, c.url.String(), nil)
	if err != nil {
		connecting()
		return err
	}
	req.Header = c.extra.Clone()
	req.Header.Set("Accept", acceptSSE)
	resp, err := c.client.Do(req)
	if err != nil {
		connecting()
		return fail(err)
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp) != "text/event-stream" {
		connecting()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyExcerpt))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			resp.StatusCode = http.StatusUnsupportedMediaType // not an event stream: say so
		}
		return &HTTPStatusError{URL: c.redacted, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
			Body: strings.ToValidUTF8(string(body), "\uFFFD")}
	}
	p := newSSEParser(c.maxEvent)
	p.reset(resp.Body)
	for c.endpoint == "" {
		event, data, err := p.nextEvent()
		if err != nil {
			connecting()
			resp.Body.Close()
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("transport: the SSE stream of %s ended before its endpoint event: %w", c.redacted, err)
			}
			return fail(c.renamed(err))
		}
		switch event {
		case "endpoint":
			ep, err := c.resolve(data)
			if err != nil {
				connecting()
				resp.Body.Close()
				return err
			}
			c.endpoint = ep
		case "", "message":
			// A message before the endpoint: kept for Read, bounded as
			// every other (nobody reads yet: past the bound, the timeout).
			if !c.deliver(data) {
				connecting()
				resp.Body.Close()
				return fail(ErrClosed)
			}
		}
	}
	if !connecting() {
		resp.Body.Close()
		return fail(errTimeout)
	}
	c.wg.Add(1)
	go c.run(p, resp.Body)
	return nil
}

// resolve reads an endpoint event's data: a URL, usually relative, that
// must be on the SSE URL's origin.
func (c *sseConn) resolve(data []byte) (string, error) {
	if len(data) > maxEndpointBytes {
		return "", fmt.Errorf("transport: the endpoint event of %s is %s, over %s", c.redacted, sizeText(len(data)), sizeText(maxEndpointBytes))
	}
	ref, err := url.Parse(string(bytes.TrimSpace(data)))
	if err != nil {
		return "", fmt.Errorf("transport: the endpoint event of %s is not a URL: %w", c.redacted, err)
	}
	ep := c.url.ResolveReference(ref)
	ep.Fragment, ep.RawFragment = "", ""
	if origin := strings.ToLower(ep.Scheme) + "://" + strings.ToLower(ep.Host); origin != c.origin {
		return "", fmt.Errorf("transport: the endpoint event of %s names another origin (%s); refused", c.redacted, origin)
	}
	return ep.String(), nil
}

// renamed names SSE's own setting in a *MessageTooLongError.
func (c *sseConn) renamed(err error) error {
	var tooLong *MessageTooLongError
	if errors.As(err, &tooLong) {
		e := *tooLong
		e.Setting = "transport.SSE.MaxEventBytes"
		return &e
	}
	return err
}

// run reads the stream's message events until it ends.
func (c *sseConn) run(p *sseParser, body io.ReadCloser) {
	defer c.wg.Done()
	defer body.Close()
	var err error
	for {
		var data []byte
		if data, err = p.next(); err != nil {
			break
		}
		if !c.deliver(data) {
			return
		}
	}
	if cause := context.Cause(c.base); cause != nil {
		return // closed
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("transport: the server ended the SSE stream of %s: %w", c.redacted, err)
	} else {
		err = fmt.Errorf("transport: the SSE stream of %s failed: %w", c.redacted, c.renamed(err))
	}
	c.mu.Lock()
	c.fatal = err
	c.in.poke()
	c.mu.Unlock()
}

// deliver queues the messages of one payload, waiting for room under
// MaxQueuedBytes; false once the connection is closed.
func (c *sseConn) deliver(data []byte) bool {
	msgs := splitMessages(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.in.waitRoom(int64(len(data)), func() bool { return c.closed || c.base.Err() != nil })
	if c.closed || c.base.Err() != nil {
		return false
	}
	for _, m := range msgs {
		c.in.push(Message{Data: m})
	}
	return true
}

// Origin is the SSE URL's origin (the endpoint's too).
func (c *sseConn) Origin() string { return c.origin }

func (c *sseConn) Read(ctx context.Context) (Message, error) {
	return c.in.next(ctx, func() bool { return c.closed }, func() error { return c.fatal })
}

// Write POSTs data to the endpoint and waits for the server's answer (202
// Accepted, or any 2xx). A request the server refuses (another status, or
// no answer) gets its failure as a Message, as on Streamable HTTP; a
// refused notification or response is logged.
func (c *sseConn) Write(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m, err := parseOutgoing(data)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()

	err = c.post(ctx, data)
	switch {
	case c.isClosed():
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		return nil
	case m.kind == kindRequest:
		var status *HTTPStatusError
		if errors.As(err, &status) {
			if errObj, ok := rpcErrorObject([]byte(status.Body)); ok {
				c.queue(Message{Data: passError(m.id, errObj), Related: m.id})
				return nil
			}
		}
		c.queue(Message{Related: m.id, Err: err})
	default:
		c.log.Warn("transport: sending a message failed", "url", c.redacted, "method", m.method, "err", err)
	}
	return nil
}

// post sends one message; nil when the server took it (2xx).
func (c *sseConn) post(ctx context.Context, data []byte) error {
	pctx, cancel := context.WithCancelCause(c.base)
	defer cancel(nil)
	defer context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })()
	errTimeout := fmt.Errorf("transport: POST %s: no answer within %v", c.redacted, c.connectTimeout)
	timer := time.AfterFunc(c.connectTimeout, func() { cancel(errTimeout) })
	defer timer.Stop()

	req, err := http.NewRequestWithContext(pctx, http.MethodPost, c.endpoint, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header = c.extra.Clone()
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if cause := context.Cause(pctx); errors.Is(cause, errTimeout) {
			return cause
		}
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyExcerpt))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	return &HTTPStatusError{URL: c.redacted, Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"),
		Body: strings.ToValidUTF8(string(body), "\uFFFD")}
}

// queue adds the failure of a request for Read.
func (c *sseConn) queue(m Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.in.push(m)
	}
}

func (c *sseConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// Close ends the GET stream, waits for the reader and for every Write in
// progress, and makes Read and Write return ErrClosed.
func (c *sseConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.in.clear()
		c.in.poke()
		c.mu.Unlock()
		c.stop(ErrClosed)
		c.wg.Wait()
		c.release()
	})
	return nil
}

// release lets go of the idle connections of a client of our own.
func (c *sseConn) release() {
	if c.ownClient {
		c.client.CloseIdleConnections()
	}
}
