package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
)

// Servers are the cluster's servers as one member's gateway sees them (a
// gateway.Upstream): every request is a cluster request to the server's
// grain, wherever it is; the catalog is what the grains answered to the
// last keep-alive, which every Refresh asks of each, and which a member's
// leaving asks at once (and so activates a grain whose member was lost, on
// a survivor, without waiting for a call).
type Servers struct {
	m       *Member
	names   []string
	changed chan struct{}
	kick    chan struct{} // buffered 1: a keep-alive round now (a member left)
	stop    chan struct{}
	done    chan struct{}
	sub     *eventstream.Subscription

	mu       sync.Mutex
	tools    map[string]toolsReply // by server, from its grain's last answer
	rdv      *pcluster.Rendezvous  // the cluster's own hashing, over the last topology
	members  map[string]string     // address → id, of the last topology
	lost     map[string]bool       // addresses whose connection dropped, until the topology drops them too
	topology chan struct{}         // closed and replaced at each topology or loss
	inflight map[string]map[*pending]struct{}
	rounds   chan struct{}                 // closed and replaced after each keep-alive round
	calls    map[string]*call              // the calls this member's gateway makes, by id, while they run
	draining map[string]time.Time          // members that said they drain, until when
	resumes  map[string]context.CancelFunc // the Resumes this member serves, by id
	handlers conduit.Handlers              // the gateway's input callbacks
	resume   func(context.Context, *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)

	subs map[chan host.Event]struct{} // Subscribe's; nil once closed

	// Counters of requests: started, completed (an answer came, a result
	// or the server's error), failed because their member was lost.
	Started, Completed, Lost, TimedOut atomic.Int64
	// Resent counts requests sent again because they had not run: their
	// grain had stopped before they reached it (a dead letter), or its
	// member's drain ended without them (drainedNotice).
	Resent atomic.Int64
	// EventsDropped counts status events a slow subscriber lost.
	EventsDropped atomic.Int64
	// NotesDropped counts progress notifications and log entries from
	// the servers' members that the gateway did not relay in time
	// (maxNotes queued).
	NotesDropped atomic.Int64

	notes     chan *pcluster.GrainRequest // progress and log entries for the gateway, in arrival order
	notesDone chan struct{}

	seq atomic.Uint64 // the last request.ID's number
}

// pending is a request in flight to the member at its address.
type pending struct {
	lost chan lostMember // the lost member, once
	// id is a grain request's request.ID ("" for the others); after says
	// that it was sent once the member had said it drains.
	id    string
	after bool
}

// Servers returns the member's view of the cluster's servers. Close it
// before the member.
func (m *Member) Servers() *Servers {
	s := &Servers{
		m: m, names: slices.Sorted(maps.Keys(m.cfg.Servers)),
		changed: make(chan struct{}, 1), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		tools: map[string]toolsReply{}, rdv: pcluster.NewRendezvous(), members: map[string]string{},
		lost: map[string]bool{}, topology: make(chan struct{}), rounds: make(chan struct{}), inflight: map[string]map[*pending]struct{}{},
		calls: map[string]*call{}, draining: map[string]time.Time{}, subs: map[chan host.Event]struct{}{},
		resumes: map[string]context.CancelFunc{},
		notes:   make(chan *pcluster.GrainRequest, maxNotes), notesDone: make(chan struct{}),
	}
	m.servers.Store(s)
	s.sub = m.system.EventStream.Subscribe(s.event)
	if ms := m.c.MemberList.Members(); ms != nil {
		s.onTopology(&pcluster.ClusterTopology{Members: ms.Members(), Joined: ms.Members()}) // those that joined before
	}
	go s.keepAlive()
	go s.relayNotes()
	return s
}

// GatesServers says that the gate of each legacy stdio server (gateway.Gated)
// runs in the server's grain, on the member holding it: the calls through
// every member queue at that one gate (gateway.Gating).
func (s *Servers) GatesServers() bool { return true }

// event follows the cluster's topology and the remote's connections.
func (s *Servers) event(ev any) {
	switch ev := ev.(type) {
	case *pcluster.ClusterTopology:
		s.onTopology(ev)
	case *remote.EndpointTerminatedEvent:
		s.onLost(ev.Address, "its connection dropped")
	case remote.EndpointTerminatedEvent:
		s.onLost(ev.Address, "its connection dropped")
	case *remote.EndpointConnectedEvent:
		s.mu.Lock()
		delete(s.lost, ev.Address)
		s.mu.Unlock()
	}
}

func (s *Servers) onTopology(t *pcluster.ClusterTopology) {
	for _, mb := range t.Joined {
		s.m.event(Event{Kind: EventJoined, Member: mb.Address(), ID: mb.Id, Members: len(t.Members)})
	}
	for _, mb := range t.Left {
		s.m.event(Event{Kind: EventLeft, Member: mb.Address(), ID: mb.Id, Members: len(t.Members)})
		s.onLost(mb.Address(), "it left the cluster")
	}
	s.mu.Lock()
	s.rdv.UpdateMembers(t.Members)
	s.members = map[string]string{}
	for _, mb := range t.Members {
		s.members[mb.Address()] = mb.Id
	}
	for addr := range s.lost {
		if _, still := s.members[addr]; !still {
			delete(s.lost, addr)
		}
	}
	s.wake()
	s.mu.Unlock()
	if len(t.Left) > 0 {
		// The servers the member held start afresh on a survivor now,
		// rather than at the next round or the next call.
		select {
		case s.kick <- struct{}{}:
		default: // a round is asked for already
		}
	}
}

// onLost fails every request in flight to the member at addr; a member
// that said it drains has until its notice's time to answer them.
func (s *Servers) onLost(addr, why string) {
	var lostEvent *Event
	defer func() { // after the unlock
		if lostEvent != nil {
			s.m.event(*lostEvent)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	until, drains := s.draining[addr]
	if wait := time.Until(until); drains && wait > 0 && (len(s.inflight[addr]) > 0 || s.m.madeCalls(addr)) {
		time.AfterFunc(wait, func() { s.onLost(addr, why+", and its drain ended") })
		return
	}
	if id, member := s.members[addr]; member && !s.lost[addr] {
		s.lost[addr] = true
		if !drains {
			lostEvent = &Event{Kind: EventLost, Member: addr, ID: id, Members: len(s.members), Why: why}
		}
	}
	name := addr
	if id := s.members[addr]; id != "" {
		name = addr + " (" + id + ")"
	}
	// The calls it made to the grains here end too (a call holding a
	// server's gate releases it now, not at its deadline), before the
	// requests in flight to it fail: a call of it waiting for an answer
	// to its input is cancelled, and its server told, rather than ended
	// by that input's failure first. (Lock order: s.mu, then m.mu.)
	s.m.orphan(addr, name, why)
	for p := range s.inflight[addr] {
		select {
		case p.lost <- lostMember{member: name, why: why}:
		default:
		}
	}
	delete(s.inflight, addr)
	s.wake()
}

// wake tells the requests waiting for a topology that it changed. Called
// with mu held.
func (s *Servers) wake() {
	close(s.topology)
	s.topology = make(chan struct{})
}

// keepAlive asks every server grain for its catalog and status each
// Refresh, and at once when a member has left the topology (its grains
// activate on survivors then), and says so when the catalog changed.
func (s *Servers) keepAlive() {
	defer close(s.done)
	t := time.NewTicker(s.m.opts.Refresh)
	defer t.Stop()
	for {
		s.refresh()
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

func (s *Servers) refresh() {
	var wg sync.WaitGroup
	for _, name := range s.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*s.m.opts.Refresh+2*time.Second)
			defer cancel()
			var r toolsReply
			err := s.request(ctx, name, typeTools, request{}, &r)
			s.mu.Lock()
			defer s.mu.Unlock()
			old, had := s.tools[name]
			if err != nil {
				// Its tools stay in the catalog: a call activates the
				// grain again, on a survivor when its member was lost.
				if had {
					was := old.Status.State
					old.Status.State, old.Status.Err = host.StateRestarting, err.Error()
					s.tools[name] = old
					if was != host.StateRestarting {
						s.publish(host.Event{Time: time.Now(), Status: s.statusLocked(name)})
					}
				}
				return
			}
			if had && r.Status.State != host.StateReady {
				// A fresh activation still starting: a call waits for it
				// to be ready, so its tools stay served meanwhile.
				r.Tools = old.Tools
			}
			if !had || !sameTools(old, r) {
				s.signal()
			}
			s.tools[name] = r
			if !had || old.Status.State != r.Status.State || old.Status.PID != r.Status.PID || old.Member != r.Member {
				s.publish(host.Event{Time: time.Now(), Status: s.statusLocked(name)})
			}
		}()
	}
	wg.Wait()
	s.mu.Lock()
	close(s.rounds)
	s.rounds = make(chan struct{})
	s.mu.Unlock()
}

// Settle waits until the cluster has at least members members and every
// server's grain answered a keep-alive ready, or ctx ends (its error
// then).
func (s *Servers) Settle(ctx context.Context, members int) error {
	for {
		s.mu.Lock()
		done := len(s.members) >= members
		for _, name := range s.names {
			if r, ok := s.tools[name]; !ok || r.Status.State != host.StateReady {
				done = false
			}
		}
		next := s.rounds
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-next:
		}
	}
}

// Members is the number of members in the last topology.
func (s *Servers) Members() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members)
}

func sameTools(a, b toolsReply) bool {
	if len(a.Tools) != len(b.Tools) {
		return false
	}
	for i := range a.Tools {
		if a.Tools[i].ServerTool != b.Tools[i].ServerTool || string(a.Tools[i].Tool) != string(b.Tools[i].Tool) {
			return false
		}
	}
	return true
}

func (s *Servers) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// errLost is what a request in flight to a lost member fails with.
func errLost(method, server string, lost lostMember) error {
	return &conduit.Error{Kind: conduit.KindTransport, Method: method, ConnectionEnded: true,
		Message: fmt.Sprintf("cluster member %s holding server %q was lost with the request in flight: %s", lost.member, server, lost.why)}
}

// lostMember says which member was lost, and how it was seen; notRun,
// that the request never ran there (so it is sent again).
type lostMember struct {
	member, why string
	notRun      bool
}

// request sends one request to server's grain and decodes its result into
// out. It waits for a topology without a member known lost before it
// addresses the grain, and fails at once if the member holding the grain
// is lost while the request is in flight.
func (s *Servers) request(ctx context.Context, server, typeName string, req request, out any) error {
	method := typeName[len("conduit.cluster.v1."):]
	if !slices.Contains(s.names, server) {
		return &conduit.Error{Kind: conduit.KindRPC, Method: method, Message: "unknown server " + server, Err: host.ErrUnknownServer,
			RPC: &conduit.RPCError{Code: -32602, Message: "unknown server " + server}}
	}
	req.TimeoutMS = timeLeft(ctx).Milliseconds()
	req.ID = s.m.Address() + "/" + strconv.FormatUint(s.seq.Add(1), 10)
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var pid *actor.PID
	var resp *pcluster.GrainResponse
	for {
		if pid, err = s.resolve(ctx, server, method); err != nil {
			return err
		}
		resp, err = s.send(ctx, pid, req.ID, typeName, data, method, func(lost lostMember) error { return errLost(method, server, lost) })
		if !errors.Is(err, errNotDelivered) {
			break
		}
		// The request did not run (its grain stopped before it reached
		// it, as when its member drains or one joined): it is sent again
		// to the grain's activation now.
		s.Resent.Add(1)
		s.mu.Lock()
		wait := s.topology
		s.mu.Unlock()
		retry := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-wait:
		case <-retry.C:
		}
		retry.Stop()
	}
	if err != nil {
		if req.Origin != nil && ctx.Err() != nil {
			// The holding member's call ends too, not at its deadline.
			o, _ := json.Marshal(req.Origin)
			s.m.system.Root.Send(pid, &pcluster.GrainRequest{MessageTypeName: typeCancel, MessageData: o})
		}
		return err
	}
	return decodeAnswer(method, resp, out)
}

// timeLeft is what is left of ctx's deadline (defaultCallTimeout without
// one), at least a millisecond.
func timeLeft(ctx context.Context) time.Duration {
	timeout := defaultCallTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	return max(timeout, time.Millisecond)
}

// resolve is the PID of server's grain, activated if needed. It waits for
// a topology without a member known lost, bounded by ctx.
func (s *Servers) resolve(ctx context.Context, server, method string) (*actor.PID, error) {
	ci := pcluster.NewClusterIdentity(server, Kind)
	for {
		s.mu.Lock()
		owner, wait := s.rdv.GetByClusterIdentity(ci), s.topology
		stale := s.lost[owner] || owner == ""
		s.mu.Unlock()
		if !stale {
			// Get activates the grain if needed and blocks up to 5 s
			// when its owner does not answer: a loss or a new topology
			// meanwhile sends the request to the new owner without
			// waiting for it (the abandoned Get ends by itself).
			found := make(chan *actor.PID, 1)
			go func() { found <- s.m.c.Get(server, Kind) }()
			select {
			case <-ctx.Done():
				s.TimedOut.Add(1)
				return nil, ctxErr(ctx, method, server)
			case pid := <-found:
				if pid != nil {
					return pid, nil
				}
			case <-wait:
				continue
			}
		}
		// No owner, a lost one, or one that did not answer: try again at
		// the next topology, or in a while.
		retry := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			retry.Stop()
			s.TimedOut.Add(1)
			return nil, ctxErr(ctx, method, server)
		case <-wait:
		case <-retry.C:
		}
		retry.Stop()
	}
}

// send sends one request to pid (a grain, with the request's id, or a
// member's relay actor, with none), tracked as in flight to its member: it
// fails at once, with lost's error, when that member is lost before it
// answers, and with errNotDelivered when the request did not run.
func (s *Servers) send(ctx context.Context, pid *actor.PID, id, typeName string, data []byte, method string, lost func(lostMember) error) (*pcluster.GrainResponse, error) {
	p := &pending{lost: make(chan lostMember, 1), id: id}
	s.mu.Lock()
	_, p.after = s.draining[pid.Address]
	if s.lost[pid.Address] {
		s.mu.Unlock()
		s.Lost.Add(1)
		return nil, lost(lostMember{member: pid.Address, why: "its connection dropped before the request was sent"})
	}
	if s.inflight[pid.Address] == nil {
		s.inflight[pid.Address] = map[*pending]struct{}{}
	}
	s.inflight[pid.Address][p] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.inflight[pid.Address], p)
		s.mu.Unlock()
	}()
	s.Started.Add(1)
	root := s.m.system.Root
	f := root.RequestFuture(pid, &pcluster.GrainRequest{MessageTypeName: typeName, MessageData: data}, timeLeft(ctx))
	type answer struct {
		res any
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := f.Result()
		got <- answer{res, err}
	}()
	answered := func(a answer) (*pcluster.GrainResponse, error) {
		if a.err != nil {
			if errors.Is(a.err, actor.ErrDeadLetter) {
				return nil, errNotDelivered
			}
			if errors.Is(a.err, actor.ErrTimeout) {
				s.TimedOut.Add(1)
				return nil, &conduit.Error{Kind: conduit.KindTimeout, Method: method, Message: fmt.Sprintf("cluster: no answer from member %s in time", pid.Address), Err: context.DeadlineExceeded}
			}
			s.Lost.Add(1)
			return nil, lost(lostMember{member: pid.Address, why: a.err.Error()})
		}
		resp, ok := a.res.(*pcluster.GrainResponse)
		if !ok {
			return nil, &conduit.Error{Kind: conduit.KindProtocol, Method: method, Message: fmt.Sprintf("cluster: unexpected answer %T", a.res)}
		}
		if resp.MessageTypeName == typeNotRun {
			return nil, errNotDelivered
		}
		s.Completed.Add(1)
		return resp, nil
	}
	select {
	case a := <-got:
		return answered(a)
	case member := <-p.lost:
		// No answer can come now: free the future. One that came before
		// the loss was seen (a member's answers arrive in order, before
		// its drained notice) is the request's.
		root.Stop(f.PID())
		if a := <-got; a.err == nil && a.res != nil {
			return answered(a)
		}
		if member.notRun {
			return nil, errNotDelivered
		}
		s.Lost.Add(1)
		return nil, lost(member)
	case <-ctx.Done():
		root.Stop(f.PID())
		s.TimedOut.Add(1)
		kind := conduit.KindTimeout
		if errors.Is(ctx.Err(), context.Canceled) {
			kind = conduit.KindCancelled
		}
		return nil, &conduit.Error{Kind: kind, Method: method, Message: fmt.Sprintf("cluster: no answer from member %s in time", pid.Address), Err: ctx.Err()}
	}
}

// errNotDelivered is a request that did not run: it reached no actor (a
// dead letter, its target had stopped), or its grain's member said so.
var errNotDelivered = errors.New("cluster: the request reached no actor")

// decodeAnswer decodes a typeResult answer into out (nil: ignored), or
// returns a typeError answer's error.
func decodeAnswer(method string, resp *pcluster.GrainResponse, out any) error {
	switch resp.MessageTypeName {
	case typeError:
		return decodeError(method, resp.MessageData)
	case typeResult:
	default:
		return &conduit.Error{Kind: conduit.KindProtocol, Method: method, Message: "cluster: unknown answer " + resp.MessageTypeName}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(resp.MessageData, out); err != nil {
		return &conduit.Error{Kind: conduit.KindProtocol, Method: method, Message: "cluster: undecodable result", Err: err}
	}
	return nil
}

func ctxErr(ctx context.Context, method, server string) error {
	kind := conduit.KindTimeout
	if errors.Is(ctx.Err(), context.Canceled) {
		kind = conduit.KindCancelled
	}
	return &conduit.Error{Kind: kind, Method: method, Message: fmt.Sprintf("cluster: no answer from server %q's grain in time", server), Err: ctx.Err()}
}

// Close stops the keep-alive.
func (s *Servers) Close() error {
	select {
	case <-s.stop:
	default:
		close(s.stop)
		s.m.system.EventStream.Unsubscribe(s.sub)
	}
	<-s.done
	<-s.notesDone
	s.mu.Lock()
	for ch := range s.subs {
		close(ch)
	}
	s.subs = nil
	s.mu.Unlock()
	return nil
}

// CatalogChanged signals a change of the catalog.
func (s *Servers) CatalogChanged() <-chan struct{} { return s.changed }

// Tools is the catalog: every server's tools at its last keep-alive.
func (s *Servers) Tools() []host.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []host.Tool
	for _, name := range s.names {
		for _, wt := range s.tools[name].Tools {
			var t conduit.Tool
			if json.Unmarshal(wt.Tool, &t) != nil {
				continue
			}
			out = append(out, host.Tool{Tool: t, Server: wt.Server, ServerTool: wt.ServerTool})
		}
	}
	return out
}

// Status is every server's status at its last keep-alive; a server whose
// grain did not answer is starting.
func (s *Servers) Status() []host.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]host.Status, 0, len(s.names))
	for _, name := range s.names {
		out = append(out, s.statusLocked(name))
	}
	return out
}

// Holder is the member address that answered server's last keep-alive.
func (s *Servers) Holder(server string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools[server].Member
}

// CallTool calls tool on server's grain. The server's input requests come
// back to this member, to the callbacks of HandleInput with the call's
// assigns (conduit.WithAssigns), and so does its progress when opts ask
// for it (conduit.WithProgressToken: to the Progress callback, under that
// token); input responses given in advance do not cross members.
func (s *Servers) CallTool(ctx context.Context, server, tool string, args any, opts ...conduit.CallOption) (*conduit.CallToolResult, error) {
	raw, err := rawArgs(args)
	if err != nil {
		return nil, err
	}
	req, done := s.called(ctx, opts)
	defer done()
	req.Tool, req.Arguments = tool, raw
	var out conduit.CallToolResult
	if err := s.request(ctx, server, typeCallTool, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// called is the request of a call that may ask for input or report
// progress: its origin (this member, the call's id here), whether its
// client asked for progress, and whether its rounds park on a modern
// client (gateway.AssignParks).
func (s *Servers) called(ctx context.Context, opts []conduit.CallOption) (request, func()) {
	o, done := s.open(ctx, opts)
	parks, _ := conduit.AssignsOf(opts...)[gateway.AssignParks].(bool)
	req := request{Origin: o, Progress: conduit.ProgressTokenOf(opts...) != nil, Parks: parks}
	if caps, ok := conduit.CapabilitiesOf(opts...); ok {
		req.Capabilities = &caps
	}
	return req, done
}

func rawArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	}
	return json.Marshal(args)
}

// GetPrompt gets prompt name of server.
func (s *Servers) GetPrompt(ctx context.Context, server, name string, args map[string]string, opts ...conduit.CallOption) (*conduit.GetPromptResult, error) {
	req, done := s.called(ctx, opts)
	defer done()
	req.Name, req.PromptArguments = name, args
	var out conduit.GetPromptResult
	if err := s.request(ctx, server, typeGetPrompt, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReadResource reads uri of server.
func (s *Servers) ReadResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) (*conduit.ReadResourceResult, error) {
	req, done := s.called(ctx, opts)
	defer done()
	req.URI = uri
	var out conduit.ReadResourceResult
	if err := s.request(ctx, server, typeReadResource, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Complete asks server for completions.
func (s *Servers) Complete(ctx context.Context, server string, p conduit.CompleteParams, _ ...conduit.CallOption) (*conduit.CompleteResult, error) {
	var out conduit.CompleteResult
	if err := s.request(ctx, server, typeComplete, request{Complete: &p}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SubscribeResource subscribes to uri on server. Its updates stay on the
// holding member (docs/cluster.md).
func (s *Servers) SubscribeResource(ctx context.Context, server, uri string, _ ...conduit.CallOption) error {
	return s.request(ctx, server, typeSubscribe, request{URI: uri}, nil)
}

// UnsubscribeResource unsubscribes from uri on server.
func (s *Servers) UnsubscribeResource(ctx context.Context, server, uri string, _ ...conduit.CallOption) error {
	return s.request(ctx, server, typeUnsubscribe, request{URI: uri}, nil)
}

// SetLogLevel sets server's log level.
func (s *Servers) SetLogLevel(ctx context.Context, server, level string, _ ...conduit.CallOption) error {
	return s.request(ctx, server, typeSetLogLevel, request{Level: level}, nil)
}

// Prompts lists every server's prompts; a server that fails is left out
// and its error joined.
func (s *Servers) Prompts(ctx context.Context) ([]host.Prompt, error) {
	return gather[host.Prompt](ctx, s, typePrompts)
}

// Resources lists every server's resources.
func (s *Servers) Resources(ctx context.Context) ([]host.Resource, error) {
	return gather[host.Resource](ctx, s, typeResources)
}

// ResourceTemplates lists every server's resource templates.
func (s *Servers) ResourceTemplates(ctx context.Context) ([]host.ResourceTemplate, error) {
	return gather[host.ResourceTemplate](ctx, s, typeResourceTemplates)
}

// gather asks every ready server's grain for its list.
func gather[T any](ctx context.Context, s *Servers, typeName string) ([]T, error) {
	var out []T
	var errs []error
	for _, st := range s.Status() {
		if st.State != host.StateReady {
			continue
		}
		var list []T
		if err := s.request(ctx, st.Server, typeName, request{}, &list); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", st.Server, err))
			continue
		}
		out = append(out, list...)
	}
	return out, errors.Join(errs...)
}
