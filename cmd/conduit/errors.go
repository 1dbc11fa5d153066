package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/transport"
)

// exitError carries the exit status an error ends the process with, and
// the words to say about it.
type exitError struct {
	code  int
	msg   string // when empty, err's text
	err   error
	lines bool // msg is several lines, each sanitised already
}

func (e *exitError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return plain(e.err)
}

func (e *exitError) Unwrap() error { return e.err }

// plain is err's text in the CLI's words: without the library's
// "conduit: " prefix (the CLI adds its own), and naming the flag that
// raises a message size limit rather than the library's field.
func plain(err error) string {
	msg := strings.TrimPrefix(err.Error(), "conduit: ")
	var tooLong *transport.MessageTooLongError
	if errors.As(err, &tooLong) {
		msg = strings.Replace(msg, "raise "+tooLong.Setting, sizeFlagHint, 1)
	}
	return msg
}

// usagef is a usage error (exit 2).
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// connectFailed is a failure to start the server or to complete the
// handshake (exit 3), unless the user interrupted it (exit 1) or the
// library found a mistake of ours before anything was sent (exit 2).
func connectFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitFailed, msg: "interrupted while connecting: " + plain(err), err: err}
	}
	var ce *conduit.Error
	if errors.As(err, &ce) && ce.Kind == conduit.KindUsage {
		return &exitError{code: exitUsage, err: err}
	}
	if msg := needsSignIn(err); msg != "" {
		return &exitError{code: exitConnect, msg: msg, err: err}
	}
	if errors.As(err, &ce) && ce.Kind == conduit.KindTransport && ce.Method == "" && ce.Err != nil {
		// Connect's own wrapping of the transport's error says nothing more.
		return &exitError{code: exitConnect, msg: "could not start the server: " + ce.Err.Error(), err: err}
	}
	return &exitError{code: exitConnect, msg: "could not connect: " + plain(err), err: err}
}

// callFailed is a failure of the call itself (exit 1), or a usage error
// (exit 2) when it is the caller's mistake (conduit.KindUsage: a server
// --config does not run, unknown or disabled), found before anything was
// sent.
func callFailed(ctx context.Context, err error) error {
	var ce *conduit.Error
	if ctx.Err() != nil && errors.As(err, &ce) && ce.Kind == conduit.KindCancelled {
		return &exitError{code: exitFailed, msg: "interrupted: " + plain(err), err: err}
	}
	if errors.As(err, &ce) && ce.Kind == conduit.KindUsage {
		return &exitError{code: exitUsage, err: err}
	}
	var urls *conduit.URLElicitationRequiredError
	if errors.As(err, &urls) {
		first := plain(err)
		if errors.As(err, &ce) && ce.RPC != nil {
			first = fmt.Sprintf("%s: the server refused the call (%d): %s", ce.Method, ce.RPC.Code, ce.RPC.Message)
		}
		return &exitError{code: exitFailed, msg: sanitize.Text(first, 0) + urlsToVisit(urls), err: err, lines: true}
	}
	return &exitError{code: exitFailed, err: err}
}

// urlsToVisit lists the pages a -32042 error asks the user to visit, each
// with what its URL check found, for a person to decide (nothing is
// opened), one line each: what the server wrote is kept on its line.
func urlsToVisit(e *conduit.URLElicitationRequiredError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nthe server needs you to visit %d page(s) first, then to call again:", len(e.Elicitations))
	for _, r := range e.Elicitations {
		fmt.Fprintf(&b, "\n  %s  (host %s", sanitize.Text(r.URL, 0), r.Host)
		if r.IDN {
			b.WriteString("; punycode: may imitate another name")
		}
		if r.HostMapped {
			fmt.Fprintf(&b, "; written as %s", sanitize.Text(r.WrittenHost, 0))
		}
		if r.OriginMismatch {
			b.WriteString("; not the server's own site")
		}
		fmt.Fprintf(&b, ")  %s", sanitize.Text(r.Params.Message, 0))
	}
	for _, why := range e.Refused {
		fmt.Fprintf(&b, "\n  refused: %s", sanitize.Text(why.Error(), 0))
	}
	return b.String()
}

// exitCode is the status err ends the process with. Errors that are not
// ours come from cobra (unknown command, bad flag, flag value): usage.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// errorReport is the --json form of the final error, one line on stderr.
type errorReport struct {
	Error string       `json:"error"`
	Exit  int          `json:"exit"`
	Kind  conduit.Kind `json:"kind,omitempty"`
	Code  *int         `json:"code,omitempty"`
}

func reportOf(err error) errorReport {
	r := errorReport{Error: err.Error(), Exit: exitCode(err)}
	var ce *conduit.Error
	if errors.As(err, &ce) {
		r.Kind = ce.Kind
	}
	var re *conduit.RPCError
	if errors.As(err, &re) {
		code := re.Code
		r.Code = &code
	}
	return r
}
