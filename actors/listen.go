package actors

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// Backoff of a subscriptions/listen stream that ended abruptly: the first
// re-open waits ListenBackoff, each next one twice as long, up to
// MaxListenBackoff; an acknowledged stream starts it over.
const (
	ListenBackoff    = time.Second
	MaxListenBackoff = 30 * time.Second
)

// stream is the subscriptions/listen stream the connection actor knows:
// the request in flight, what it asked, and what the server acknowledged
// (nil until then). Change notifications pass only through it.
type stream struct {
	id    messages.ID
	asked messages.Subscriptions
	acked *messages.Subscriptions
	ack   chan messages.Subscriptions // buffered 1: the acknowledged subset
}

// listenOpen (listener → connection) opens a stream: call is its
// request, whose deadline is the wait for the acknowledgement.
type listenOpen struct {
	quiet
	call  *callRequest
	asked messages.Subscriptions
	ack   chan messages.Subscriptions
}

// listenEnd (listener → connection) ends the stream id: HTTP closes its
// response stream, stdio sends notifications/cancelled for it.
type listenEnd struct {
	quiet
	id     messages.ID
	reason string
}

// listenForget (listener → connection): the server did not answer the
// ended stream id within ListenDrain; its request is forgotten.
type listenForget struct {
	quiet
	id messages.ID
}

// ListenDrain bounds the wait for the server's answer to a stream the
// client ended before it opens the next (stdio).
const ListenDrain = time.Second

func (c *connection) openStream(ctx actor.Context, m *listenOpen) {
	if c.closed {
		m.call.reply <- callOutcome{err: c.life.closedErr(messages.MethodListen)}
		return
	}
	c.stream = &stream{id: m.call.id, asked: m.asked, ack: m.ack}
	c.call(ctx, m.call)
}

// endStream ends the stream id, if it is still the one in flight. Over
// a transport that closes the stream to cancel it (Streamable HTTP) the
// stream has ended; otherwise (stdio) the server may still answer it,
// and the listener waits for that answer (ListenDrain) before it opens
// another: a server may tie its subscriptions to the session, and undo
// them as the old stream ends.
func (c *connection) endStream(id messages.ID, reason string) {
	if c.stream == nil || c.stream.id != id {
		return
	}
	c.stream = nil
	c.retire(id)
	c.trk().end(id)
	c.notify(messages.MethodCancelled, messages.CancelledParams{RequestID: id, Reason: reason})
	if _, closes := c.cfg.Conn.(transport.Session); closes {
		c.forgetStream(id)
	}
}

// forgetStream forgets an ended stream's request: its answer, if any
// comes, is dropped without a word.
func (c *connection) forgetStream(id messages.ID) {
	if p, ok := c.pending[id]; ok {
		c.forget(id)
		c.ended(p)
		p.reply <- callOutcome{err: &messages.Error{Kind: messages.KindCancelled, Method: messages.MethodListen, Message: "listen stream ended by the client"}}
	}
}

// maxRetired is how many ended streams are remembered.
const maxRetired = 8

// retire remembers an ended stream: what it still brings is no
// violation, and is dropped without being counted.
// The list is made by the first stream that ends (decision 75: the slice
// header was 24 bytes of every connection's runtime).
func (c *connection) retire(id messages.ID) {
	if c.retired == nil {
		c.retired = new([]messages.ID)
	}
	r := c.retired
	if len(*r) == maxRetired {
		*r = append((*r)[:0], (*r)[1:]...)
	}
	*r = append(*r, id)
}

// retiredStream reports whether raw (a subscriptionId or a response id)
// names an ended stream.
func (c *connection) retiredStream(id messages.ID) bool {
	return c.retired != nil && slices.Contains(*c.retired, id)
}

// streamAnswered forgets the stream once its request has an answer (a
// graceful end, an error, a transport failure, its deadline).
func (c *connection) streamAnswered(id messages.ID) {
	if c.stream != nil && c.stream.id == id {
		c.stream = nil
	}
}

// changeMeta is what the connection reads of a change notification's
// params: the stream it names and, for resources/updated, the uri; for
// notifications/tasks, the task id.
type changeMeta struct {
	Meta struct {
		SubscriptionID json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
	} `json:"_meta"`
	URI           string                 `json:"uri"`
	TaskID        string                 `json:"taskId"`
	Notifications messages.Subscriptions `json:"notifications"`
}

// ofStream reports whether params name the stream in flight; retired,
// whether they name one that has ended.
func (c *connection) ofStream(params json.RawMessage) (m changeMeta, ok, retired bool) {
	if json.Unmarshal(params, &m) != nil || len(m.Meta.SubscriptionID) == 0 {
		return m, false, false
	}
	id, _, named := messages.NamedID(m.Meta.SubscriptionID)
	if !named {
		return m, false, false
	}
	if c.stream != nil && id == c.stream.id {
		return m, true, false
	}
	return m, false, c.retiredStream(id)
}

// acknowledged takes the server's acknowledgement of the stream: from now
// on the stream has no deadline, and the kinds acknowledged (of those
// asked) pass. One for another stream, or a second one, is dropped and
// counted.
func (c *connection) acknowledged(params json.RawMessage) {
	m, ok, retired := c.ofStream(params)
	if retired {
		return
	}
	if !ok || c.stream.acked != nil {
		c.unsubscribed(messages.MethodListenAcknowledged, "not for the listen stream in flight")
		return
	}
	acked := c.stream.asked.Within(m.Notifications)
	c.stream.acked = &acked
	c.trk().end(c.stream.id) // open-ended from now on
	c.stream.ack <- acked    // buffered 1, sent once
}

// subscribed reports whether a modern change notification may pass: it
// names the stream in flight, which acknowledged its kind (and uri).
func (c *connection) subscribed(method string, params json.RawMessage) bool {
	m, ok, retired := c.ofStream(params)
	switch {
	case retired:
		c.shared.logger().Debug("change notification of an ended listen stream dropped", "method", method)
	case !ok:
		c.unsubscribed(method, "without the subscriptionId of the listen stream in flight")
	case c.stream.acked == nil:
		c.unsubscribed(method, "before the listen stream was acknowledged")
	case !c.stream.acked.Allows(method, cmp.Or(m.URI, m.TaskID)):
		c.unsubscribed(method, "of a kind or resource the listen stream did not acknowledge")
	default:
		return true
	}
	return false
}

func (c *connection) unsubscribed(method, why string) {
	c.shared.count().unsubscribed.Add(1)
	c.shared.logger().Debug("change notification dropped: "+why, "method", method)
}

// Listen configures the subscriptions/listen stream of a modern session.
type Listen struct {
	// Meta returns the _meta members of each listen request.
	Meta func() ([]era.Member, error)
	// Offered is what the server's capabilities say may change: its
	// listChanged flags, and (ResourceSubscriptions non-nil) subscribe.
	Offered messages.Subscriptions
	// Timeout bounds the wait for the acknowledgement.
	Timeout time.Duration
}

// listener keeps one subscriptions/listen stream open for what is wanted
// (and offered), re-opening it with backoff after an abrupt end and with
// the new set when the set changes. It runs in a goroutine the Runtime
// owns, started by the first Listen, and ends with the connection.
type listener struct {
	rt   *Runtime
	cfg  Listen
	wake chan struct{} // buffered 1: want changed
	// exited is closed once run has returned (the teardown waits for it).
	exited chan struct{}

	mu      sync.Mutex
	want    messages.Subscriptions
	acked   messages.Subscriptions
	open    bool  // a stream is acknowledged and open
	lastErr error // why the last stream failed, nil when none did
	// waiting are the Listen calls the next stream answers; inflight
	// those the stream in flight answers (the run loop's alone).
	waiting  []chan ListenResult
	inflight []chan ListenResult
}

// ListenResult is how a Listen call ended: the stream asking for its set
// was acknowledged (Acked, what the server honours of it), or Err.
type ListenResult struct {
	Acked messages.Subscriptions
	Err   error
}

// Listen asks for the change notifications of want (those the server
// offers) on a subscriptions/listen stream, opening it or re-opening it
// with the new set; an empty want ends it. cfg is taken from the first
// call. The channel (buffered 1) gets the outcome of the stream that asks
// for want: acknowledged, or why not.
func (rt *Runtime) Listen(cfg Listen, want messages.Subscriptions) <-chan ListenResult {
	done := make(chan ListenResult, 1)
	rt.mu.Lock()
	defer rt.mu.Unlock()
	l := rt.listener
	if l == nil {
		if rt.listenClosed {
			done <- ListenResult{Err: rt.m.life.closedErr(messages.MethodListen)}
			return done
		}
		l = &listener{rt: rt, cfg: cfg, wake: make(chan struct{}, 1), exited: make(chan struct{})}
		rt.listener = l
		go l.run()
	}
	l.mu.Lock()
	l.want = want
	l.waiting = append(l.waiting, done)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return done
}

// answer ends the Listen calls the stream in flight answers.
func (l *listener) answer(r ListenResult) {
	for _, w := range l.inflight {
		w <- r
	}
	l.inflight = nil
}

// Listening returns what the server acknowledged on the stream open now,
// and whether one is; err says why the last attempt failed.
func (rt *Runtime) Listening() (acked messages.Subscriptions, open bool, err error) {
	rt.mu.Lock()
	l := rt.listener
	rt.mu.Unlock()
	if l == nil {
		return messages.Subscriptions{}, false, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acked, l.open, l.lastErr
}

// asked is what of the wanted set the server offers.
func (l *listener) asked() messages.Subscriptions {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.cfg.Offered
	s := messages.Subscriptions{
		ToolsListChanged:     l.want.ToolsListChanged && o.ToolsListChanged,
		PromptsListChanged:   l.want.PromptsListChanged && o.PromptsListChanged,
		ResourcesListChanged: l.want.ResourcesListChanged && o.ResourcesListChanged,
	}
	if o.ResourceSubscriptions != nil {
		s.ResourceSubscriptions = slices.Clone(l.want.ResourceSubscriptions)
	}
	if o.TaskIDs != nil { // the server pushes task status on the stream
		s.TaskIDs = slices.Clone(l.want.TaskIDs)
	}
	return s
}

func (l *listener) set(acked messages.Subscriptions, open bool, err error) {
	l.mu.Lock()
	l.acked, l.open, l.lastErr = acked, open, err
	l.mu.Unlock()
}

// takeWaiting moves the Listen calls waiting onto the stream about to
// open.
func (l *listener) takeWaiting() {
	l.mu.Lock()
	l.inflight = append(l.inflight, l.waiting...)
	l.waiting = nil
	l.mu.Unlock()
}

func (l *listener) run() {
	defer close(l.exited)
	ctx := l.rt.m.sh.ctx
	defer func() {
		l.takeWaiting()
		l.answer(ListenResult{Err: l.rt.m.life.closedErr(messages.MethodListen)})
	}()
	backoff := time.Duration(0)
	var current messages.Subscriptions // what the stream in flight asked
	var id messages.ID                 // the stream in flight, zero when none
	var ack chan messages.Subscriptions
	var end chan callOutcome
	var retry <-chan time.Time // the backoff after an abrupt end
	var timer *time.Timer
	// draining is the end of a stream the client ended, until the server
	// answers it or ListenDrain passes; reopen: a stream is to open then.
	var draining chan callOutcome
	var drained messages.ID
	var drain *time.Timer
	var drainC <-chan time.Time
	reopen := false
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if drain != nil {
			drain.Stop()
		}
	}()
	stop := func(reason string) {
		if id.IsZero() {
			return
		}
		l.rt.post(&listenEnd{id: id, reason: reason})
		draining, drained = end, id
		if drain == nil {
			drain = time.NewTimer(ListenDrain)
		} else {
			drain.Reset(ListenDrain)
		}
		drainC = drain.C
		id, ack, end = messages.ID{}, nil, nil
		l.set(messages.Subscriptions{}, false, nil) // until the next one is acknowledged
	}
	open := func() {
		l.takeWaiting()
		asked := l.asked()
		current = asked
		if asked.Empty() {
			l.set(messages.Subscriptions{}, false, nil)
			l.answer(ListenResult{})
			return
		}
		var err error
		id, ack, end, err = l.rt.openStream(l.cfg, asked)
		if err != nil {
			l.rt.cfg.Logger.Error("subscriptions/listen could not be sent", "err", err)
			l.set(messages.Subscriptions{}, false, err)
			l.answer(ListenResult{Err: err})
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			if next := l.asked(); !id.IsZero() && equalSubs(next, current) {
				l.takeWaiting() // the stream in flight answers them
				if acked, open, _ := l.rt.Listening(); open {
					l.answer(ListenResult{Acked: acked})
				}
				continue
			}
			stop("subscriptions changed")
			retry = nil
			if draining != nil {
				reopen = true
				continue
			}
			open()
		case <-draining:
			draining, drainC = nil, nil
			drain.Stop()
			if reopen {
				reopen = false
				open()
			}
		case <-drainC:
			l.rt.post(&listenForget{id: drained})
			draining, drainC = nil, nil
			if reopen {
				reopen = false
				open()
			}
		case <-retry:
			retry = nil
			open()
		case a := <-ack:
			backoff = 0
			l.set(a, true, nil)
			l.answer(ListenResult{Acked: a})
		case out := <-end:
			id, ack, end = messages.ID{}, nil, nil
			var e *messages.Error
			switch {
			case out.err == nil:
				// A graceful end: no reconnect until the set changes.
				l.rt.cfg.Logger.Info("the server ended the subscriptions/listen stream")
				l.set(messages.Subscriptions{}, false, nil)
				l.answer(ListenResult{Err: &messages.Error{Kind: messages.KindProtocol, Method: messages.MethodListen, Message: "the server ended the stream"}})
			case errors.As(out.err, &e) && (e.ConnectionEnded || e.Kind == messages.KindClosed):
				l.set(messages.Subscriptions{}, false, out.err)
				return
			case errors.As(out.err, &e) && (e.Kind == messages.KindTimeout || e.Kind == messages.KindRPC):
				// Never acknowledged, or refused: not retried until the
				// set changes.
				if e.Kind == messages.KindTimeout {
					out.err = &messages.Error{Kind: messages.KindTimeout, Method: messages.MethodListen,
						Message: fmt.Sprintf("the server did not acknowledge subscriptions/listen (notifications/subscriptions/acknowledged) within %s", l.cfg.Timeout)}
				}
				if tasksOnly(current) {
					// Task status is polled anyway: nothing is lost.
					l.rt.cfg.Logger.Debug("subscriptions/listen failed: task status is polled", "err", out.err)
				} else {
					l.rt.cfg.Logger.Error("subscriptions/listen failed: change notifications will not arrive", "err", out.err)
				}
				l.set(messages.Subscriptions{}, false, out.err)
				l.answer(ListenResult{Err: out.err})
			default:
				// Ended abruptly: re-opened after the backoff.
				backoff = min(max(2*backoff, ListenBackoff), MaxListenBackoff)
				l.rt.cfg.Logger.Warn("the subscriptions/listen stream ended; re-opening it", "err", out.err, "after", backoff)
				l.set(messages.Subscriptions{}, false, out.err)
				if timer == nil {
					timer = time.NewTimer(backoff)
				} else {
					timer.Reset(backoff)
				}
				retry = timer.C
			}
		}
	}
}

func equalSubs(a, b messages.Subscriptions) bool {
	return a.ToolsListChanged == b.ToolsListChanged && a.PromptsListChanged == b.PromptsListChanged &&
		a.ResourcesListChanged == b.ResourcesListChanged && slices.Equal(a.ResourceSubscriptions, b.ResourceSubscriptions) &&
		slices.Equal(a.TaskIDs, b.TaskIDs)
}

// openStream sends a subscriptions/listen request for asked.
func (rt *Runtime) openStream(cfg Listen, asked messages.Subscriptions) (messages.ID, chan messages.Subscriptions, chan callOutcome, error) {
	meta, err := cfg.Meta()
	if err != nil {
		return messages.ID{}, nil, nil, err
	}
	body, err := json.Marshal(struct {
		Notifications messages.Subscriptions `json:"notifications"`
	}{asked})
	if err != nil {
		return messages.ID{}, nil, nil, err
	}
	p, err := era.ParseParams(body)
	if err != nil {
		return messages.ID{}, nil, nil, err
	}
	id := messages.IntID(rt.nextID.Add(1))
	m, err := newCall(id, messages.MethodListen, p.With(nil, meta))
	if err != nil {
		return messages.ID{}, nil, nil, err
	}
	m.timeout, m.maxTotal = cfg.Timeout, 0
	ack := make(chan messages.Subscriptions, 1)
	rt.post(&listenOpen{call: m, asked: asked, ack: ack})
	return id, ack, m.reply, nil
}

// postCallback (Runtime.Post → connection) queues f on the mailbox.
type postCallback struct {
	quiet
	f func(ctx context.Context, nc messages.NotificationContext)
}

// Post runs f as a notification callback is run: on the notification
// mailbox, one at a time and in order with the notifications, bounded and
// counted as they are (dropped when 1 000 wait, discarded at close).
func (rt *Runtime) Post(f func(ctx context.Context, nc messages.NotificationContext)) {
	rt.post(&postCallback{f: f})
}

func (c *connection) post(ctx actor.Context, f func(context.Context, messages.NotificationContext)) {
	if !c.ensureMailbox(ctx) {
		return
	}
	ctx.Send(c.mailbox, &enqueue{post: f})
	c.notified = nil
}

// tasksOnly reports whether s asks only for task status, which the await
// polls for whatever the stream does.
func tasksOnly(s messages.Subscriptions) bool {
	return len(s.TaskIDs) > 0 && !s.ToolsListChanged && !s.PromptsListChanged && !s.ResourcesListChanged && len(s.ResourceSubscriptions) == 0
}
