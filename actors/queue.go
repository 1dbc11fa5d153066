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
type msgQueue struct {
	mu        sync.Mutex
	system    []any
	user      []any
	sysHead   int  // system[:sysHead] are taken
	userHead  int  // user[:userHead] are taken
	scheduled bool // an activation is scheduled or running
	suspended bool

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
	return len(m.user) - m.userHead
}

func (m *msgQueue) PostUserMessage(msg any) {
	m.mu.Lock()
	m.user = append(m.user, msg)
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
	for i := 1; ; i++ {
		msg, system, ok := m.next()
		if !ok {
			return
		}
		m.invoke(msg, system)
		if i%throughput == 0 {
			runtime.Gosched()
		}
	}
}

// next takes the next message: a system message first; a user message
// unless suspended. With none, the activation ends (scheduled is cleared
// under mu, so a message posted after that schedules a new one).
func (m *msgQueue) next() (msg any, system, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for m.sysHead < len(m.system) {
		msg = m.system[m.sysHead]
		m.system[m.sysHead] = nil
		m.sysHead++
		m.system, m.sysHead = drained(m.system, m.sysHead)
		switch msg.(type) {
		case *actor.SuspendMailbox:
			m.suspended = true
		case *actor.ResumeMailbox:
			m.suspended = false
		default:
			return msg, true, true
		}
	}
	if !m.suspended && m.userHead < len(m.user) {
		msg = m.user[m.userHead]
		m.user[m.userHead] = nil
		m.userHead++
		m.user, m.userHead = drained(m.user, m.userHead)
		return msg, false, true
	}
	m.scheduled = false
	return nil, false, false
}

// drained resets a queue whose messages were all taken, keeping a small
// backing array.
func drained(q []any, head int) ([]any, int) {
	if head < len(q) {
		return q, head
	}
	if cap(q) > keptCap {
		return nil, 0 // the next append starts small again
	}
	return q[:0], 0
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
