package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
	"github.com/conduitmcp/conduit/transport"
)

// connection is the connection actor. It owns the map of outgoing calls in
// flight, their deadlines (the call tracker) and the map of request
// children, decodes what the reader goroutine hands it, and answers what
// needs no callback (ping, unknown methods, undeclared capabilities,
// duplicates, the busy cap) itself. It supervises its children: a child's
// panic reaches HandleFailure on this actor's goroutine and is answered
// -32603; children are stopped, never restarted. The notification mailbox
// is spawned with the first notification that has a handler to reach.
type connection struct {
	cfg    *Config
	shared *shared
	life   *lifecycle
	writer *writer
	// tracker is nil while no call, input, task binding or deadline is
	// tracked: trk takes one from trackers, and settleTracker (after every
	// message) gives it back once it tracks nothing (decision 75). Both
	// run on this actor's goroutine only, as the tracker does.
	tracker *tracker
	mailbox *actor.PID // nil until a notification needs it
	// rootsInvited: the client sent notifications/roots/list_changed and
	// the server has not asked roots/list since; that roots/list spends no
	// input budget (guards.Input.Invited).
	rootsInvited bool
	// mailboxGone: its Terminated has come; mailboxDone is the teardown
	// waiting for that (stopMailbox).
	mailboxGone bool
	closed      bool
	// initialized: an initialize result has been delivered. With
	// session.negotiated it ends the handshake, before which a server may
	// send no request but ping (opening). It is set in the activation that
	// delivers the result, so a request the server sends right after its
	// result is never taken for one sent before it.
	initialized bool
	mailboxDone chan struct{}
	// notified is closed once the notifications handed to the mailbox so
	// far are handled; nil when one was handed over since (see notified).
	notified chan struct{}

	pending  map[messages.ID]*callRequest
	stream   *stream                      // the subscriptions/listen stream in flight (listen.go)
	retired  *[]messages.ID               // the last streams ended, nil before the first (listen.go)
	logicals map[messages.ID]*logicalCall // MRTR calls by their logical id
	// running maps a server request's id to its child; a child's reply
	// names its id, so one map serves both ways (a burst paid for a
	// second, child → id, on every request).
	running   map[messages.ID]*request
	slots     supervisor.Cap
	closeDone chan struct{} // a Close waiting for the request children to end (settled)
	dispatch  *dispatcher   // runs the activations of this actor and its children
	queue     connQueue     // this actor's mailbox (connProps)
}

// logicalCall is an MRTR call: several rounds, one deadline.
type logicalCall struct {
	method  string
	expired chan error  // buffered 1
	round   messages.ID // the round in flight, zero between rounds
	// over is the timeout once its deadline has passed: a later round
	// gets it at once, and is never sent.
	over error
}

var _ actor.SupervisorStrategy = (*connection)(nil)

func (c *connection) Receive(ctx actor.Context) {
	defer c.settleTracker()
	switch m := ctx.Message().(type) {
	case *inbound:
		if !c.inbound(ctx, m.msg, m.size) {
			c.shared.budget.release(m.size)
		}
	case *callRequest:
		c.call(ctx, m)
	case *listenOpen:
		c.openStream(ctx, m)
	case *listenEnd:
		c.endStream(m.id, m.reason)
	case *listenForget:
		c.forgetStream(m.id)
	case *postCallback:
		c.post(ctx, m.f)
	case *cancelCall:
		if p, ok := c.pending[m.id]; ok {
			c.forget(m.id)
			c.ended(p)
			if cancellable(p.method) {
				c.notify(messages.MethodCancelled, messages.CancelledParams{RequestID: m.id, Reason: m.reason})
			}
		}
	case *deadlineTick:
		if c.tracker == nil {
			return // a timer of a busy period that has ended fired as it was stopped
		}
		c.tracker.tick(c.expired, func(id messages.ID) {
			if child, ok := c.running[id]; ok {
				child.post(&handlerTimedOut{})
			}
		})
	case *logicalStart:
		if c.closed {
			// Begun just before the end: told as shutdown told the others,
			// and off the clock (the tracker has stopped; its timer would
			// outlive this actor).
			m.expired <- c.life.closedErr(m.method) // buffered 1, new
			return
		}
		if c.logicals == nil {
			c.logicals = map[messages.ID]*logicalCall{}
		}
		c.logicals[m.id] = &logicalCall{method: m.method, expired: m.expired}
		c.trk().start(m.id, m.timeout, m.maxTotal, m.assigns)
	case *logicalEnd:
		if _, ok := c.logicals[m.id]; ok {
			delete(c.logicals, m.id)
			c.trk().end(m.id)
		}
	case *inputStarted:
		if c.closed {
			m.reply <- nil
			return
		}
		in := c.trk().inputOf(m.call)
		in.grant.related = messages.ID{} // a modern input names its call: nothing to relate
		m.reply <- in
	case *inputEnded:
		c.expired(c.trk().inputEnded(m.input))
	case *taskBound:
		c.trk().bindTask(m.task, m.id)
	case *notifyRequest:
		if c.closed {
			m.done <- &messages.Error{Kind: messages.KindClosed, Method: m.method, Message: "connection closed"}
			return
		}
		err := c.notify(m.method, m.params)
		if err == nil && m.method == messages.MethodRootsListChanged {
			c.rootsInvited = true
		}
		m.done <- err
	case *childReply:
		c.childDone(m.child, m.data)
		c.settled()
	case *childFailed:
		c.childFailed(m.child, m.reason)
		c.settled()
	case *readerDone:
		c.shutdown(ctx, &messages.Error{Kind: messages.KindTransport, Message: "connection to the server lost", Err: m.err})
	case *writerFailed:
		var overflow *messages.WriteQueueOverflowError
		if errors.As(m.err, &overflow) {
			// Its own words say what happened: no write failed.
			c.shared.count().writeQueueOverflows.Add(1)
			c.shutdown(ctx, &messages.Error{Kind: messages.KindTransport, Err: m.err})
			return
		}
		c.shutdown(ctx, &messages.Error{Kind: messages.KindTransport, Message: "write to the server failed", Err: m.err})
	case *actorFailed:
		if !c.closed {
			c.shutdown(ctx, &messages.Error{Kind: messages.KindInternal, Message: fmt.Sprintf("internal actor failed: %v", m.reason)})
			// Logged once, after: a logger that panics again ends nothing more.
			c.shared.logger().Error("conduit actor failed", "actor", "connection", "reason", fmt.Sprint(m.reason))
		}
	case *closeRequest:
		c.shutdown(ctx, m.err)
		c.closeDone = m.done
		c.settled()
	case *actor.Stopped:
		// Every child has stopped: no activation of this connection's
		// actors is left to run.
		c.dispatch.close()
	case *stopMailbox:
		if c.mailbox == nil || c.mailboxGone {
			close(m.done)
			return
		}
		// A poison, a user message behind every notification handed to
		// the mailbox: it admits them all, then its queue closes and counts
		// what still waits. (The Stop of this actor's own poison is a
		// system message: it would overtake them, lost uncounted.)
		ctx.Poison(c.mailbox)
		c.mailboxDone = m.done
	case *actor.Terminated:
		if m.Who == c.mailbox {
			c.mailboxGone = true
			if c.mailboxDone != nil {
				close(c.mailboxDone)
				c.mailboxDone = nil
			}
		}
	}
}

// settled ends the wait of a Close once every request child has ended:
// its reply may carry an answer given before the Close, still to send.
func (c *connection) settled() {
	if c.closeDone != nil && len(c.running) == 0 {
		close(c.closeDone)
		c.closeDone = nil
	}
}

// childFailed is a request child that panicked: the request is answered
// -32603 (the child takes no more messages; a handler still running is
// left to return into it, unheard).
func (c *connection) childFailed(child *request, reason any) {
	id := child.in.guard.Context.RequestID
	if child.released {
		return // its id perhaps reused since
	}
	c.shared.logger().Error("request child failed", "id", id.String(), "reason", fmt.Sprint(reason))
	c.release(child)
	c.send(messages.NewErrorResponse(id, &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: input request failed"}))
}

// HandleFailure runs on this actor's goroutine when its one protoactor
// child, the notification mailbox, panicked in Receive: a bug, which ends
// the connection. (A request child's panic comes as childFailed.)
func (c *connection) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason any, _ any) {
	defer c.settleTracker()
	c.shared.logger().Error("conduit actor failed", "actor", child.String(), "reason", fmt.Sprint(reason))
	sup.StopChildren(child)
	c.life.stop(&messages.Error{Kind: messages.KindInternal, Message: fmt.Sprintf("internal actor failed: %v", reason)})
}

// expired fails a call whose deadline passed: the call itself, or the
// round of an MRTR call in flight, or (between rounds) the MRTR caller.
// A nil m is no expiry.
func (c *connection) expired(m *callExpired) {
	if m == nil {
		return
	}
	what := "timeout"
	if m.total {
		what = "max total timeout"
	}
	timeout := func(method string) error {
		return &messages.Error{Kind: messages.KindTimeout, Method: method,
			Message: fmt.Sprintf("no response within the %s of %s: active %s, paused for input %s", what, m.limit, m.active.Round(time.Millisecond), m.paused.Round(time.Millisecond)),
			Active:  m.active, Paused: m.paused}
	}
	id := m.id
	if l, ok := c.logicals[m.id]; ok {
		l.over = timeout(l.method)
		if l.round.IsZero() {
			select {
			case l.expired <- l.over:
			default:
			}
			return
		}
		id = l.round
	}
	p, ok := c.pending[id]
	if !ok {
		return
	}
	c.forget(id)
	c.streamAnswered(id)
	if cancellable(p.method) {
		c.notify(messages.MethodCancelled, messages.CancelledParams{RequestID: id, Reason: "timeout"})
	}
	p.reply <- callOutcome{err: timeout(p.method)}
}

// cancellable reports whether a call may be cancelled with
// notifications/cancelled: a client must not cancel initialize, and the
// server/discover probe may be going to a legacy server that expects
// nothing but initialize.
func cancellable(method string) bool {
	return method != messages.MethodInitialize && method != messages.MethodDiscover
}

// inbound handles one message from the reader; it reports whether it
// handed the message's size of the inbound budget on (to the mailbox),
// else the caller releases it.
func (c *connection) inbound(ctx actor.Context, msg transport.Message, size int64) (handed bool) {
	if msg.Err != nil {
		c.requestFailed(ctx, msg)
		return false
	}
	var frame messages.Frame
	f := &frame
	if derr := messages.DecodeInto(msg.Data, f); derr != nil {
		c.shared.count().malformed.Add(1)
		c.shared.logger().Warn("malformed message from server", "code", derr.Err.Code, "err", derr.Err.Message)
		c.send(messages.NewErrorResponse(derr.ID, derr.Err))
		c.malformedResponse(derr)
		return false
	}
	switch {
	case f.IsResponse():
		c.response(ctx, f)
	case f.IsNotification():
		return c.serverNotification(ctx, f, size)
	default:
		c.serverRequest(ctx, f, msg.Related)
	}
	return false
}

func (c *connection) response(ctx actor.Context, f *messages.Frame) {
	p, ok := c.pending[f.ID]
	if !ok && c.retiredStream(f.ID) {
		return // the late answer to a listen stream the client ended
	}
	if !ok {
		c.shared.count().unknownResponses.Add(1)
		// Counted (Stats.UnknownResponses) and so shown, not warned of: it
		// is most often a late answer, to a call that timed out (a probe
		// on a loaded machine), which the caller has already heard of.
		c.shared.logger().Debug("response to an unknown id dropped", "id", f.ID.String())
		return
	}
	c.forget(f.ID)
	c.ended(p)
	c.streamAnswered(f.ID)
	if f.Error != nil {
		p.reply <- callOutcome{err: &messages.Error{Kind: messages.KindRPC, Method: p.method, RPC: f.Error}, notified: c.flushNotifications(ctx)}
		return
	}
	if p.method == messages.MethodInitialize {
		c.initialized = true
	}
	if p.bindsTask {
		// Bound before the next message is read: the server may ask for
		// the task's input right after this result, before the caller has
		// even seen it.
		if task := createdTask(f.Result); task != "" {
			c.trk().bindTask(task, p.logical)
		}
	}
	p.reply <- callOutcome{result: f.Result, notified: c.flushNotifications(ctx)}
}

// flushNotifications returns a channel closed once every notification
// the server sent before now is handled, or nil when none can be waiting:
// what a server sent before a call's answer reaches its handlers before
// the call returns. One flush serves every answer until the next
// notification.
func (c *connection) flushNotifications(ctx actor.Context) chan struct{} {
	if c.mailbox == nil || c.mailboxGone || c.mailboxDone != nil {
		return nil
	}
	if c.notified == nil {
		c.notified = make(chan struct{})
		ctx.Send(c.mailbox, &flushNotifications{done: c.notified})
	}
	return c.notified
}

// malformedResponse fails at once the call a malformed response names
// (messages.ResponseTo: the transports end its request on it too): it
// has had its answer, one that cannot be read, and no other is coming.
func (c *connection) malformedResponse(derr *messages.DecodeError) {
	p, ok := c.pending[derr.Answers]
	if !ok || derr.Answers.IsZero() {
		return
	}
	c.forget(derr.Answers)
	c.ended(p)
	why := derr.Err.Message
	for _, prefix := range []string{"Invalid Request: ", "Parse error: "} {
		why = strings.TrimPrefix(why, prefix)
	}
	p.reply <- callOutcome{err: &messages.Error{Kind: messages.KindProtocol, Method: p.method, Message: "malformed response: " + why}}
}

// requestFailed fails the call whose request the transport could not get
// an answer to (msg.Related, why in msg.Err): the call fails, the
// connection goes on.
func (c *connection) requestFailed(ctx actor.Context, msg transport.Message) {
	var id messages.ID
	if err := json.Unmarshal([]byte(msg.Related), &id); err != nil {
		c.shared.logger().Warn("transport failure of an unknown request dropped", "id", msg.Related, "err", msg.Err)
		return
	}
	p, ok := c.pending[id]
	if !ok {
		c.shared.logger().Debug("transport failure of a request no longer pending", "id", msg.Related, "err", msg.Err)
		return
	}
	c.forget(id)
	c.ended(p)
	c.streamAnswered(id)
	p.reply <- callOutcome{err: &messages.Error{Kind: messages.KindTransport, Method: p.method, Message: "the request failed", Err: msg.Err}}
}

// serverNotification reports whether it handed the notification (and its
// size of the inbound budget) to the mailbox.
func (c *connection) serverNotification(ctx actor.Context, f *messages.Frame, size int64) bool {
	if f.Method == messages.MethodCancelled {
		var p messages.CancelledParams
		if err := json.Unmarshal(f.Params, &p); err != nil || p.RequestID.IsZero() {
			c.shared.logger().Debug("malformed notifications/cancelled ignored")
			return false
		}
		if child, ok := c.running[p.RequestID]; ok {
			child.post(&cancelInput{reason: p.Reason})
		}
		if c.stream != nil && c.stream.id == p.RequestID {
			// On stdio the server ends a listen stream this way: a
			// graceful end, as its result would be.
			if l, ok := c.pending[p.RequestID]; ok {
				c.forget(p.RequestID)
				c.ended(l)
				l.reply <- callOutcome{}
			}
			c.stream = nil
		}
		return false
	}
	if f.Method == messages.MethodListenAcknowledged {
		c.acknowledged(f.Params)
		return false
	}
	if messages.Subscribable(f.Method) && c.shared.session.Load().era == messages.EraModern && !c.subscribed(f.Method, f.Params) {
		return false
	}
	if c.cfg.OnChange != nil && messages.Subscribable(f.Method) && f.Method != messages.MethodTasks {
		c.cfg.OnChange(f.Method) // before the mailbox: a hook that lists again gets the fresh list
	}
	if f.Method == messages.MethodTaskStatus || f.Method == messages.MethodTasks {
		if a := c.shared.activity.Load(); a != nil { // else no poller waits
			a.taskWatch.notified(f.Params) // wakes the task's poller; the host gets it too
		}
	}
	if !c.shared.handlers().Listens(f.Method) {
		return false // nobody listens
	}
	if !c.ensureMailbox(ctx) {
		return false
	}
	ctx.Send(c.mailbox, &enqueue{method: f.Method, params: f.Params, size: size})
	c.notified = nil
	return true
}

// ensureMailbox spawns the notification mailbox with the first
// notification that needs it; once closed it counts that one discarded
// and reports false.
func (c *connection) ensureMailbox(ctx actor.Context) bool {
	if c.mailbox != nil {
		return true
	}
	if c.closed {
		c.shared.count().notificationsDiscarded.Add(1)
		return false
	}
	mb := newMailbox(c.shared, messages.NotificationContext{Client: c.cfg.Name, ServerID: c.cfg.ServerID}, c.cfg.LogRate, c.cfg.LogBurst, int64(c.cfg.MaxWaitingNotificationBytes))
	c.life.notifications = mb.queue // read by the teardown once this actor stopped
	c.mailbox = c.spawn(ctx, mb)
	return true
}

// logicalHint is hint (the raw id of the request whose stream carried a
// server request), or, when that request is a round of a logical call (a
// legacy call's rounds, Modern.Legacy), the logical call's id: the tracker
// knows the call by it.
func (c *connection) logicalHint(hint string) string {
	var id messages.ID
	if hint == "" || id.UnmarshalJSON([]byte(hint)) != nil {
		return hint
	}
	if p, ok := c.pending[id]; ok && !p.logical.IsZero() {
		if _, ok := c.logicals[p.logical]; ok {
			b, _ := p.logical.MarshalJSON()
			return string(b)
		}
	}
	return hint
}

func (c *connection) serverRequest(ctx actor.Context, f *messages.Frame, hint string) {
	sess := c.shared.session.Load()
	refuse := func(code int, outcome, format string, args ...any) {
		e := &messages.RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
		// Audited before it is sent, as the request children do: once the
		// server has the answer, its record is already written.
		if outcome != "" {
			c.shared.audit(messages.AuditRecord{Time: time.Now(), ServerID: c.cfg.ServerID, Era: sess.era, Method: f.Method, RequestID: f.ID, Outcome: outcome}, e)
			if c.shared.tracer() != nil {
				c.refusalSpan(f, hint, sess, outcome, e)
			}
		}
		c.send(messages.NewErrorResponse(f.ID, e))
	}
	if f.Method == messages.MethodPing {
		c.sendResult(f.ID, struct{}{})
		return
	}
	if _, dup := c.running[f.ID]; dup {
		refuse(messages.CodeInvalidRequest, "", "Invalid Request: id %s is already in use by a running request", f.ID)
		return
	}
	switch f.Method {
	case messages.MethodCreateMessage, messages.MethodElicit, messages.MethodListRoots:
	default:
		refuse(messages.CodeMethodNotFound, "", "Method not found: %s", f.Method)
		return
	}
	c.shared.count().serverRequests.Add(1)
	if c.opening(sess) {
		// Before the handshake ends a server may send ping and logging,
		// nothing else (it does not know the client's capabilities yet);
		// refused before the tracker relates it (to initialize, the one
		// call in flight) and before any guard or callback.
		c.shared.logger().Warn("server request before the handshake ended; refused", "method", f.Method)
		c.shared.count().refused.Add(1)
		refuse(messages.CodeInvalidRequest, guards.OutcomeRefused, "Invalid Request: %s sent before the handshake ended (until then a server may send only ping and logging)", f.Method)
		return
	}
	if sess.era == messages.EraModern {
		c.shared.logger().Warn("modern server sent a request; refused", "method", f.Method)
		c.shared.count().refused.Add(1)
		refuse(messages.CodeMethodNotFound, guards.OutcomeRefused, "Method not found: %s (there are no server requests in %s)", f.Method, sess.version)
		return
	}
	if !c.cfg.Declared.Allows(f.Method, sess.version) {
		e := c.shared.undeclared(messages.AuditRecord{ServerID: c.cfg.ServerID, Era: sess.era, Method: f.Method, RequestID: f.ID})
		if c.shared.tracer() != nil {
			c.refusalSpan(f, hint, sess, guards.OutcomeRefused, e)
		}
		c.send(messages.NewErrorResponse(f.ID, e))
		return
	}
	if c.closed {
		refuse(messages.CodeInternalError, guards.OutcomeRefused, "Internal error: client is closing")
		return
	}
	if !c.slots.Acquire() {
		c.shared.count().busy.Add(1)
		refuse(messages.CodeBusy, guards.OutcomeBusy, "Server busy: %d requests already running", c.slots.Max)
		return
	}
	// Which call the request belongs to (and the pause of its deadline) is
	// settled here, in this actor's order, before the call can end: the
	// child starts with its grant.
	timeout := c.cfg.handlerTimeout(f.Method)
	r := &request{}
	c.trk().inputStarted(&r.tracked, f.ID, c.logicalHint(hint), relatedTask(f.Params), timeout)
	invited := f.Method == messages.MethodListRoots && c.rootsInvited
	if invited {
		c.rootsInvited = false
	}
	r.in.init(c.shared, guards.Input{
		Method: f.Method, Params: f.Params, ParamsValid: true, Version: sess.version, Origin: c.cfg.Origin, Invited: invited,
		Context: messages.RequestContext{Client: c.cfg.Name, ServerID: c.cfg.ServerID, Era: sess.era, Assigns: c.cfg.Assigns, RequestID: f.ID},
	}, "", timeout)
	if c.running == nil {
		c.running = map[messages.ID]*request{}
	}
	c.running[f.ID] = r
	r.start(c)
}

// opening reports whether the handshake has not ended: no initialize
// result delivered and no session negotiated (a modern one has no
// initialize: server/discover, whose result the caller reads first).
func (c *connection) opening(sess *session) bool {
	return !c.initialized && !sess.negotiated
}

func (c *connection) childDone(child *request, data []byte) {
	if child.released {
		return // released already (a crash), its id perhaps reused since
	}
	c.release(child)
	if data != nil {
		c.writer.send(data)
	}
}

// release ends a running child's request: its id, its slot and its
// input's pause.
func (c *connection) release(child *request) {
	child.released = true
	delete(c.running, child.in.guard.Context.RequestID)
	c.slots.Release()
	c.expired(c.trk().inputEnded(&child.tracked))
}

func (c *connection) call(ctx actor.Context, m *callRequest) {
	if c.closed {
		m.reply <- callOutcome{err: c.life.closedErr(m.method)}
		return
	}
	l, isRound := c.logicals[m.logical]
	if isRound && l.over != nil {
		m.reply <- callOutcome{err: l.over}
		return
	}
	if c.pending == nil {
		c.pending = pendingMaps.get()
	}
	c.pending[m.id] = m
	if isRound {
		l.round = m.id // the logical call's deadline already runs
	} else {
		c.trk().start(m.id, m.timeout, m.maxTotal, m.assigns)
	}
	c.writer.send(m.data)
}

// forget removes a call from pending; an empty map goes back to
// pendingMaps, so that an idle connection keeps none (idmaps.go).
func (c *connection) forget(id messages.ID) {
	delete(c.pending, id)
	if len(c.pending) == 0 {
		pendingMaps.put(c.pending)
		c.pending = nil
	}
}

// ended tells the tracker a call has its answer; a round of an MRTR call
// only clears the round (the MRTR caller ends the logical call).
func (c *connection) ended(p *callRequest) {
	if l, ok := c.logicals[p.logical]; ok {
		if l.round == p.id {
			l.round = messages.ID{}
		}
		return
	}
	c.trk().end(p.id)
}

func (c *connection) notify(method string, params any) error {
	f, err := messages.NewNotification(method, params)
	if err != nil {
		return err
	}
	c.send(f)
	return nil
}

func (c *connection) sendResult(id messages.ID, result any) {
	f, err := messages.NewResult(id, result)
	if err == nil {
		c.send(f)
	}
}

func (c *connection) send(f *messages.Frame) {
	data, err := f.Encode()
	if err != nil {
		c.shared.logger().Error("frame could not be encoded", "err", err)
		return
	}
	c.writer.send(data)
}

// shutdown fails every call in flight with err and lets the runtime tear
// the rest down.
// It is idempotent.
func (c *connection) shutdown(ctx actor.Context, err error) {
	if c.closed {
		return
	}
	c.closed = true
	c.life.stop(err)
	if c.tracker != nil {
		c.tracker.stop()
		c.tracker = nil // its stopped timer stays with it, out of trackers
	}
	if c.stream != nil {
		// Ended cleanly: HTTP closes its stream, stdio tells the server.
		c.notify(messages.MethodCancelled, messages.CancelledParams{RequestID: c.stream.id, Reason: "client closing"})
		c.stream = nil
	}
	for _, p := range c.pending {
		p.reply <- callOutcome{err: c.life.closedErr(p.method)}
	}
	pendingMaps.put(c.pending)
	c.pending = nil
	for _, l := range c.logicals {
		select {
		case l.expired <- c.life.closedErr(l.method):
		default:
		}
	}
	// Every child still running is cancelled: it replies nothing (or the
	// answer it had already given: still sent) and ends its input
	// (abandoning a handler that ignores its context), and Close waits for
	// every reply (settled).
	for _, child := range c.running {
		child.post(&cancelInput{reason: "client closing"})
	}
}
