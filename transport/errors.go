package transport

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"unicode"
)

// maxBodyExcerpt caps HTTPStatusError.Body.
const maxBodyExcerpt = 512

// MessageTooLongError reports an incoming message over its size limit: a
// stdio line (the connection cannot resynchronise after one, so every later
// Read returns the same error), or an SSE event or JSON response body over
// HTTP (the request it belongs to fails and its stream is abandoned).
// Nothing past the limit is buffered. Find it with errors.As.
type MessageTooLongError struct {
	// What was too long: "stdio message", "SSE event" or "JSON response
	// body".
	What string
	// Limit is the limit in force, in bytes.
	Limit int
	// Setting names the field that sets the limit, such as
	// "transport.Command.MaxMessageBytes".
	Setting string
}

func (e *MessageTooLongError) Error() string {
	return fmt.Sprintf("transport: %s exceeds the limit of %s; raise %s", e.What, sizeText(e.Limit), e.Setting)
}

// sizeText formats n bytes for a person: "64 MiB", "512 KiB" when n is a
// whole number of them, else "1000 bytes".
func sizeText(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// SessionIDError reports an Mcp-Session-Id the client refuses: longer than
// HTTP.MaxSessionIDBytes, or with a byte outside visible ASCII (0x21-0x7E,
// as the specification asks). The request whose response carried it fails
// with it (for initialize, the session is never started); the id is never
// sent back. Find it with errors.As.
type SessionIDError struct {
	// Length is the id's length in bytes.
	Length int
	// Limit is the limit in force; 0 when the length was not the fault.
	Limit int
	// Byte is the first byte outside visible ASCII, at Offset, when that
	// was the fault.
	Byte   byte
	Offset int
}

func (e *SessionIDError) Error() string {
	if e.Limit > 0 {
		return fmt.Sprintf("transport: the server's Mcp-Session-Id is %s, over the limit of %s; raise transport.HTTP.MaxSessionIDBytes", sizeText(e.Length), sizeText(e.Limit))
	}
	return fmt.Sprintf("transport: the server's Mcp-Session-Id holds byte 0x%02x at offset %d, outside visible ASCII", e.Byte, e.Offset)
}

// HTTPStatusError reports an HTTP answer to a request that carries no
// JSON-RPC response: a status outside 2xx whose body is not a JSON-RPC
// error, a 202 Accepted (no response will come), or a 2xx whose
// Content-Type is neither application/json nor text/event-stream. Find it
// with errors.As.
type HTTPStatusError struct {
	// URL is the endpoint, without credentials.
	URL string
	// Status is the HTTP status code.
	Status int
	// ContentType is the response's Content-Type, as sent.
	ContentType string
	// Body is the start of the response body (at most 512 bytes), for a
	// diagnosis.
	Body string
	// Challenge is the response's WWW-Authenticate header (its first 512
	// bytes): on a 401 or 403, a Bearer challenge means the server wants
	// an OAuth sign-in (see NeedsSignIn).
	Challenge string
}

// NeedsSignIn reports whether the answer asks for an OAuth sign-in: a 401
// or 403 with a Bearer challenge in WWW-Authenticate (MCP authorization).
func (e *HTTPStatusError) NeedsSignIn() bool {
	if e.Status != http.StatusUnauthorized && e.Status != http.StatusForbidden {
		return false
	}
	scheme, _, _ := strings.Cut(strings.TrimSpace(e.Challenge), " ")
	return strings.EqualFold(strings.TrimSuffix(scheme, ","), "Bearer")
}

func (e *HTTPStatusError) Error() string {
	status := statusText(e.Status)
	switch {
	case e.Status == http.StatusAccepted:
		return "transport: HTTP " + status + ": the server sent no response to the request"
	case e.Status >= 200 && e.Status <= 299:
		return fmt.Sprintf("transport: HTTP %s with Content-Type %q, neither JSON nor an event stream", status, e.ContentType)
	}
	if excerpt := oneLine(e.Body); excerpt != "" {
		return "transport: HTTP " + status + ": " + excerpt
	}
	return "transport: HTTP " + status
}

// oneLine is s with runs of spaces and control characters made one space,
// for an error message.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

// ServerExitError reports that the server process exited: Read returns it
// once stdout is drained, and Write when it is why the write failed. Err is
// what revealed the exit (io.EOF on stdout, a broken pipe on stdin).
type ServerExitError struct {
	// State is the exited process's state.
	State *os.ProcessState
	// Stderr holds the server's last stderr lines (at most 5, each cut at
	// 512 bytes) when Command.Logger was set; they usually say why.
	Stderr []string
	Err    error
}

func (e *ServerExitError) Error() string {
	msg := fmt.Sprintf("transport: the server exited (%s)", e.State)
	if len(e.Stderr) > 0 {
		msg += "; its last stderr: " + oneLine(strings.Join(e.Stderr, " | "))
	}
	return msg
}

// ExitCode is the server's exit status, or -1 if a signal ended it.
func (e *ServerExitError) ExitCode() int { return e.State.ExitCode() }

func (e *ServerExitError) Unwrap() error { return e.Err }
