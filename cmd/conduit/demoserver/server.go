// Package demoserver is the MCP server that `conduit demo` runs in process:
// a small server written to ask a client for every kind of input, speaking
// both protocol eras over any transport.Conn.
//
//   - legacy (2025-11-25, 2025-06-18): initialize, then the server asks for
//     input with its own JSON-RPC requests while a tools/call is open;
//     logging/setLevel; ping.
//   - modern (2026-07-28): server/discover, _meta on every request, input
//     asked for in input_required results (multi round-trip requests) with
//     an HMAC-sealed requestState, logs only for requests whose _meta asks
//     for them, and the tasks extension (tasks/get, tasks/update,
//     tasks/cancel).
//
// A request whose _meta names a protocol version is modern; any other is
// legacy and needs initialize first. The server checks the capabilities the
// client declared (in initialize, or in each request's _meta) before asking
// for input, answering -32021 (modern) or a tool error (legacy) when one is
// missing — except plan_with_tools, which asks for tool-enabled sampling
// regardless, to show the client's guard refusing it.
//
// Who should import it: the conduit CLI (its demo command), and tests or
// walkthroughs of an MCP client that want a peer asking for input in both
// eras without a subprocess or a network. It is not a general MCP server:
// its tools exist only to ask for input.
package demoserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

const (
	serverName    = "conduit-demo"
	serverVersion = "0.1.0"
	// pollIntervalMs is the pollIntervalMs of the server's tasks: short,
	// so the demo runs in well under a second.
	pollIntervalMs = 100
)

// levels are the RFC 5424 log levels of MCP, least severe first.
var levels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// Server is the demo server. It is a transport.Transport: each Connect
// serves a new in-memory connection in a goroutine of its own, until the
// client closes its end or Close is called. Serve serves any other Conn.
// Its methods may be called concurrently.
type Server struct {
	key []byte // seals requestState

	// See Counts.
	notifications atomic.Int64
	inputs        atomic.Int64

	ctx  context.Context // ends at Close: the life of Connect's connections
	stop context.CancelFunc
	wg   sync.WaitGroup // Connect's Serve goroutines

	mu     sync.Mutex
	closed bool  // Close was called: no more wg.Go
	err    error // the first error of a Connect's Serve
}

var _ transport.Transport = (*Server)(nil)

// New returns a server ready to Connect or Serve.
func New() *Server {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	ctx, stop := context.WithCancel(context.Background())
	return &Server{key: key, ctx: ctx, stop: stop}
}

// Counts are what a server has sent so far, over all its connections.
type Counts struct {
	// Notifications a client's handler receives: log entries, progress and
	// elicitation/complete (not notifications/cancelled).
	Notifications int64
	// InputRequests asked for: legacy requests sent, modern input requests
	// first put in a result or a task.
	InputRequests int64
}

// Counts returns what the server has sent so far. A client that counts
// what its handler received and audited can wait until it has caught up
// with these, so that a step's output is complete.
func (s *Server) Counts() Counts {
	return Counts{Notifications: s.notifications.Load(), InputRequests: s.inputs.Load()}
}

// Connect starts serving one end of a new in-memory pair and returns the
// other end, the client's. ctx is not used: the connection lives until the
// client closes it or Close is called.
func (s *Server) Connect(context.Context) (transport.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, transport.ErrClosed
	}
	client, server := transport.NewMemoryPair()
	s.wg.Go(func() {
		if err := s.Serve(s.ctx, server); err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.mu.Unlock()
		}
	})
	return client, nil
}

// Close stops every connection Connect opened (their tool calls still
// running are cancelled), waits until they have ended and returns the
// first error one of them met. Later Connects fail with
// transport.ErrClosed. Close may be called more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Serve reads and answers the messages of conn until the client closes its
// end (nil) or ctx ends (nil); then it cancels the tool calls still
// running, waits for them and closes conn. It returns a read error.
func (s *Server) Serve(ctx context.Context, conn transport.Conn) error {
	c := &serverConn{
		srv: s, conn: conn,
		inflight: map[messages.ID]context.CancelFunc{},
		pending:  map[messages.ID]chan *messages.Frame{},
		tasks:    map[string]*taskState{},
	}
	return c.serve(ctx)
}

// serverConn is one connection's state: its legacy session, its requests
// and its tasks.
type serverConn struct {
	srv  *Server
	conn transport.Conn
	wg   sync.WaitGroup // tools/call goroutines

	mu       sync.Mutex
	session  *legacySession                     // nil until initialize
	inflight map[messages.ID]context.CancelFunc // client requests running, for notifications/cancelled
	pending  map[messages.ID]chan *messages.Frame
	nextID   int64
	tasks    map[string]*taskState
	nextTask int
}

// legacySession is what initialize and logging/setLevel established.
type legacySession struct {
	version  string
	caps     clientCaps
	logLevel string
}

func (s *serverConn) serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
		_ = s.conn.Close()
	}()
	for {
		msg, err := s.conn.Read(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, transport.ErrClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		f, derr := messages.Decode(msg.Data)
		if derr != nil {
			s.send(messages.NewErrorResponse(derr.ID, derr.Err))
			continue
		}
		switch {
		case f.IsResponse():
			s.route(f)
		case f.IsNotification():
			s.notification(f)
		default:
			s.request(ctx, f)
		}
	}
}

// send writes one frame; a write to a closed client is dropped.
func (s *serverConn) send(f *messages.Frame) {
	data, err := f.Encode()
	if err != nil {
		return
	}
	_ = s.conn.Write(context.Background(), data)
}

// notify sends a notification, counting those the client's handler sees.
func (s *serverConn) notify(method string, params any) {
	f, err := messages.NewNotification(method, params)
	if err != nil {
		return
	}
	if method != messages.MethodCancelled {
		s.srv.notifications.Add(1)
	}
	s.send(f)
}

func (s *serverConn) fail(id messages.ID, code int, data any, format string, args ...any) {
	e := &messages.RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
	if data != nil {
		e.Data, _ = json.Marshal(data)
	}
	s.send(messages.NewErrorResponse(id, e))
}

// reply sends a result; a modern one gets its resultType (complete unless
// set) and the server's info in _meta.
func (s *serverConn) reply(id messages.ID, modern bool, result map[string]any) {
	if result == nil {
		result = map[string]any{}
	}
	if modern {
		if _, ok := result["resultType"]; !ok {
			result["resultType"] = era.ResultComplete
		}
		result["_meta"] = map[string]any{era.MetaServerInfo: serverInfo()}
	}
	f, err := messages.NewResult(id, result)
	if err != nil {
		s.fail(id, messages.CodeInternalError, nil, "Internal error: %v", err)
		return
	}
	s.send(f)
}

func serverInfo() messages.Implementation {
	return messages.Implementation{Name: serverName, Title: "Conduit demo server", Version: serverVersion}
}

// route hands a response to the legacy request waiting for it.
func (s *serverConn) route(f *messages.Frame) {
	s.mu.Lock()
	ch, ok := s.pending[f.ID]
	delete(s.pending, f.ID)
	s.mu.Unlock()
	if ok {
		ch <- f // buffered
	}
}

func (s *serverConn) notification(f *messages.Frame) {
	if f.Method != messages.MethodCancelled {
		return // notifications/initialized and the rest need nothing
	}
	var p messages.CancelledParams
	if json.Unmarshal(f.Params, &p) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[p.RequestID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// clientCaps are the client's declared capabilities, in either era's shape.
type clientCaps struct {
	Sampling *struct {
		Tools json.RawMessage `json:"tools"`
	} `json:"sampling"`
	Elicitation *struct {
		Form json.RawMessage `json:"form"`
		URL  json.RawMessage `json:"url"`
	} `json:"elicitation"`
	Roots      json.RawMessage            `json:"roots"`
	Extensions map[string]json.RawMessage `json:"extensions"`
}

func (c clientCaps) sampling() bool { return c.Sampling != nil }
func (c clientCaps) samplingTools() bool {
	return c.Sampling != nil && jsonPresent(c.Sampling.Tools)
}
func (c clientCaps) roots() bool { return jsonPresent(c.Roots) }
func (c clientCaps) tasks() bool { return jsonPresent(c.Extensions[era.TasksExtension]) }

// elicit reports whether mode was declared: {} means form only.
func (c clientCaps) elicit(mode string) bool {
	e := c.Elicitation
	switch {
	case e == nil:
		return false
	case !jsonPresent(e.Form) && !jsonPresent(e.URL):
		return mode == messages.ModeForm
	case mode == messages.ModeURL:
		return jsonPresent(e.URL)
	}
	return jsonPresent(e.Form)
}

func jsonPresent(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// requestMeta is what the server reads from a request's params._meta.
type requestMeta struct {
	version       string
	hasCaps       bool
	caps          clientCaps
	logLevel      string
	progressToken json.RawMessage
}

func readMeta(params json.RawMessage) requestMeta {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var m requestMeta
	if json.Unmarshal(params, &p) != nil || p.Meta == nil {
		return m
	}
	_ = json.Unmarshal(p.Meta[era.MetaProtocolVersion], &m.version)
	if raw, ok := p.Meta[era.MetaClientCapabilities]; ok {
		m.hasCaps = json.Unmarshal(raw, &m.caps) == nil
	}
	_ = json.Unmarshal(p.Meta[era.MetaLogLevel], &m.logLevel)
	if tok := p.Meta[era.MetaProgressToken]; jsonPresent(tok) {
		m.progressToken = tok
	}
	return m
}

// request answers one client request: the quick ones here, tools/call in
// a goroutine of its own (it may wait for the client's answers).
func (s *serverConn) request(ctx context.Context, f *messages.Frame) {
	meta := readMeta(f.Params)
	modern := meta.version != ""
	if modern {
		if meta.version != messages.Version20260728 {
			s.fail(f.ID, messages.CodeUnsupportedProtocolVersion,
				map[string]any{"supported": []string{messages.Version20260728}, "requested": meta.version},
				"Unsupported protocol version")
			return
		}
		if !meta.hasCaps {
			s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: _meta lacks %s", era.MetaClientCapabilities)
			return
		}
		if meta.logLevel != "" && !slices.Contains(levels, meta.logLevel) {
			s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: unknown log level %q", meta.logLevel)
			return
		}
	}
	switch f.Method {
	case messages.MethodDiscover:
		if !modern {
			s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: _meta lacks %s", era.MetaProtocolVersion)
			return
		}
		s.reply(f.ID, true, map[string]any{
			"supportedVersions": []string{messages.Version20260728, messages.Version20251125, messages.Version20250618},
			"capabilities":      map[string]any{"tools": map[string]any{}, "logging": map[string]any{}, "extensions": map[string]any{era.TasksExtension: map[string]any{}}},
			"instructions":      instructions,
			"ttlMs":             0,
			"cacheScope":        "private",
		})
		return
	case messages.MethodInitialize:
		s.initialize(f)
		return
	}
	var call *toolCall
	if modern {
		call = &toolCall{s: s, modern: true, version: meta.version, caps: meta.caps, logLevel: meta.logLevel, progressToken: meta.progressToken}
	} else {
		s.mu.Lock()
		sess := s.session
		s.mu.Unlock()
		if sess == nil {
			s.fail(f.ID, messages.CodeInvalidRequest, nil, "Invalid Request: send initialize first (or a modern request with _meta)")
			return
		}
		call = &toolCall{s: s, version: sess.version, caps: sess.caps, logLevel: sess.logLevel, progressToken: meta.progressToken}
	}
	switch f.Method {
	case messages.MethodPing:
		if modern {
			s.fail(f.ID, messages.CodeMethodNotFound, nil, "Method not found: ping (removed in %s)", meta.version)
			return
		}
		s.reply(f.ID, false, nil)
	case messages.MethodSetLevel:
		if modern {
			s.fail(f.ID, messages.CodeMethodNotFound, nil, "Method not found: logging/setLevel (use _meta %s)", era.MetaLogLevel)
			return
		}
		var p messages.SetLevelParams
		if json.Unmarshal(f.Params, &p) != nil || !slices.Contains(levels, p.Level) {
			s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: unknown log level")
			return
		}
		s.mu.Lock()
		s.session.logLevel = p.Level
		s.mu.Unlock()
		s.reply(f.ID, false, nil)
	case messages.MethodListTools:
		tools := make([]messages.Tool, 0, len(toolDefs))
		for _, t := range toolDefs {
			tools = append(tools, messages.Tool{Name: t.name, Title: t.title, Description: t.description, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
		}
		s.reply(f.ID, modern, map[string]any{"tools": tools})
	case messages.MethodCallTool:
		cctx, cancel := context.WithCancel(ctx)
		call.ctx = cctx
		s.mu.Lock()
		s.inflight[f.ID] = cancel
		s.mu.Unlock()
		s.wg.Go(func() {
			defer func() {
				s.mu.Lock()
				delete(s.inflight, f.ID)
				s.mu.Unlock()
				cancel()
			}()
			s.callTool(call, f)
		})
	case "tasks/get", "tasks/update", "tasks/cancel":
		if !modern || !call.caps.tasks() {
			s.fail(f.ID, messages.CodeMissingClientCapability,
				map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{era.TasksExtension: map[string]any{}}}},
				"%s needs the tasks extension", f.Method)
			return
		}
		s.task(f)
	default:
		s.fail(f.ID, messages.CodeMethodNotFound, nil, "Method not found: %s", f.Method)
	}
}

const instructions = "The Conduit demo server: each tool asks the client for one kind of input."

func (s *serverConn) initialize(f *messages.Frame) {
	var p messages.InitializeParams
	if err := json.Unmarshal(f.Params, &p); err != nil {
		s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: %v", err)
		return
	}
	version := messages.Version20251125
	if p.ProtocolVersion == messages.Version20250618 {
		version = p.ProtocolVersion
	}
	var caps clientCaps
	raw, _ := json.Marshal(p.Capabilities)
	_ = json.Unmarshal(raw, &caps)
	s.mu.Lock()
	s.session = &legacySession{version: version, caps: caps, logLevel: "info"}
	s.mu.Unlock()
	s.reply(f.ID, false, map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
		"serverInfo":      serverInfo(),
		"instructions":    instructions,
	})
}

// errInputRequired stops a modern tool run at its first unanswered input
// request: the server answers input_required and runs the tool again, from
// the start, on the retry.
var errInputRequired = errors.New("input required")

// toolCall is one tools/call as a tool sees it, in either era.
type toolCall struct {
	s             *serverConn
	ctx           context.Context
	modern        bool
	version       string
	caps          clientCaps
	logLevel      string // modern: "" sends no logs
	progressToken json.RawMessage

	// modern: the answers so far (from requestState and inputResponses),
	// and the input request that stopped this run.
	answers  map[string]json.RawMessage
	needKey  string
	needWhat map[string]any
}

// toolOutput is what a tool returns: text, and for a legacy tool that
// lacks a capability, the capabilities it needs.
type toolOutput struct {
	text     string
	isError  bool
	required map[string]any
}

// ask gets the client's answer to one input request (method and params
// as in the spec): legacy sends it as a request and waits; modern returns
// the answer given in an earlier round, or stops the run (errInputRequired)
// so the server asks for it under key. A legacy refusal is the client's
// *messages.RPCError.
func (c *toolCall) ask(key, method string, params any) (json.RawMessage, error) {
	if c.modern {
		if a, ok := c.answers[key]; ok {
			return a, nil
		}
		req := map[string]any{"method": method}
		if params != nil {
			req["params"] = params
		}
		c.needKey, c.needWhat = key, req
		return nil, errInputRequired
	}
	s := c.s
	s.mu.Lock()
	s.nextID++
	id := messages.StringID("demo-" + strconv.FormatInt(s.nextID, 10))
	ch := make(chan *messages.Frame, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	f, err := messages.NewRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	s.srv.inputs.Add(1)
	s.send(f)
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-c.ctx.Done():
		s.notify(messages.MethodCancelled, messages.CancelledParams{RequestID: id, Reason: "the tool call was cancelled"})
		return nil, c.ctx.Err()
	}
}

// missing is the answer of a tool that needs a capability the client did
// not declare: -32021 in the modern era, a tool error in the legacy one.
func (c *toolCall) missing(what string, required map[string]any) (*toolOutput, error) {
	msg := fmt.Sprintf("This tool needs %s, which the client did not declare.", what)
	if c.modern {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": required})
		return nil, &messages.RPCError{Code: messages.CodeMissingClientCapability, Message: msg, Data: data}
	}
	return &toolOutput{text: msg, isError: true, required: required}, nil
}

// refusedOutput turns a failed ask into the tool's answer: a legacy refusal
// becomes a tool error naming the client's code; anything else (the modern
// stop, a cancellation) goes up.
func refusedOutput(what string, err error) (*toolOutput, error) {
	var rpc *messages.RPCError
	if errors.As(err, &rpc) && rpc.Code != messages.CodeMissingClientCapability {
		return &toolOutput{text: fmt.Sprintf("The client refused %s: %d %s", what, rpc.Code, rpc.Message), isError: true}, nil
	}
	return nil, err
}

// log sends a log entry when the client asked for that level.
func (c *toolCall) log(level, logger string, data any) {
	threshold := c.logLevel
	if threshold == "" {
		return // modern: no logLevel in _meta, no logs
	}
	if slices.Index(levels, level) < slices.Index(levels, threshold) {
		return
	}
	p := map[string]any{"level": level, "data": data}
	if logger != "" {
		p["logger"] = logger
	}
	c.s.notify(messages.MethodLog, p)
}

// progress reports progress when the client gave a progressToken.
func (c *toolCall) progress(done, total int, message string) {
	if c.progressToken == nil {
		return
	}
	c.s.notify(messages.MethodProgress, map[string]any{"progressToken": c.progressToken, "progress": done, "total": total, "message": message})
}

// callTool runs a tool (again, in a modern retry) and sends its outcome.
func (s *serverConn) callTool(c *toolCall, f *messages.Frame) {
	var p struct {
		Name           string                     `json:"name"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   *string                    `json:"requestState"`
	}
	if err := json.Unmarshal(f.Params, &p); err != nil {
		s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: %v", err)
		return
	}
	i := slices.IndexFunc(toolDefs, func(t toolDef) bool { return t.name == p.Name })
	if i < 0 {
		s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: unknown tool %q", p.Name)
		return
	}
	tool := toolDefs[i]
	if c.modern {
		c.answers = map[string]json.RawMessage{}
		if p.RequestState != nil {
			answers, err := s.open(tool.name, *p.RequestState)
			if err != nil {
				s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: requestState %v", err)
				return
			}
			c.answers = answers
		}
		for k, v := range p.InputResponses {
			c.answers[k] = v
		}
		if tool.name == "background_job" && c.caps.tasks() && c.caps.elicit(messages.ModeForm) {
			s.startTask(f.ID)
			return
		}
	}
	out, err := tool.run(c)
	var rpc *messages.RPCError
	switch {
	case errors.Is(err, errInputRequired):
		state, serr := s.seal(tool.name, c.answers)
		if serr != nil {
			s.fail(f.ID, messages.CodeInternalError, nil, "Internal error: %v", serr)
			return
		}
		s.srv.inputs.Add(1)
		s.reply(f.ID, true, map[string]any{
			"resultType":    era.ResultInputRequired,
			"inputRequests": map[string]any{c.needKey: c.needWhat},
			"requestState":  state,
		})
	case errors.As(err, &rpc):
		s.send(messages.NewErrorResponse(f.ID, rpc))
	case err != nil:
		// Cancelled by the client (or the server is stopping): a
		// cancelled request gets no response.
	default:
		s.reply(f.ID, c.modern, toolResult(out))
	}
}

func toolResult(out *toolOutput) map[string]any {
	r := map[string]any{"content": []messages.ContentBlock{{Type: "text", Text: out.text}}}
	if out.isError {
		r["isError"] = true
	}
	if out.required != nil {
		r["structuredContent"] = map[string]any{"requiredCapabilities": out.required}
	}
	return r
}
