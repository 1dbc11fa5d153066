package actors

import (
	"runtime"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/supervisor"
)

// Default handler timeouts.
const (
	DefaultHandlerTimeout     = 60 * time.Second
	DefaultElicitationTimeout = 5 * time.Minute
)

// request is the child actor for one legacy server request: the legacy
// adapter of the input pipeline. It is started with its grant (the call it
// belongs to, whose deadline the connection paused, and its handler
// timeout, which the connection's tracker keeps on its clock) and starts
// the pipeline with the handler in a goroutine the pipeline owns; it feeds
// the pipeline whichever of answer, timeout or server cancellation comes
// first, and turns the outcome into the JSON-RPC frame to send (nothing for
// a cancellation). It never blocks in a message.
//
// It is an actor its connection runs and supervises itself, not a
// protoactor process (decision 79): its mailbox (queue) takes its messages
// one at a time on the connection's dispatcher, as every actor of the
// connection does, and hands them to it (it is its queue's
// actor.MessageInvoker); a panic in it reaches its connection as a
// childFailed, which answers the request -32603. It is in no PID registry
// and gets no Started, Stop or Terminated: it starts with its first
// message, and its reply is its end. A protoactor child cost a registry
// entry, a context and five system messages a request, a fifth of a
// burst's CPU.
//
// What a child would allocate one by one is part of it (one allocation
// per request rather than five): its mailbox, its entry in the tracker,
// and the two messages it sends once each.
type request struct {
	in    input       // its id is in.guard.Context.RequestID
	conn  *connection // its parent: the reply and a failure go to its queue
	ended bool        // it has replied or failed: it takes no more messages
	// released is the connection's (read and written on its goroutine
	// only): the child's request has ended there (release), so a reply or
	// failure of it that comes later is stale.
	released bool

	queue   msgQueue     // its mailbox
	tracked trackedInput // the tracker's entry for it (tracker.inputStarted); its grant, the related call, is settled by the connection before the child starts
	done    handlerDone  // sent once, by handlerDone
	replied childReply   // sent once, by reply
}

var _ actor.MessageInvoker = (*request)(nil)

// startInput is a request child's first message: start the pipeline.
type startInput struct{ quiet }

var startChild = &startInput{}

// start runs r as a child of c, on c's dispatcher.
func (r *request) start(c *connection) {
	r.conn = c
	c.queue.started++ // before it can run: the connection's activation alone touches it
	r.queue.init().RegisterHandlers(r, c.dispatch)
	r.queue.PostUserMessage(startChild)
}

// post sends the child m; one that has ended drops it, as a stopped
// actor's context would.
func (r *request) post(m any) { r.queue.PostUserMessage(m) }

// handlerDone sends the handler's outcome to the child, from the
// handler's goroutine. The handler's goroutine calls it once; the child
// reads r.done only once the message has come through its queue.
func (r *request) handlerDone(out supervisor.Outcome) {
	r.done.out = out
	r.post(&r.done)
}

// InvokeUserMessage is the child's Receive.
func (r *request) InvokeUserMessage(msg any) {
	if r.ended {
		return
	}
	switch m := msg.(type) {
	case *startInput:
		o, ended := r.in.start(r.in.shared.ctx, &r.tracked.grant, r)
		if ended {
			r.reply(o)
		} else {
			// Let the handler's goroutine run now, on this processor:
			// one that answers at once posts its outcome while this
			// activation still runs, which then takes it (one
			// activation a request, not two). Otherwise the new
			// goroutine waits until this worker blocks, and the worker
			// goes on with the rest of a burst first. Not a wait: a
			// handler that blocks is left to run beside the child.
			runtime.Gosched()
		}
	case *handlerDone:
		if o, ok := r.in.returned(m.out); ok {
			r.reply(o)
		}
	case *handlerTimedOut:
		if o, ok := r.in.timedOut(); ok {
			r.reply(o)
		}
	case *cancelInput:
		if o, ok := r.in.cancelled(); ok {
			r.reply(o)
		}
	}
}

// InvokeSystemMessage: nobody sends a request child one.
func (r *request) InvokeSystemMessage(any) {}

// EscalateFailure is a panic in the child: it ends its input as a
// cancellation would (the handler's ctx is cancelled, a handler still
// running is abandoned and counted), takes no more messages, and its
// connection answers the request (childFailed).
func (r *request) EscalateFailure(reason any, _ any) {
	r.ended = true
	r.abandon()
	r.conn.queue.PostUrgent(&childFailed{child: r, reason: reason})
}

// abandon ends a failed child's input. Its state is what the panic left:
// a second panic here is dropped, not let out of the mailbox's recover.
func (r *request) abandon() {
	defer func() { _ = recover() }()
	r.in.cancelled()
}

// reply sends the parent the frame for o, encoded here rather than by the
// parent that every message goes through: the result, the error, or
// nothing when the request was cancelled. The child has then ended.
func (r *request) reply(o outcome) {
	id, shared := r.in.guard.Context.RequestID, r.in.shared
	var data []byte
	switch o.ending {
	case cancelled:
	case answered:
		data = o.raw // the whole response, encoded by the pipeline
	default:
		frame := messages.Frame{JSONRPC: messages.Version, ID: id, Error: o.rpc}
		var err error
		if data, err = frame.Encode(); err != nil {
			// A handler's own error whose Data is not JSON: the server
			// still gets an answer.
			shared.logger().Error("answer could not be encoded; sent -32603", "id", id.String(), "err", err)
			data, _ = messages.NewErrorResponse(id, &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: answer could not be encoded"}).Encode()
		}
	}
	r.ended = true // reply runs once: the input ends once
	r.replied.child, r.replied.data = r, data
	r.conn.queue.PostUrgent(&r.replied)
}
