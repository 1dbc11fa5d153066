package actors

import (
	"runtime"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// msgQueue is the protoactor Mailbox of every actor of a connection: the
// queue of its messages and the loop that hands them to the actor. It
// behaves as protoactor's default unbounded mailbox (system messages
// first, Suspend/ResumeMailbox honoured, a panic escalated to the
// supervisor, a yield every Throughput messages), without its costs on a
// request's path: that one allocates a closure at every activation and a
// node per system message, and four queue structures per actor. Here the
// queue itself is what the connection's dispatcher runs (no closure at
// all), and both queues are slices that keep a small backing array between
// activations.
//
// mu guards the slices and the flags; the activation runs without it, one
// at a time (scheduled). Batches (actor.MessageBatch) are not unpacked:
// no connection actor is sent one.
//
// The connection actor's mailbox has one more lane, urgent, for its
// children's replies and failures (PostUrgent), taken before its other
// user messages; the dispatcher runs its activations before those of the
// children (first); and after it has started connectionChunk children it
// lets them run before it takes more (yieldToChildren). Each reply or
// failure ends a request: it frees its slot, ends the pause of its call
// and sends its answer. Behind a burst's frames, queued first, they held
// every child and every answer until the last frame had started its
// child, and behind the children's activations, the connection's own
// waited for each of them (decision 81).
type msgQueue struct {
	mu        sync.Mutex
	system    []any
	user      []any
	urgent    *urgentQueue // nil until the first PostUrgent
	sysHead   int32        // system[:sysHead] are taken
	userHead  int32        // user[:userHead] are taken
	scheduled bool         // an activation is scheduled or running
	suspended bool
	first     bool // the connection actor's (set before any post, never changed)
	// started counts the children the connection actor has started since
	// it last yielded to them (request.start); its activation alone reads
	// and writes it.
	started int32

	invoker    actor.MessageInvoker
	dispatcher actor.Dispatcher

	// The first backing arrays of system and user: an actor of the
	// connection gets its system messages one at a time, and a request
	// child (which gets none) its start and then its handler's outcome in
	// the common case, so their queues allocate nothing more.
	sysInline, userInline [1]any
}

var _ actor.Mailbox = (*msgQueue)(nil)

// newMsgQueue is the actor.MailboxProducer of a connection's actors.
func newMsgQueue() actor.Mailbox { return (&msgQueue{}).init() }

// init readies a zero msgQueue and returns it.
func (m *msgQueue) init() *msgQueue {
	m.system, m.user = m.sysInline[:0], m.userInline[:0]
	return m
}

// keptCap is the largest backing array a drained queue keeps: a flood's
// array goes back to the collector once the flood has passed.
const keptCap = 64

func (m *msgQueue) RegisterHandlers(invoker actor.MessageInvoker, dispatcher actor.Dispatcher) {
	m.invoker, m.dispatcher = invoker, dispatcher
}

func (m *msgQueue) Start() {}

func (m *msgQueue) UserMessageCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.user) - int(m.userHead)
	if u := m.urgent; u != nil {
		n += len(u.q) - int(u.head)
	}
	return n
}

func (m *msgQueue) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user = append(m.user, msg)
	m.postedLocked()
}

// PostUrgent posts a user message taken before the others (but after
// the system messages, and not while suspended): a child's reply or
// failure to the connection actor.
func (m *msgQueue) PostUrgent(msg any) {
	m.mu.Lock()
	if m.urgent == nil {
		m.urgent = new(urgentQueue)
	}
	m.urgent.q = append(m.urgent.q, msg)
	m.postedLocked()
}

func (m *msgQueue) PostSystemMessage(msg any) {
	m.mu.Lock()
	m.system = append(m.system, msg)
	m.postedLocked()
}

// postedLocked schedules an activation unless one is scheduled or
// running; it unlocks mu.
func (m *msgQueue) postedLocked() {
	schedule := !m.scheduled
	m.scheduled = true
	m.mu.Unlock()
	if !schedule {
		return
	}
	if d, ok := m.dispatcher.(*dispatcher); ok {
		d.schedule(m) // every queue of a connection's actors
	} else {
		m.dispatcher.Schedule(m.activate)
	}
}

// activate hands the actor its messages until there is none it may take.
func (m *msgQueue) activate() {
	throughput := m.dispatcher.Throughput()
	m.started = 0
	for i := 1; ; i++ {
		msg, system, ok := m.next()
		if !ok {
			return
		}
		m.invoke(msg, system)
		if m.started >= connectionChunk && m.yieldToChildren() {
			return
		}
		if i%throughput == 0 {
			runtime.Gosched()
		}
	}
}

// connectionChunk is how many children the connection actor starts in
// one go before they get to run.
const connectionChunk = 16

// yieldToChildren ends an activation of the connection actor that has
// messages left, unless a reply waits: it is scheduled again behind the
// activations queued meanwhile, the starts of the children it has just
// made. Taking a whole burst's frames at once made a child of each before
// any ran: every request's memory live at once, and the collector's work
// with it (decision 81). Messages that start no child (a flood of
// notifications) are taken in one go, as before.
func (m *msgQueue) yieldToChildren() bool {
	m.started = 0
	m.mu.Lock()
	left := int(m.userHead) < len(m.user) || int(m.sysHead) < len(m.system)
	urgent := m.urgent != nil && int(m.urgent.head) < len(m.urgent.q)
	m.mu.Unlock()
	d, ok := m.dispatcher.(*dispatcher)
	if !left || urgent || !ok {
		return false
	}
	d.enqueue(m, false) // still scheduled: posts meanwhile schedule nothing
	return true
}

// next takes the next message: a system message first; an urgent one,
// then a user one, unless suspended. With none, the activation ends
// (scheduled is cleared under mu, so a message posted after that
// schedules a new one).
func (m *msgQueue) next() (msg any, system, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for int(m.sysHead) < len(m.system) {
		msg, m.system, m.sysHead = take(m.system, m.sysHead)
		switch msg.(type) {
		case *actor.SuspendMailbox:
			m.suspended = true
		case *actor.ResumeMailbox:
			m.suspended = false
		default:
			return msg, true, true
		}
	}
	if !m.suspended {
		if u := m.urgent; u != nil && int(u.head) < len(u.q) {
			msg, u.q, u.head = take(u.q, u.head)
			return msg, false, true
		}
		if int(m.userHead) < len(m.user) {
			msg, m.user, m.userHead = take(m.user, m.userHead)
			return msg, false, true
		}
	}
	m.scheduled = false
	return nil, false, false
}

// urgentQueue is the urgent lane: q[:head] are taken.
type urgentQueue struct {
	q    []any
	head int32
}

// take takes q[head], resetting a queue whose messages were all taken,
// which keeps a small backing array.
func take(q []any, head int32) (any, []any, int32) {
	msg := q[head]
	q[head] = nil
	if head++; int(head) < len(q) {
		return msg, q, head
	}
	if cap(q) > keptCap {
		return msg, nil, 0 // the next append starts small again
	}
	return msg, q[:0], 0
}

// invoke hands msg to the actor; a panic goes to its supervisor, as in
// protoactor's mailbox.
func (m *msgQueue) invoke(msg any, system bool) {
	defer func() {
		if r := recover(); r != nil {
			m.invoker.EscalateFailure(r, msg)
		}
	}()
	if system {
		m.invoker.InvokeSystemMessage(msg)
	} else {
		m.invoker.InvokeUserMessage(msg)
	}
}
