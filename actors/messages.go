package actors

import (
	"context"
	"encoding/json"
	"time"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
	"github.com/conduitmcp/conduit/transport"
)

// The actor messages below never leave this package, so they are
// unexported: nothing outside can forge one. Every one of them may reach an
// actor after it stopped (late handler results, timer ticks, reader output
// and bookkeeping during shutdown), so all implement IgnoreDeadLetterLogging:
// each dead letter that is logged starts a throttling goroutine.

type quiet struct{}

func (quiet) IgnoreDeadLetterLogging() {}

// Reader and writer goroutines → connection.
type (
	inbound struct {
		quiet
		msg  transport.Message
		size int64 // of the inbound budget, released once handled
	}
	readerDone struct {
		quiet
		err error
	}
	writerFailed struct {
		quiet
		err error
	}
)

// Callers (Runtime) → connection.
type (
	callRequest struct {
		quiet
		id       messages.ID
		method   string
		data     []byte // the encoded request
		timeout  time.Duration
		maxTotal time.Duration
		assigns  map[string]any
		reply    chan callOutcome // buffered 1: the connection never blocks on it
		// logical is the MRTR call this request is one round of (zero for
		// a call of its own): its deadline belongs to the logical call.
		logical messages.ID
		// bindsTask: a task-augmented request (2025-11-25) whose result,
		// when it creates a task, binds the task to logical as it is
		// delivered (Logical.OpenTask).
		bindsTask bool
	}
	// logicalStart registers an MRTR call: one deadline across its rounds.
	// expired (buffered 1) gets the timeout when it fires between rounds.
	logicalStart struct {
		quiet
		id       messages.ID
		method   string
		timeout  time.Duration
		maxTotal time.Duration
		assigns  map[string]any
		expired  chan error
	}
	logicalEnd struct {
		quiet
		id messages.ID
	}
	callOutcome struct {
		quiet
		result json.RawMessage
		err    error
		// notified, when set, is closed once every notification the
		// server sent before this answer is handled: the call returns
		// after that (see Runtime.outcome).
		notified chan struct{}
	}
	cancelCall struct {
		quiet
		id     messages.ID
		reason string
	}
	notifyRequest struct {
		quiet
		method string
		params any
		done   chan error // buffered 1
	}
	closeRequest struct {
		quiet
		err  error
		done chan struct{}
	}
	// stopMailbox (from the teardown, once the reader has stopped) stops
	// the notification mailbox; done is closed once it has.
	stopMailbox struct {
		quiet
		done chan struct{}
	}
)

// Its guardian → connection: its own Receive panicked (see endOnFailure).
type actorFailed struct {
	quiet
	reason any
}

// Timers, MRTR and task callers → connection (the call tracker is the
// connection's state).
type (
	// inputStarted opens an MRTR or task input of call (a logical call's
	// id) and pauses that call's deadline; reply (buffered 1) gets the
	// input's entry (its grant is the sender's to read), or nil once the
	// connection is closing.
	inputStarted struct {
		quiet
		call  messages.ID
		reply chan *trackedInput
	}
	// inputEnded ends the pause of input's input.
	inputEnded struct {
		quiet
		input *trackedInput
	}
	// taskBound: server requests related to task belong to call id.
	taskBound struct {
		quiet
		task string
		id   messages.ID
	}
	// deadlineTick: the tracker's timer fired.
	deadlineTick struct{ quiet }
)

// inputGrant is what an input learns of its call: the related call and
// its assigns (hasCall), and how many calls are in flight.
type inputGrant struct {
	related  messages.ID
	assigns  map[string]any
	hasCall  bool
	inFlight int
}

// callExpired is a call the tracker gave up on (deadline or total).
type callExpired struct {
	id     messages.ID
	active time.Duration
	paused time.Duration
	limit  time.Duration
	total  bool
}

// Connection ↔ request child.
type (
	childReply struct {
		quiet
		child *request
		data  []byte // the encoded frame; nil: send nothing (the server cancelled)
	}
	// childFailed: the child panicked (request.EscalateFailure).
	childFailed struct {
		quiet
		child  *request
		reason any
	}
	cancelInput struct {
		quiet
		reason string
	}
	handlerDone struct {
		quiet
		out supervisor.Outcome
	}
	// handlerTimedOut: the child's handler timeout passed (the
	// connection's tracker keeps it).
	handlerTimedOut struct{ quiet }
)

// Connection → notification mailbox.
type (
	enqueue struct {
		quiet
		method string
		params json.RawMessage
		size   int64 // of the inbound budget, released once admitted
		// post, when set, is run as a notification callback is
		// (Runtime.Post): method and params are empty.
		post func(ctx context.Context, nc messages.NotificationContext)
	}
	// flushNotifications: done is to be closed once every notification
	// handed to the mailbox before it is handled (its callback returned,
	// or it was dropped or discarded).
	flushNotifications struct {
		quiet
		done chan struct{}
	}
)
