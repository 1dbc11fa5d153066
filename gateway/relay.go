//lint:file-ignore SA1019 the gateway relays sampling and roots, deprecated in 2026-07-28 (SEP-2577) but not gone: its clients and servers still use them

package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// modernVersion is the first revision whose clients take input as
// input_required results (multi round-trip) rather than as server→client
// requests.
const modernVersion = "2026-07-28"

// downstream is where the input of one upstream call goes: the downstream
// client whose tools/call caused it, with what it declared.
type downstream struct {
	caps *mcp.ClientCapabilities
	// session is a legacy client's session: input goes as server→client
	// requests on it, related to request (the downstream request's
	// context, see onStream).
	session *mcp.ServerSession
	request context.Context
	// call is a modern client's pending call: input goes as input_required
	// rounds of it.
	call *pendingCall
	// asked is set when the upstream asked for input during the call.
	asked atomic.Bool
	// sess is the session of the call (a legacy client's, or the modern
	// call's own): its actor admits the call's input requests.
	sess *session
}

// roundWindow is how long the gateway waits for the rest of a modern
// server's round once its first input request came: the round's requests
// pass the guards side by side, and one refused ends the round, so the
// others may never come.
const roundWindow = 100 * time.Millisecond

// legacyWindow is how long the gateway waits, once a legacy server's
// input request came, for others it sends with it (a go-sdk server sends
// the requests of a round to a legacy client at once): those that come
// within it are one round for a modern client. Each round of a legacy
// server waits that long before it reaches the client.
const legacyWindow = 10 * time.Millisecond

// collect is a's round: a and the other input requests of its upstream
// round that arrive within roundWindow; for a legacy server's (which
// says nothing of rounds), those that arrive within legacyWindow.
func (pc *pendingCall) collect(a *ask) []*ask {
	batch := []*ask{a}
	want, window := a.round, roundWindow
	if a.round == 0 {
		want, window = math.MaxInt, legacyWindow
	}
	if want <= 1 {
		return batch
	}
	t := time.NewTimer(window)
	defer t.Stop()
	for len(batch) < want {
		select {
		case b := <-pc.asks:
			batch = append(batch, b)
		case <-t.C:
			return batch
		case <-pc.done:
			return batch
		}
	}
	return batch
}

// inputRequest is a's request as the go-sdk puts it in an input_required
// result.
func inputRequest(a *ask) (mcp.InputRequest, error) {
	var ir mcp.InputRequest
	switch a.method {
	case messages.MethodCreateMessage:
		ir = &mcp.CreateMessageWithToolsParams{}
	case messages.MethodElicit:
		ir = &mcp.ElicitParams{}
	case messages.MethodListRoots:
		ir = &mcp.ListRootsParams{}
	default:
		return nil, fmt.Errorf("unknown input %q", a.method)
	}
	return ir, remarshal(a.params, ir)
}

// The relay's callbacks: the host's handlers for every upstream server.

// onStream is ctx (an input handler's) with the values of the downstream
// request's context: the go-sdk sends a server→client request on the
// stream of the request its context names, and on the session's
// standalone GET stream without one, which a client may not have opened
// yet (the request was then refused "rejected by transport"). It ends
// with ctx or with the downstream request.
func (d *downstream) onStream(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.request == nil {
		return ctx, func() {}
	}
	rctx, cancel := context.WithCancel(d.request)
	stop := context.AfterFunc(ctx, cancel)
	return rctx, func() { stop(); cancel() }
}

func (r *relays) sampling(ctx context.Context, req *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	d, err := r.route(ctx, req.RequestContext, messages.MethodCreateMessage, "", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
	if err != nil {
		return nil, err
	}
	var out conduit.CreateMessageResult
	if d.session != nil {
		ctx, done := d.onStream(ctx)
		defer done()
		var res any
		var p mcp.CreateMessageParams
		if len(req.Params.Tools) == 0 && remarshal(req.Params, &p) == nil {
			res, err = d.session.CreateMessage(ctx, &p)
		} else {
			var pt mcp.CreateMessageWithToolsParams
			if err := remarshal(req.Params, &pt); err != nil {
				return nil, err
			}
			res, err = d.session.CreateMessageWithTools(ctx, &pt)
		}
		if err != nil {
			return nil, upstreamError(err)
		}
		if err := remarshal(res, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	raw, err := d.call.ask(ctx, req.RequestContext, messages.MethodCreateMessage, req.Params, conduit.DefaultHandlerTimeout)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	if len(out.Content.Blocks) == 1 {
		out.Content.Array = false
	}
	return &out, nil
}

func (r *relays) elicitation(ctx context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	d, err := r.route(ctx, req.RequestContext, messages.MethodElicit, req.Mode, func(c *mcp.ClientCapabilities) bool {
		if c.Elicitation == nil {
			return false
		}
		if req.Mode == messages.ModeURL {
			return c.Elicitation.URL != nil
		}
		return c.Elicitation.Form != nil || c.Elicitation.URL == nil
	})
	if err != nil {
		return nil, err
	}
	var out conduit.ElicitResult
	if d.session != nil {
		ctx, done := d.onStream(ctx)
		defer done()
		var p mcp.ElicitParams
		if err := remarshal(req.Params, &p); err != nil {
			return nil, err
		}
		res, err := d.session.Elicit(ctx, &p)
		if err != nil {
			return nil, upstreamError(err)
		}
		if err := remarshal(res, &out); err != nil {
			return nil, err
		}
		return &out, nil
	}
	raw, err := d.call.ask(ctx, req.RequestContext, messages.MethodElicit, req.Params, conduit.DefaultElicitationTimeout)
	if err != nil {
		return nil, err
	}
	return &out, json.Unmarshal(raw, &out)
}

func (r *relays) roots(ctx context.Context, req *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	if d, _ := req.Assigns[relayKey].(*downstream); d == nil {
		if ss := r.invitedBy(req.ServerID); ss != nil {
			// The server answers the list_changed a legacy session sent
			// (roots_changed.go): it gets that session's roots.
			return sessionRoots(ctx, ss)
		}
	}
	d, err := r.route(ctx, req.RequestContext, messages.MethodListRoots, "", func(c *mcp.ClientCapabilities) bool { return c.RootsV2 != nil })
	if err != nil {
		return nil, err
	}
	var out conduit.ListRootsResult
	if d.session != nil {
		ctx, done := d.onStream(ctx)
		defer done()
		res, err := d.session.ListRoots(ctx, &mcp.ListRootsParams{})
		if err != nil {
			return nil, upstreamError(err)
		}
		return &out, remarshal(res, &out)
	}
	raw, err := d.call.ask(ctx, req.RequestContext, messages.MethodListRoots, map[string]any{}, conduit.DefaultHandlerTimeout)
	if err != nil {
		return nil, err
	}
	return &out, json.Unmarshal(raw, &out)
}

// route finds the downstream client of the call an input request belongs
// to, from the call's assigns; it never guesses. An input that belongs to
// no gateway call, or whose client did not declare the capability
// (declared), is refused as an undeclared capability is; a modern client's
// call then ends with -32021 (missingcap.go). mode is an elicitation's.
func (r *relays) route(ctx context.Context, rc conduit.RequestContext, method, mode string, declared func(*mcp.ClientCapabilities) bool) (*downstream, error) {
	d, _ := rc.Assigns[relayKey].(*downstream)
	if d != nil {
		d.asked.Store(true)
	}
	if d == nil {
		if r.stray != nil {
			r.stray(rc.ServerID)
		}
		return nil, &messages.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (it belongs to no call of a client of the gateway)", method)}
	}
	if d.caps == nil || !declared(d.caps) {
		if d.call != nil {
			d.call.lacks(method, neededCapability(method, mode))
		}
		return nil, &messages.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: %s (the client did not declare this capability)", method)}
	}
	// The session's actor admits it (its input budget) and keeps it
	// pending until the input ends (ctx, the input handler's).
	if d.sess != nil {
		if err := d.sess.input(ctx, rc.ServerID, method); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// upstreamError is the error an upstream server gets when the downstream
// client failed its input request: the client's JSON-RPC error as it is;
// anything else becomes -32603 (the input pipeline's rule for a handler's
// error).
func upstreamError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &messages.RPCError{Code: int(je.Code), Message: je.Message, Data: je.Data}
	}
	return err
}

// The modern relay: pending calls and their requestState.

// relays holds the modern clients' pending calls, each parked under a
// requestState while its input request is with the client.
type relays struct {
	key  []byte // the requestState MAC's key: random per gateway, or its Members'
	self string // the member's name sealed in each state (Members), or empty
	// lostStates counts retries refused as expired because the member
	// holding their call was lost (Members).
	lostStates atomic.Int64
	// stray is told the server of an input that belongs to no call.
	stray func(server string)

	mu sync.Mutex
	// rootsFrom is the legacy session whose roots/list_changed the
	// upstreams were told last, invited the connections of each server
	// told since (its main one, its variants that declared roots) whose
	// roots/list has not come (roots_changed.go).
	rootsFrom *mcp.ServerSession
	invited   map[string]int
	pending   map[string]*pendingCall // parked, by the key of their round (pendingCall.parked)
	live      map[*pendingCall]struct{}
}

// newRelays makes a gateway's relays; key nil is a random one.
func newRelays(key []byte, self string) *relays {
	if key == nil {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	return &relays{key: key, self: self, pending: map[string]*pendingCall{}, live: map[*pendingCall]struct{}{}}
}

// pendingCall is one upstream call of a modern downstream client: it runs
// in the gateway (its ctx) across the client's rounds.
type pendingCall struct {
	id     string
	what   string // the downstream request it serves: tool "NAME", prompt "NAME"
	ctx    context.Context
	cancel context.CancelFunc
	asks   chan *ask     // the callbacks' input requests
	done   chan struct{} // closed by finish
	res    any           // the upstream's result: *conduit.CallToolResult, *conduit.GetPromptResult…
	err    error
	gate   *gate   // its server's, when gated: a parked round may be preempted
	relays *relays // where it is parked
	// progress is its route's key (progressRoutes), "" when the client
	// asked for no progress.
	progress string

	// parked is the key it is parked under, ID-ROUND (relays.mu): each
	// round's requestState names its round, so that the state of an
	// earlier round never resumes a later one. rounds counts its parks.
	parked string
	rounds int

	mu     sync.Mutex
	unpark func()          // while parked on a gate
	held   map[string]*ask // with the client, by input key
	// missing is what the upstream asked for that the client did not
	// declare (a ClientCapabilities), asked its methods (missingcap.go).
	missing map[string]any
	asked   []string
	n       int
	expires *time.Timer // while parked
}

// ask is one input request of an upstream server waiting for the client.
type ask struct {
	key     string // the upstream's input key (a modern server's), or empty
	round   int    // how many input requests its round holds (a modern server's)
	method  string
	params  any
	timeout time.Duration
	reply   chan reply // one slot
}

type reply struct {
	raw json.RawMessage
	err error
}

func (r *relays) start(what string) *pendingCall {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	ctx, cancel := context.WithCancel(context.Background())
	pc := &pendingCall{relays: r, id: hex.EncodeToString(id), what: what, ctx: ctx, cancel: cancel, asks: make(chan *ask), done: make(chan struct{}), held: map[string]*ask{}}
	r.mu.Lock()
	r.live[pc] = struct{}{}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		pc.setUnpark(nil)
		r.mu.Lock()
		delete(r.live, pc)
		// A parked round whose upstream asked for a capability the client
		// lacks stays until it expires: its retry gets the -32021.
		if r.pending[pc.parked] == pc && pc.missingErr() == nil {
			delete(r.pending, pc.parked)
		}
		r.mu.Unlock()
	})
	return pc
}

// finish records the upstream call's outcome; the call's ctx ends, which
// forgets it.
func (pc *pendingCall) finish(res any, err error) {
	pc.res, pc.err = res, err
	close(pc.done)
	pc.cancel()
}

// ask hands an input request to the client's next round and waits for its
// answer.
func (pc *pendingCall) ask(ctx context.Context, rc conduit.RequestContext, method string, params any, timeout time.Duration) (json.RawMessage, error) {
	a := &ask{key: rc.InputKey, round: rc.InputsInRound, method: method, params: params, timeout: timeout, reply: make(chan reply, 1)}
	select {
	case pc.asks <- a:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	select {
	case r := <-a.reply:
		return r.raw, r.err
	case <-ctx.Done():
		// The upstream withdrew its request (notifications/cancelled),
		// or it timed out.
		pc.withdraw(a)
		return nil, context.Cause(ctx)
	}
}

// withdraw forgets a, an input request its server no longer waits for.
// When it was the last one the client held, the parked round is no
// longer pending (its retry is refused) and the upstream call, which no
// client can resume, is cancelled.
func (pc *pendingCall) withdraw(a *ask) {
	pc.mu.Lock()
	found := false
	for key, held := range pc.held {
		if held == a {
			delete(pc.held, key)
			found = true
		}
	}
	last := found && len(pc.held) == 0
	pc.mu.Unlock()
	if last && pc.relays.unparked(pc) {
		pc.cancel()
	}
}

// hold keeps a while the client has it and returns its input key: the
// upstream's own key (a modern server's), so the client sees the keys the
// server chose, or "input-N" for a legacy server's request or a key
// already held.
func (pc *pendingCall) hold(a *ask) string {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	key := a.key
	if _, taken := pc.held[key]; key == "" || taken {
		for {
			pc.n++
			key = "input-" + strconv.Itoa(pc.n)
			if _, taken := pc.held[key]; !taken {
				break
			}
		}
	}
	pc.held[key] = a
	return key
}

// park keeps pc until the client's retry, or until ttl passes (the input's
// handler timeout), which cancels the upstream call; it returns the
// requestState that resumes it.
func (r *relays) park(pc *pendingCall, ttl time.Duration) string {
	deadline := time.Now().Add(ttl)
	r.mu.Lock()
	pc.rounds++
	key := pc.id + "-" + strconv.Itoa(pc.rounds)
	pc.parked = key
	r.pending[key] = pc
	r.mu.Unlock()
	pc.mu.Lock()
	if pc.expires != nil {
		pc.expires.Stop()
	}
	pc.expires = time.AfterFunc(ttl, func() {
		if r.take(key) == pc {
			pc.cancel()
		}
	})
	pc.mu.Unlock()
	return r.seal(key, deadline)
}

// setUnpark forgets pc's parking on its gate, if any, and keeps unpark as
// the next one's (nil: none).
func (pc *pendingCall) setUnpark(unpark func()) {
	pc.mu.Lock()
	prev := pc.unpark
	pc.unpark = unpark
	pc.mu.Unlock()
	if prev != nil {
		prev()
	}
}

// unparked removes pc from the parked calls and reports whether it was
// parked.
func (r *relays) unparked(pc *pendingCall) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending[pc.parked] != pc {
		return false
	}
	delete(r.pending, pc.parked)
	return true
}

// take removes the call parked under key; nil when none is parked under it.
func (r *relays) take(id string) *pendingCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	pc := r.pending[id]
	delete(r.pending, id)
	return pc
}

// Errors of a requestState the gateway refuses (-32602).
var (
	errStateInvalid = errors.New("requestState is not one this gateway issued, or was altered")
	errStateExpired = errors.New("requestState has expired")
	errStateUsed    = errors.New("requestState is not pending: already answered, or its call ended")
)

// resume takes the call a requestState parked and gives the client's
// answers to its input requests. A state that fails its MAC, has expired,
// was already used or names another tool is refused; an answer missing
// cancels the call.
func (r *relays) resume(state, what string, responses mcp.InputResponseMap) (*pendingCall, error) {
	id, _, err := r.open(state)
	if err != nil {
		return nil, err
	}
	pc := r.take(id)
	if pc == nil {
		return nil, errStateUsed
	}
	if err := pc.missingErr(); err != nil {
		return nil, err
	}
	pc.setUnpark(nil)
	pc.mu.Lock()
	if pc.expires != nil {
		pc.expires.Stop()
	}
	held := pc.held
	pc.held = map[string]*ask{}
	pc.mu.Unlock()
	if pc.what != what {
		pc.cancel()
		return nil, fmt.Errorf("requestState belongs to a call of %s", pc.what)
	}
	for key, a := range held {
		resp, ok := responses[key]
		if !ok {
			pc.cancel()
			return nil, fmt.Errorf("inputResponses has no answer to %q", key)
		}
		raw, err := json.Marshal(resp)
		a.reply <- reply{raw: raw, err: err}
	}
	return pc, nil
}

// seal is a requestState: the call's id, the state's deadline and, for a
// member of several (Members), the member holding the call, with a MAC
// over them.
func (r *relays) seal(id string, deadline time.Time) string {
	payload := id + "." + strconv.FormatInt(deadline.UnixMilli(), 10)
	if r.self != "" {
		payload += "." + r.self
	}
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// open checks a requestState's MAC and deadline and returns its call's id
// and the member holding it (empty for a gateway on its own).
func (r *relays) open(state string) (id, member string, err error) {
	p64, mac64, ok := strings.Cut(state, ".")
	if !ok {
		return "", "", errStateInvalid
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(mac64)
	if err1 != nil || err2 != nil {
		return "", "", errStateInvalid
	}
	m := hmac.New(sha256.New, r.key)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return "", "", errStateInvalid
	}
	id, rest, _ := strings.Cut(string(payload), ".")
	ms, member, _ := strings.Cut(rest, ".")
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return "", "", errStateInvalid
	}
	if time.Now().UnixMilli() > at {
		return "", "", errStateExpired
	}
	return id, member, nil
}

// close cancels every pending call.
func (r *relays) close() {
	r.mu.Lock()
	calls := make([]*pendingCall, 0, len(r.live))
	for pc := range r.live {
		calls = append(calls, pc)
	}
	r.mu.Unlock()
	for _, pc := range calls {
		pc.cancel()
	}
}
