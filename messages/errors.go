package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// JSON-RPC and MCP error codes the client sends or recognises.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeBusy is Conduit's implementation-defined code (the -32000…-32019
	// range) for "too many server requests at once" and "rate limited".
	CodeBusy = -32000
	// CodeResourceNotFound is the legacy resource-not-found code.
	CodeResourceNotFound = -32002
	// Modern (2026-07-28) codes.
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
	// CodeURLElicitationRequired is 2025-11-25 only.
	CodeURLElicitationRequired = -32042
	// CodeSamplingRejected is the documented "user rejected sampling" code.
	CodeSamplingRejected = -1
)

// RPCError is a JSON-RPC error object. A handler returns one (found with
// errors.As) to refuse a legacy server request with that exact code; it is
// also what a server's error response decodes to. errors.Is compares codes,
// so errors.Is(err, ErrMethodNotFound) matches any -32601.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Cause is the typed reason behind an error Conduit sends or fails a
	// call with, when there is one (a *FieldError when an elicitation
	// answer does not fit its form). Message already says it in words; it
	// is never sent, and errors.As finds it through Unwrap.
	Cause error `json:"-"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("jsonrpc error %d: %s (data: %s)", e.Code, e.Message, truncate(e.Data, 512))
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Unwrap exposes Cause.
func (e *RPCError) Unwrap() error { return e.Cause }

// Is reports whether target is an *RPCError with the same code.
func (e *RPCError) Is(target error) bool {
	t, ok := target.(*RPCError)
	return ok && t.Code == e.Code
}

// Sentinel wire errors for errors.Is.
var (
	ErrParse                   = &RPCError{Code: CodeParseError, Message: "Parse error"}
	ErrInvalidRequest          = &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request"}
	ErrMethodNotFound          = &RPCError{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInvalidParams           = &RPCError{Code: CodeInvalidParams, Message: "Invalid params"}
	ErrInternal                = &RPCError{Code: CodeInternalError, Message: "Internal error"}
	ErrBusy                    = &RPCError{Code: CodeBusy, Message: "Server busy"}
	ErrUnsupportedVersion      = &RPCError{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version"}
	ErrMissingClientCapability = &RPCError{Code: CodeMissingClientCapability, Message: "Missing required client capability"}
	ErrHeaderMismatch          = &RPCError{Code: CodeHeaderMismatch, Message: "Header mismatch"}
	ErrURLElicitationRequired  = &RPCError{Code: CodeURLElicitationRequired, Message: "URL elicitation required"}
)

// Kind classifies a failed call: whose fault it is and what ended it, so
// a caller can switch on it. Each kind keeps the meaning written here; new
// kinds may be added.
type Kind string

// The kinds of Error.
const (
	// KindTimeout: a deadline passed: the call's own (WithTimeout,
	// WithMaxTotalTimeout) or the caller's context deadline, when
	// errors.Is(err, context.DeadlineExceeded) is true as well.
	KindTimeout Kind = "timeout"
	// KindCancelled: the caller's context was cancelled
	// (errors.Is(err, context.Canceled)).
	KindCancelled Kind = "cancelled"
	// KindTransport: the connection failed, the server exited, or a
	// request got no answer (an HTTP error status, a connection refused).
	KindTransport Kind = "transport"
	// KindProtocol: the server broke the protocol (a malformed answer, an
	// input request for a capability the client did not declare, no end
	// to its input rounds).
	KindProtocol Kind = "protocol"
	// KindRefused: a guard of this client refused the server's input
	// request (modern): over the server's input budget, or params that
	// break the specification or a bound. RPC is the error the guard
	// refused with (-1 for sampling over the budget, -32000 otherwise
	// over it, -32602 for invalid params); Stats counts it in RateLimited
	// or Refused.
	KindRefused Kind = "refused"
	// KindRPC: the server answered with a JSON-RPC error (RPC).
	KindRPC Kind = "rpc"
	// KindInputHandler: a handler failed while answering input, or its
	// answer was refused (modern).
	KindInputHandler Kind = "input_handler"
	// KindClosed: the client was closed.
	KindClosed Kind = "closed"
	// KindTaskCancelled: the server cancelled the call's task (its status
	// became "cancelled").
	KindTaskCancelled Kind = "task_cancelled"
	// KindUsage: the caller's own mistake, found before anything was
	// sent: an invalid option or argument, arguments or params that do
	// not encode, a server the host does not run (unknown or disabled).
	KindUsage Kind = "usage"
	// KindInternal: Conduit's own fault (an internal actor failed): a
	// bug, never the server's nor the caller's.
	KindInternal Kind = "internal"
	// KindInvalidResult: a tool's result does not match the tool's
	// outputSchema (structuredContent that breaks it, or none where the
	// tool declares one), or the outputSchema cannot be used (it does not
	// compile, refers outside itself, or is too large). The server's
	// fault, found after a well-formed answer; Message names the failing
	// JSON pointer and schema keyword.
	KindInvalidResult Kind = "invalid_result"
)

// ContextEnded is the error of a call abandoned because ctx ended:
// KindTimeout when its deadline passed, KindCancelled when it was
// cancelled. Err is context.Cause(ctx), joined with ctx.Err() when the
// cause does not wrap it, so that errors.Is(err,
// context.DeadlineExceeded) or errors.Is(err, context.Canceled) holds.
func ContextEnded(ctx context.Context, method string) *Error {
	kind := KindCancelled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind = KindTimeout
	}
	cause := context.Cause(ctx)
	if !errors.Is(cause, ctx.Err()) {
		cause = errors.Join(ctx.Err(), cause)
	}
	return &Error{Kind: kind, Method: method, Err: cause}
}

// WriteQueueOverflowError says that the server stopped reading its input:
// the messages queued for it and not yet written would have passed Limit
// bytes (Options.MaxWriteQueueBytes, 16 MiB by default), so the connection
// was closed rather than hold more. It is the Err of the KindTransport
// *Error that ends the connection (and fails every call in flight);
// counted in Stats.WriteQueueOverflows. Find it with errors.As.
type WriteQueueOverflowError struct {
	// Unsent is the bytes of the messages queued and not written, the one
	// that overflowed included; Messages is how many they are. Each
	// counts against Limit with 64 bytes more, what queueing it costs.
	Unsent, Messages int
	// Limit is the bound in force, in bytes.
	Limit int
}

func (e *WriteQueueOverflowError) Error() string {
	return fmt.Sprintf("the server stopped reading its input: %s unsent in %d messages, over the limit of %s",
		mebibytes(e.Unsent), e.Messages, mebibytes(e.Limit))
}

// mebibytes formats n bytes in whole MiB, or KiB or bytes below 1 MiB.
func mebibytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Error is the one error type a call returns. Find it with errors.As; the
// server's JSON-RPC error, when there is one, is reachable with errors.Is
// and errors.As through Unwrap.
type Error struct {
	Kind   Kind
	Method string
	// Message says what happened, in words.
	Message string
	// RPC is the server's error (KindRPC) or the code a guard refused with.
	RPC *RPCError
	// Active is how long the call was in flight; Paused is how much of it the
	// deadline was paused while input was gathered (timeouts only).
	Active, Paused time.Duration
	// InputRequests are the last input requests of a modern call that gave
	// up (the round cap), as the server sent them.
	InputRequests json.RawMessage
	// ConnectionEnded reports that the call failed because its connection
	// ended (closed, lost, or failed as a whole), not alone: errors.Is(err,
	// ErrConnectionEnded) finds it.
	ConnectionEnded bool
	// Err is the underlying cause, if any.
	Err error
}

// ErrConnectionEnded matches, with errors.Is, the error of a call whose
// connection ended under it (Error.ConnectionEnded), and no other: a
// request that failed alone (an HTTP error status, a refused POST) while
// its connection goes on does not match.
var ErrConnectionEnded = errors.New("conduit: the connection ended")

// Is reports whether target is ErrConnectionEnded and e's connection
// ended.
func (e *Error) Is(target error) bool {
	return target == ErrConnectionEnded && e.ConnectionEnded
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("conduit: ")
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Kind))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.RPC != nil {
		b.WriteString(": ")
		b.WriteString(e.RPC.Error())
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the RPC error and the cause.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.RPC != nil {
		errs = append(errs, e.RPC)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}
