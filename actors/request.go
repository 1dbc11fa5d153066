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
// adapter of the input pipeline. It is spawned with its grant (the call it
// belongs to, whose deadline the connection paused, and its handler
// timeout, which the connection's tracker keeps on its clock) and starts
// the pipeline with the handler in a goroutine the pipeline owns; it feeds
// the pipeline whichever of answer, timeout or server cancellation comes
// first, and turns the outcome into the JSON-RPC frame to send (nothing for
// a cancellation). It never blocks in Receive.
//
// What a child would allocate one by one is part of it (one allocation
// per request rather than five): its mailbox, its entry in the tracker,
// and the two messages it sends once each.
type request struct {
	in       input       // its id is in.guard.Context.RequestID
	grant    *inputGrant // the related call, settled by the connection
	stopping bool

	queue   msgQueue     // its mailbox (connection.bornQueue)
	tracked trackedInput // the tracker's entry for it (tracker.inputStartedIn)
	done    handlerDone  // sent once, by handlerDone
	replied childReply   // sent once, by reply
}

// handlerDone sends the handler's outcome to the child, from the
// handler's goroutine. The handler's goroutine calls it once; the child
// reads r.done only once the message has come through its queue.
//
// It is posted to the child's mailbox, which is part of the child, as
// protoactor's Send would after resolving the child's PID: a PID made at
// the spawn has no process cached, and resolving it was a lookup in the
// PID registry (a string hash under a lock) per request. A child that has
// stopped meanwhile (its handler abandoned) drops the message as a dead
// letter would: its context takes no message once stopped.
func (r *request) handlerDone(out supervisor.Outcome) {
	r.done.out = out
	r.queue.PostUserMessage(&r.done)
}

func (r *request) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		o, ended := r.in.start(r.in.shared.ctx, r.grant, r)
		if ended {
			r.reply(ctx, o)
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
			r.reply(ctx, o)
		}
	case *handlerTimedOut:
		if o, ok := r.in.timedOut(); ok {
			r.reply(ctx, o)
		}
	case *cancelInput:
		if o, ok := r.in.cancelled(); ok {
			r.reply(ctx, o)
		}
	case *actor.Stopping:
		// Only Conduit's code here: a panic in Stopping leaves a child
		// that never terminates.
		r.stopping = true
		if o, ok := r.in.cancelled(); ok {
			r.reply(ctx, o)
		}
	}
}

// stopChild is the Stop a request child posts itself.
var stopChild = &actor.Stop{}

// reply sends the parent the frame for o, encoded here rather than by the
// parent that every message goes through: the result, the error, or
// nothing when the request was cancelled. Then the child stops itself, in
// this same activation (the parent telling it to would cost one more of
// the child's and, for its Terminated, one more of the parent's); its
// Terminated may reach the parent before the reply (system messages
// overtake), and the parent allows for that.
func (r *request) reply(ctx actor.Context, o outcome) {
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
			shared.logger.Error("answer could not be encoded; sent -32603", "id", id.String(), "err", err)
			data, _ = messages.NewErrorResponse(id, &messages.RPCError{Code: messages.CodeInternalError, Message: "Internal error: answer could not be encoded"}).Encode()
		}
	}
	r.replied.child, r.replied.id, r.replied.data = ctx.Self(), id, data // reply runs once: the input ends once
	ctx.Send(ctx.Parent(), &r.replied)
	if !r.stopping {
		// What ctx.Stop(ctx.Self()) posts, posted to the mailbox that is
		// part of the child: the Stop resolved the child's fresh PID in
		// the PID registry first (a string hash under a lock), once per
		// request. Only the process's dead mark is not set, which a Stop
		// from the parent (at shutdown) does not set either: a message
		// sent to the child after it stopped reaches its context, which
		// takes none once stopped.
		r.queue.PostSystemMessage(stopChild)
	}
}
