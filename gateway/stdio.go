package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one client over stdin and stdout until it disconnects
// or ctx ends: both eras, chosen by what the client sends (ServeIO).
func (g *Gateway) ServeStdio(ctx context.Context) error {
	return g.ServeIO(ctx, os.Stdin, os.Stdout)
}

// ServeIO serves one client over in and out, newline-delimited JSON-RPC
// as on stdio, until in ends or ctx ends. Both eras are served on the one
// connection, as a dual-era server over stdio must: a client that opens
// with initialize gets a legacy session (input as server→client
// requests), one whose requests carry the 2026-07-28 _meta is served
// statelessly (server/discover, input as input_required rounds under the
// gateway's requestState, subscriptions/listen). The era the first request
// names is the connection's: a request of the other era is refused with
// -32600.
//
// A line that is not JSON is answered with -32700 (Parse error), one that
// is JSON but no JSON-RPC message (or a batch) with -32600 (Invalid
// Request), a line longer than 16 MiB with -32600, and a request whose
// _meta names a protocol version the gateway does not serve with -32022
// (data.supported, data.requested); each is logged with the running count
// and the connection goes on. When in is an io.Closer it is closed when
// serving ends.
func (g *Gateway) ServeIO(ctx context.Context, in io.Reader, out io.Writer) error {
	// The client going away ends its session ("stdio"): its calls are
	// cancelled upstream.
	t := &lineTransport{in: in, out: out, limit: mcp.DefaultMaxLineLength, logger: g.logger, refused: &g.refusedLines,
		left: func() { g.sessions.end("stdio", errSessionDisconnected) }}
	err := g.srv.Run(ctx, t)
	if err != nil && t.gone.Load() {
		return nil // the client went away: its input ended, or its end of our output closed
	}
	return err
}

// lineTransport is the go-sdk stdio transport's framing with the errors
// the spec asks for: the go-sdk's (mcp.StdioTransport) ends the session
// without a word at the first line it cannot decode (docs/decisions.md
// #67).
type lineTransport struct {
	in      io.Reader
	out     io.Writer
	limit   int
	logger  *slog.Logger
	refused *atomic.Int64
	gone    atomic.Bool // the input ended, or a write found the client's end closed
	left    func()      // told once, when gone is set
}

// leave records that the client went away.
func (t *lineTransport) leave() {
	if !t.gone.Swap(true) && t.left != nil {
		t.left()
	}
}

func (t *lineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{t: t, lines: make(chan lineOrErr), closed: make(chan struct{})}
	go c.readLoop()
	return c, nil
}

type lineOrErr struct {
	line []byte
	long bool // the line was over the limit; line is empty
	err  error
}

type lineConn struct {
	t       *lineTransport
	lines   chan lineOrErr
	writeMu sync.Mutex
	once    sync.Once
	closed  chan struct{}
	era     string // "legacy" after initialize, "modern" after a modern request; Read's alone
}

// readLoop hands each line of the input to Read, one at a time.
func (c *lineConn) readLoop() {
	r := bufio.NewReaderSize(c.t.in, 64<<10)
	for {
		line, long, err := readBounded(r, c.t.limit)
		if len(line) == 0 && !long && err == nil {
			continue // a blank line
		}
		select {
		case c.lines <- lineOrErr{line: line, long: long, err: err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readBounded reads one line without its end, discarding what is over
// limit (long). err is io.EOF once the input ends, with the last
// unterminated line, if any, in line.
func readBounded(r *bufio.Reader, limit int) (line []byte, long bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !long {
			if len(line)+len(chunk) > limit+2 { // room for "\r\n"
				long, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if !long {
			line = bytes.TrimRight(line, "\r\n")
			long = len(line) > limit
		}
		if long {
			line = nil
		}
		if err == io.EOF && (len(line) > 0 || long) {
			return line, long, nil // the next read sees EOF
		}
		return line, long, err
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var v lineOrErr
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case v = <-c.lines:
		}
		if v.err != nil {
			if errors.Is(v.err, io.EOF) {
				c.t.leave()
			}
			return nil, v.err
		}
		if v.long {
			c.refuse(ctx, nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: message longer than %d bytes", c.t.limit), nil)
			continue
		}
		msg, err := jsonrpc.DecodeMessage(v.line)
		if err != nil {
			if !json.Valid(v.line) {
				c.refuse(ctx, nil, jsonrpc.CodeParseError, "Parse error: the line is not JSON", nil)
			} else {
				c.refuse(ctx, idOf(v.line), jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message (batches are not served)", nil)
			}
			continue
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() && !c.admit(ctx, req) {
			continue
		}
		return msg, nil
	}
}

// admit checks a request against the connection's era, which the first
// request that names one chooses for the connection's life (the spec's
// dual-era server over stdio: initialize opens a legacy session, modern
// _meta the stateless era), and refuses a version the gateway does not
// serve (-32022). A refused request is answered here.
func (c *lineConn) admit(ctx context.Context, req *jsonrpc.Request) bool {
	v, hasMeta := metaVersion(req.Params)
	if req.Method == "initialize" {
		if c.era == "modern" {
			c.refuse(ctx, req.ID.Raw(), jsonrpc.CodeInvalidRequest, "Invalid Request: this connection speaks 2026-07-28 (its first request carried the _meta of that era); initialize needs a connection of its own", nil)
			return false
		}
		if c.era == "" {
			c.era = "legacy"
		}
		return true
	}
	if !hasMeta {
		return true
	}
	if !served(v) {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: mcp.SupportedProtocolVersions(), Requested: v})
		c.refuse(ctx, req.ID.Raw(), mcp.CodeUnsupportedProtocolVersion, "Unsupported protocol version", data)
		return false
	}
	if v < modernVersion {
		return true // a legacy version in _meta selects nothing (the go-sdk's rule)
	}
	if c.era == "legacy" {
		c.refuse(ctx, req.ID.Raw(), jsonrpc.CodeInvalidRequest, "Invalid Request: this connection speaks the legacy era (it opened with initialize); a 2026-07-28 request needs a connection of its own", nil)
		return false
	}
	c.era = "modern"
	return true
}

// refuse answers a line the gateway does not serve (id nil: null).
func (c *lineConn) refuse(ctx context.Context, id any, code int64, message string, data json.RawMessage) {
	n := c.t.refused.Add(1)
	c.t.logger.Warn("gateway: stdio message refused", "code", code, "error", message, "total", n)
	e := struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}{code, message, data}
	line, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   any    `json:"error"`
	}{"2.0", id, e})
	_ = c.writeLine(ctx, line)
}

// idOf is the id of a JSON object that is not a valid JSON-RPC message,
// when it has a string or number one; else nil.
func idOf(line []byte) any {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	switch m.ID[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return m.ID
	}
	return nil
}

// metaVersion is the protocol version a request's _meta names, if any.
func metaVersion(params json.RawMessage) (string, bool) {
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if len(params) == 0 || json.Unmarshal(params, &p) != nil {
		return "", false
	}
	v, ok := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v, ok
}

// served reports whether the gateway serves protocol version v.
func served(v string) bool {
	for _, s := range mcp.SupportedProtocolVersions() {
		if s == v {
			return true
		}
	}
	return false
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.writeLine(ctx, data)
}

func (c *lineConn) writeLine(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return errors.New("connection closed")
	default:
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.t.out.Write(append(data, '\n'))
	if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) {
		c.t.leave()
	}
	return err
}

func (c *lineConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		if cl, ok := c.t.in.(io.Closer); ok {
			_ = cl.Close()
		}
	})
	return nil
}

func (c *lineConn) SessionID() string { return "" }
