package cluster

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// relayName is the name of each member's relay actor: the address of the
// calls its gateway makes (their input requests come to it from the
// members holding the servers) and of the modern calls it holds (their
// clients' retries come to it from the members that received them). Its
// PID is the member's address and this name: what a call's origin and a
// requestState name is a place, not an identity to activate elsewhere.
const relayName = "conduit-relay"

// originKey is the assign under which a call on the holding member carries
// its origin to the input callbacks.
const originKey = "conduit.cluster.origin"

// callKey is the assign under which a call on the holding member carries
// its *grainCall (its gate, whether it asked, whether it parks).
const callKey = "conduit.cluster.call"

// progressPrefix begins the progress token a holding member gives the
// server for a call made elsewhere; the origin's call id follows.
const progressPrefix = "conduit.cluster/"

// MinSecret is the shortest shared secret a cluster takes.
const MinSecret = 16

// stateKey derives the requestState MAC key every member shares from the
// cluster's secret.
func stateKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("conduit.cluster.v1 requestState"))
	return m.Sum(nil)
}

// relayActor answers the requests other members send this member's
// gateway: Input (a server's input request for a call made here) and
// Resume (a retry of a modern call held here). Each runs in a goroutine
// of its own and answers the sender's future directly.
type relayActor struct{ m *Member }

func (r *relayActor) Receive(ctx actor.Context) {
	msg, ok := ctx.Message().(*pcluster.GrainRequest)
	if !ok {
		return
	}
	switch msg.MessageTypeName {
	case typeCancelResume:
		if s := r.m.servers.Load(); s != nil {
			s.cancelResume(msg.MessageData)
		}
		return
	case typeProgress, typeLog:
		// In arrival order, beside the actor: a slow downstream client
		// holds up no other request.
		if s := r.m.servers.Load(); s != nil {
			s.note(msg)
		}
		return
	}
	sender := ctx.Sender()
	if sender == nil {
		return
	}
	root := ctx.ActorSystem().Root
	go func() {
		var resp *pcluster.GrainResponse
		defer func() {
			if v := recover(); v != nil {
				r.m.logger.Error("cluster: a relay request panicked", "type", msg.MessageTypeName, "panic", v, "stack", string(debug.Stack()))
				resp = encodeError(fmt.Errorf("cluster: the request panicked on member %s: %v", r.m.Address(), v))
			}
			root.Send(sender, resp)
		}()
		s := r.m.servers.Load()
		if s == nil {
			resp = encodeError(fmt.Errorf("cluster: member %s serves no gateway", r.m.Address()))
			return
		}
		switch msg.MessageTypeName {
		case typeInput:
			resp = s.serveInput(msg.MessageData)
		case typeResume:
			resp = s.serveResume(msg.MessageData)
		case typeDraining:
			resp = s.onDraining(msg.MessageData)
		case typeDrained:
			resp = s.onDrained(msg.MessageData)
		default:
			resp = encodeError(fmt.Errorf("cluster: unknown request %q (this member speaks conduit.cluster.v1)", msg.MessageTypeName))
		}
	}()
}

// call is a CallTool this member's gateway made, while it runs: its
// assigns (what the gateway's input callbacks route by) and its ctx, which
// ends with it.
type call struct {
	ctx      context.Context
	assigns  map[string]any
	progress any // the gateway's progress token, or nil
}

// open registers a call for its input requests and returns its origin and
// the function that forgets it.
func (s *Servers) open(ctx context.Context, opts []conduit.CallOption) (*origin, func()) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	cctx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.calls[id] = &call{ctx: cctx, assigns: conduit.AssignsOf(opts...), progress: conduit.ProgressTokenOf(opts...)}
	s.mu.Unlock()
	return &origin{Member: s.m.Address(), Call: id}, func() {
		cancel()
		s.mu.Lock()
		delete(s.calls, id)
		s.mu.Unlock()
	}
}

// HandleInput sets the callbacks that answer the input requests of the
// calls this member's gateway makes, wherever their servers run: the
// gateway's relay (gateway.Options.Upstream gets them in its host.Options).
func (s *Servers) HandleInput(h conduit.Handlers) {
	s.mu.Lock()
	s.handlers = h
	s.mu.Unlock()
}

// HandleResume sets what serves the retries other members receive for the
// modern calls this member holds (the gateway's Resume).
func (s *Servers) HandleResume(f func(context.Context, *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)) {
	s.mu.Lock()
	s.resume = f
	s.mu.Unlock()
}

// serveInput answers an input request that a server held elsewhere sent
// for a call made here, through the gateway's callbacks, as if the server
// were local.
func (s *Servers) serveInput(data []byte) *pcluster.GrainResponse {
	var in inputRequest
	if err := json.Unmarshal(data, &in); err != nil {
		return encodeError(fmt.Errorf("cluster: undecodable input request: %w", err))
	}
	s.mu.Lock()
	c, h := s.calls[in.Call], s.handlers
	s.mu.Unlock()
	if c == nil {
		return encodeError(&conduit.RPCError{Code: messages.CodeMethodNotFound,
			Message: fmt.Sprintf("Method not found: %s (its call through member %s has ended)", in.Method, s.m.Address())})
	}
	timeout := defaultCallTimeout
	if in.TimeoutMS > 0 {
		timeout = millis(in.TimeoutMS)
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout) // and it ends with its call
	defer cancel()
	rc := conduit.RequestContext{ServerID: in.Server, Era: in.Era, Assigns: c.assigns, InputKey: in.InputKey, InputsInRound: in.InputsInRound}
	var res any
	var err error
	switch {
	case in.Method == messages.MethodCreateMessage && h.Sampling != nil:
		req := &conduit.SamplingRequest{RequestContext: rc, Raw: in.Raw}
		if err = json.Unmarshal(in.Params, &req.Params); err == nil {
			res, err = h.Sampling(ctx, req)
		}
	case in.Method == messages.MethodElicit && h.Elicitation != nil:
		req := &conduit.ElicitationRequest{RequestContext: rc, Mode: in.Mode, Raw: in.Raw}
		if err = json.Unmarshal(in.Params, &req.Params); err == nil {
			res, err = h.Elicitation(ctx, req)
		}
	case in.Method == messages.MethodListRoots && h.Roots != nil:
		res, err = h.Roots(ctx, &conduit.RootsRequest{RequestContext: rc})
	default:
		err = &conduit.RPCError{Code: messages.CodeMethodNotFound, Message: "Method not found: " + in.Method}
	}
	if err != nil {
		return encodeError(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return encodeError(err)
	}
	return &pcluster.GrainResponse{MessageTypeName: typeResult, MessageData: out}
}

// forward sends an input request of a server this member holds to the
// member whose gateway made the call (the call's origin), and decodes the
// answer into out. An input that belongs to no call of a gateway is
// refused as the gateway refuses it.
func (m *Member) forward(ctx context.Context, rc conduit.RequestContext, method, mode string, params any, raw json.RawMessage, out any) error {
	o, _ := rc.Assigns[originKey].(*origin)
	s := m.servers.Load()
	if o == nil || s == nil {
		if g := m.grain(rc.ServerID); g != nil {
			g.gate.Stray() // what its gate learnt does not hold
		}
		m.Unattributed.Add(1)
		m.logger.Warn("cluster: an input request belongs to no call this member can name; refused", "server", rc.ServerID, "method", method, "total", m.Unattributed.Load())
		return &conduit.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (it belongs to no call of a client of the gateway)", method)}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	data, err := json.Marshal(inputRequest{TimeoutMS: timeLeft(ctx).Milliseconds(), Call: o.Call, Method: method, Server: rc.ServerID, Era: rc.Era,
		InputKey: rc.InputKey, InputsInRound: rc.InputsInRound, Mode: mode, Params: p, Raw: raw})
	if err != nil {
		return err
	}
	if gc, _ := rc.Assigns[callKey].(*grainCall); gc != nil {
		gc.asked.Store(true)
		if gc.parks {
			// Its modern client has the round: the call holds the gate
			// parked until the retry answers it.
			defer gc.gate.Park(func() { gc.cancel(context.Canceled) })()
		}
	}
	resp, err := s.send(ctx, actor.NewPID(o.Member, relayName), "", typeInput, data, method, func(lost lostMember) error {
		return &conduit.Error{Kind: conduit.KindTransport, Method: method, ConnectionEnded: true,
			Message: fmt.Sprintf("cluster member %s whose client made the call was lost before it answered: %s", lost.member, lost.why)}
	})
	if err != nil {
		return err
	}
	if resp.MessageTypeName == typeError {
		// The client's (or the gateway's) JSON-RPC error goes up as it is.
		var we wireError
		if json.Unmarshal(resp.MessageData, &we) == nil && we.Code != 0 {
			return &conduit.RPCError{Code: we.Code, Message: we.RPCMessage, Data: we.Data}
		}
	}
	return decodeAnswer(method, resp, out)
}

// inputHandlers are the input callbacks of the servers this member holds:
// each input goes to the member whose gateway made the call.
func (m *Member) inputHandlers(h *conduit.Handlers) {
	h.Sampling = func(ctx context.Context, req *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
		var out conduit.CreateMessageResult
		if err := m.forward(ctx, req.RequestContext, messages.MethodCreateMessage, "", req.Params, req.Raw, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	h.Elicitation = func(ctx context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		var out conduit.ElicitResult
		if err := m.forward(ctx, req.RequestContext, messages.MethodElicit, req.Mode, req.Params, req.Raw, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	h.ElicitationModes = []string{"form", "url"}
	h.Roots = func(ctx context.Context, req *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
		var out conduit.ListRootsResult
		if err := m.forward(ctx, req.RequestContext, messages.MethodListRoots, "", map[string]any{}, nil, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	h.Progress = m.sendProgress
	h.Log = m.sendLog
}

// sendProgress is the Progress hook of the servers this member holds: a
// call's progress (its token names the call's origin) goes to the member
// whose gateway made it.
func (m *Member) sendProgress(_ context.Context, nc conduit.NotificationContext, p *conduit.Progress) {
	token, _ := p.Token.(string)
	id, ok := strings.CutPrefix(token, progressPrefix)
	g := m.grain(nc.ServerID)
	if !ok || g == nil {
		return
	}
	gc := g.call(id)
	if gc == nil {
		return // its call has ended: as on one machine, it is dropped
	}
	data, err := json.Marshal(progressNote{Call: id, Server: nc.ServerID, Progress: p.Progress, Total: p.Total, Message: p.Message})
	if err != nil {
		return
	}
	m.system.Root.Send(actor.NewPID(gc.origin.Member, relayName), &pcluster.GrainRequest{MessageTypeName: typeProgress, MessageData: data})
}

// sendLog is the Log hook of the servers this member holds: an entry,
// sanitised and rate-limited by the server's client here, goes to every
// member (this one too), whose gateway relays it as it would a local
// server's.
func (m *Member) sendLog(_ context.Context, nc conduit.NotificationContext, entry *conduit.LoggingMessage) {
	s := m.servers.Load()
	if s == nil {
		return
	}
	raw, err := json.Marshal(entry.Data)
	if err != nil {
		return
	}
	data, err := json.Marshal(logNote{Server: nc.ServerID, Level: entry.Level, Logger: entry.Logger, Data: raw})
	if err != nil {
		return
	}
	s.mu.Lock()
	var members []string
	for addr := range s.members {
		if !s.lost[addr] { // nobody there: the remote would retry a dead address
			members = append(members, addr)
		}
	}
	s.mu.Unlock()
	if !slices.Contains(members, m.Address()) {
		members = append(members, m.Address())
	}
	for _, addr := range members {
		m.system.Root.Send(actor.NewPID(addr, relayName), &pcluster.GrainRequest{MessageTypeName: typeLog, MessageData: data})
	}
}

// maxNotes bounds the progress notifications and log entries a member
// has received from the others and not yet given its gateway; past it,
// they are dropped and counted (Servers.NotesDropped).
const maxNotes = 1024

// note queues a progress notification or log entry for the gateway.
func (s *Servers) note(msg *pcluster.GrainRequest) {
	select {
	case s.notes <- msg:
	default:
		if n := s.NotesDropped.Add(1); n&(n-1) == 0 { // 1, 2, 4, ...: said, not flooded
			s.m.logger.Warn("cluster: progress or log entries from the servers' members came faster than the gateway relayed them; dropped", "total", n)
		}
	}
}

// relayNotes gives the gateway's hooks the notes of the queue, in arrival
// order, until stop.
func (s *Servers) relayNotes() {
	defer close(s.notesDone)
	for {
		select {
		case <-s.stop:
			return
		case msg := <-s.notes:
			s.relayNote(msg)
		}
	}
}

func (s *Servers) relayNote(msg *pcluster.GrainRequest) {
	s.mu.Lock()
	h := s.handlers
	s.mu.Unlock()
	switch msg.MessageTypeName {
	case typeProgress:
		var n progressNote
		if json.Unmarshal(msg.MessageData, &n) != nil || h.Progress == nil {
			return
		}
		s.mu.Lock()
		c := s.calls[n.Call]
		s.mu.Unlock()
		if c == nil || c.progress == nil {
			return // its call has ended, or asked for none
		}
		h.Progress(c.ctx, conduit.NotificationContext{ServerID: n.Server}, &conduit.Progress{Token: c.progress, Progress: n.Progress, Total: n.Total, Message: n.Message})
	case typeLog:
		var n logNote
		if json.Unmarshal(msg.MessageData, &n) != nil || h.Log == nil {
			return
		}
		h.Log(context.Background(), conduit.NotificationContext{ServerID: n.Server}, &conduit.LoggingMessage{Level: n.Level, Logger: n.Logger, Data: n.Data})
	}
}

// StateKey is the requestState MAC key every member derives from the
// cluster's secret (gateway.Members).
func (s *Servers) StateKey() []byte { return stateKey(s.m.opts.Secret) }

// Self is this member's remote address, which its requestStates name.
func (s *Servers) Self() string { return s.m.Address() }

// errGone is a Resume whose member is not in the cluster.
var errGone = errors.New("not a member of the cluster")

// Resume hands a modern client's retry to member, which holds its call
// (gateway.Members). A member not in the topology, or lost before it
// answered, is an error that is not a *jsonrpc.Error: the call is lost.
func (s *Servers) Resume(ctx context.Context, member string, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	const method = "Resume"
	s.mu.Lock()
	_, known := s.members[member]
	s.mu.Unlock()
	if !known {
		s.Lost.Add(1)
		return nil, fmt.Errorf("cluster member %s: %w", member, errGone)
	}
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	data, err := json.Marshal(resumeRequest{TimeoutMS: timeLeft(ctx).Milliseconds(), ID: id, Params: params})
	if err != nil {
		return nil, err
	}
	pid := actor.NewPID(member, relayName)
	resp, err := s.send(ctx, pid, "", typeResume, data, method, func(lost lostMember) error {
		return fmt.Errorf("cluster member %s holding the call was lost: %s", lost.member, lost.why)
	})
	if err != nil {
		if ctx.Err() != nil {
			// Its client went: the wait there ends too, as a local
			// retry's does (which cancels the call).
			cancel, _ := json.Marshal(map[string]string{"id": id})
			s.m.system.Root.Send(pid, &pcluster.GrainRequest{MessageTypeName: typeCancelResume, MessageData: cancel})
		}
		return nil, err
	}
	if resp.MessageTypeName == typeError {
		var we wireError
		if json.Unmarshal(resp.MessageData, &we) == nil && we.Code != 0 {
			return nil, &jsonrpc.Error{Code: int64(we.Code), Message: we.RPCMessage, Data: we.Data}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: we.Message}
	}
	var out mcp.CallToolResult
	if err := decodeAnswer(method, resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// serveResume serves a retry another member received for a call held
// here.
func (s *Servers) serveResume(data []byte) *pcluster.GrainResponse {
	var in resumeRequest
	if err := json.Unmarshal(data, &in); err != nil {
		return encodeError(fmt.Errorf("cluster: undecodable resume request: %w", err))
	}
	var p mcp.CallToolParamsRaw
	if err := json.Unmarshal(in.Params, &p); err != nil {
		return encodeError(fmt.Errorf("cluster: undecodable resume params: %w", err))
	}
	s.mu.Lock()
	resume := s.resume
	s.mu.Unlock()
	if resume == nil {
		return encodeError(fmt.Errorf("cluster: member %s serves no gateway", s.m.Address()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), millis(max(in.TimeoutMS, 1)))
	defer cancel()
	if in.ID != "" {
		s.mu.Lock()
		s.resumes[in.ID] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.resumes, in.ID)
			s.mu.Unlock()
		}()
	}
	res, err := resume(ctx, &p)
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return encodeError(&conduit.RPCError{Code: int(je.Code), Message: je.Message, Data: je.Data})
		}
		return encodeError(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return encodeError(err)
	}
	return &pcluster.GrainResponse{MessageTypeName: typeResult, MessageData: out}
}

func errUndecodable(what string, err error) error {
	return fmt.Errorf("cluster: undecodable %s: %v", what, err)
}

// cancelResume ends the Resume a CancelResume names, if it still runs.
func (s *Servers) cancelResume(data []byte) {
	var c struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &c) != nil {
		return
	}
	s.mu.Lock()
	cancel := s.resumes[c.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
