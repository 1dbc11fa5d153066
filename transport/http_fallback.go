package transport

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/conduitmcp/conduit/messages"
)

// LegacyOnly is implemented by connections that carry only the legacy era
// (the HTTP+SSE transport, which predates the modern one): the client does
// not send them the server/discover probe and goes straight to initialize.
type LegacyOnly interface {
	LegacyOnly() bool
}

// LegacyOnly reports true: HTTP+SSE is a 2024-11-05 transport.
func (c *sseConn) LegacyOnly() bool { return true }

// fallbackConn is a Streamable HTTP connection that moves to the HTTP+SSE
// transport at the same URL when the server refuses the client's first
// initialize with a 4xx other than 401 and 403 (which ask for
// credentials), as the specification's backwards compatibility section
// describes: the initialize is sent again over the SSE stream, and
// everything after it goes there. If the SSE stream cannot be opened
// either (no event stream, no endpoint event), the initialize fails with
// the Streamable HTTP answer, and the connection stays Streamable HTTP.
type fallbackConn struct {
	sse SSE // how to open the SSE stream

	mu      sync.Mutex
	cur     Conn   // the httpConn, then the sseConn
	initID  string // the first initialize's id, until its answer is read
	init    []byte // that initialize
	decided bool   // the first initialize was answered: no more fallback
	closed  bool
}

// fallsBack reports whether a failed request moves the connection to
// HTTP+SSE: an HTTP 4xx without a JSON-RPC error, other than 401 and 403.
func fallsBack(err error) bool {
	var status *HTTPStatusError
	return errors.As(err, &status) && status.Status >= 400 && status.Status <= 499 &&
		status.Status != http.StatusUnauthorized && status.Status != http.StatusForbidden
}

func (f *fallbackConn) current() Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

func (f *fallbackConn) Write(ctx context.Context, data []byte) error {
	f.mu.Lock()
	if !f.decided && f.initID == "" && bytes.Contains(data, []byte(`"initialize"`)) {
		if m, err := parseOutgoing(data); err == nil && m.kind == kindRequest && m.method == messages.MethodInitialize {
			f.initID, f.init = m.id, bytes.Clone(data)
		}
	}
	cur := f.cur
	f.mu.Unlock()
	err := cur.Write(ctx, data)
	if errors.Is(err, ErrClosed) {
		// The Streamable HTTP answer to the initialize can be read, and
		// the fallback close that connection, before this Write of it
		// returns: the initialize went again over SSE, so it was sent.
		f.mu.Lock()
		resent := f.cur != cur && !f.closed && f.init != nil && bytes.Equal(data, f.init)
		f.mu.Unlock()
		if resent {
			return nil
		}
	}
	return err
}

func (f *fallbackConn) Read(ctx context.Context) (Message, error) {
	for {
		cur := f.current()
		m, err := cur.Read(ctx)
		if err != nil {
			return m, err
		}
		f.mu.Lock()
		watching := !f.decided && f.initID != "" && m.Related == f.initID
		if !watching && !f.decided && f.initID != "" && m.Err == nil {
			if key, ok := messages.ResponseTo(m.Data); ok {
				if k, _, _ := messages.NamedID([]byte(f.initID)); k == key {
					f.decided = true // Streamable HTTP answered initialize
				}
			}
		}
		if watching {
			f.decided = true
		}
		f.mu.Unlock()
		if !watching || !fallsBack(m.Err) {
			return m, nil
		}
		if f.fallBack(ctx, cur, m.Err) {
			continue // the initialize was sent again over SSE
		}
		return m, nil
	}
}

// fallBack opens the SSE stream and sends the initialize there; false
// when the stream could not be opened (the failure stands).
func (f *fallbackConn) fallBack(ctx context.Context, old Conn, why error) bool {
	log := f.sse.Logger
	conn, err := f.sse.Connect(ctx)
	if err != nil {
		if log != nil {
			log.Debug("transport: no HTTP+SSE fallback either", "url", redact(f.sse.URL), "initialize", why, "err", err)
		}
		return false
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		conn.Close()
		return false
	}
	f.cur = conn
	f.mu.Unlock()
	if log != nil {
		log.Info("transport: the server refused Streamable HTTP; using the HTTP+SSE transport", "url", redact(f.sse.URL), "err", why)
	}
	old.Close()
	if err := conn.Write(ctx, f.init); err != nil {
		return false
	}
	return true
}

func redact(raw string) string {
	if u, err := ParseEndpoint(raw); err == nil {
		return u.Redacted()
	}
	return ""
}

func (f *fallbackConn) Close() error {
	f.mu.Lock()
	f.closed = true
	cur := f.cur
	f.mu.Unlock()
	return cur.Close()
}

// Origin is the URL's, whichever transport carries it.
func (f *fallbackConn) Origin() string {
	if o, ok := f.current().(Origin); ok {
		return o.Origin()
	}
	return ""
}

// LegacyOnly reports whether the connection moved to HTTP+SSE.
func (f *fallbackConn) LegacyOnly() bool {
	_, ok := f.current().(*sseConn)
	return ok
}

func (f *fallbackConn) SetSession(version string, era messages.Era) {
	if s, ok := f.current().(Session); ok {
		s.SetSession(version, era)
	}
}

func (f *fallbackConn) SetToolHeaders(headers map[string]map[string]string) {
	if t, ok := f.current().(ToolHeaders); ok {
		t.SetToolHeaders(headers)
	}
}
