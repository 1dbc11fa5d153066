// Package transport moves JSON-RPC messages between Conduit and one MCP
// server: a stdio subprocess (Command), Streamable HTTP (HTTP), the
// deprecated HTTP+SSE transport of 2024-11-05 servers (SSE) or an
// in-memory pipe (NewMemoryPair). Import it to pick a transport for
// conduit.Connect, or to write one of your own.
//
// A transport moves messages; policy (what to answer, when to give up,
// which era to speak) lives in the runtime. It reads of a message only what
// its framing needs. Stdio and memory read nothing: one message per line,
// or per Write. Streamable HTTP reads of each outgoing message its method,
// id and the params it mirrors into headers (Mcp-Method, Mcp-Name,
// Mcp-Param-*, the _meta protocol version, which also picks modern or
// legacy framing before SetSession), and the requestId of a
// notifications/cancelled, whose stream it closes. Of each incoming
// message it reads whether it is a response and to which id, to know when
// a request's stream is done; it splits a legacy batch into its messages;
// and when an HTTP error status carries a JSON-RPC error, it gives that
// error the id of the request it answers. It never makes up a message: a
// request that gets no JSON-RPC answer (an HTTP error status, a body that
// is not JSON-RPC, a connection refused, a stream that ends early) fails
// with an error for that request (Message.Err), and a transport that fails
// as a whole ends Read with an error.
package transport

import (
	"context"
	"errors"
	"net/http"

	"github.com/conduitmcp/conduit/messages"
)

// Message is one JSON-RPC message as it came off the wire, or the failure
// of one client request.
type Message struct {
	// Data is exactly one JSON-RPC message (never a batch, never a
	// newline); empty when Err is set.
	Data []byte
	// Related is the raw JSON id of the client request whose response stream
	// carried this message (Streamable HTTP), or "" when the transport cannot
	// tell (stdio, in memory). The call tracker uses it to tie a server
	// request to an in-flight call. When Err is set, it is the id of the
	// request that failed.
	Related string
	// Err, when set, says why the client request Related will get no
	// response: the server answered its HTTP request with an error status
	// or something that is not JSON-RPC (*HTTPStatusError), could not be
	// reached (the net error), or the response stream ended early. It
	// fails that request only; the connection goes on.
	Err error
}

// Transport opens a connection to one server.
type Transport interface {
	// Connect starts the server or opens the session. The ctx bounds only the
	// connecting, not the life of the returned Conn.
	Connect(ctx context.Context) (Conn, error)
}

// Conn is one open connection.
//
// Read is called from one goroutine at a time. Write may be called
// concurrently with Read and with other Writes. Close may be called more than
// once, concurrently with Read and Write, and must unblock both.
type Conn interface {
	// Read blocks until the next message, ctx ends, or the connection ends.
	// At the end of the stream it returns io.EOF (or an error wrapping it).
	// A Message with Err set is the failure of one request, not the end.
	// The returned Data is the caller's for good: the Conn never writes to
	// it again (results, params and big strings share its bytes).
	Read(ctx context.Context) (Message, error)
	// Write sends one message. data holds no newline.
	Write(ctx context.Context, data []byte) error
	// Close ends the connection and releases everything it holds.
	Close() error
}

// Origin is implemented by connections that know the server's origin
// (scheme://host[:port]); the elicitation guard compares URLs against it.
type Origin interface {
	Origin() string
}

// ErrClosed is returned by Read and Write after Close.
var ErrClosed = errors.New("transport: connection closed")

// Session is implemented by connections whose framing depends on the
// negotiated session (Streamable HTTP: the MCP-Protocol-Version header, the
// legacy standalone GET stream, modern cancellation by closing a stream).
// The client calls SetSession once the era and version are known, before
// any other request of the session.
type Session interface {
	SetSession(version string, era messages.Era)
}

// ToolHeaders is implemented by connections that mirror tool arguments
// into headers (modern Streamable HTTP, x-mcp-header). The client calls
// SetToolHeaders after each tools/list with, per tool name, the argument
// name → header name map of its valid annotations.
type ToolHeaders interface {
	SetToolHeaders(headers map[string]map[string]string)
}

// RequestHeaders is implemented by connections that can put headers of the
// caller's own on one request (Streamable HTTP, both eras). The client calls
// SetRequestHeader with the request's id before the request is written, and
// with a nil header once the call is over; the headers go on that request
// alone. Names ReservedHeader reports are ignored.
type RequestHeaders interface {
	SetRequestHeader(id messages.ID, h http.Header)
}

// ReservedHeader reports whether a header may not be set per request
// (conduit.WithHeader): those the transport owns (Accept, Content-Type,
// MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method, Mcp-Name, Mcp-Param-*,
// Last-Event-ID), the credentials (Authorization, Proxy-Authorization:
// HTTP.Header and the sign-in flow hold them, for every request of the
// session alike), and those net/http writes itself (Host, Content-Length,
// Transfer-Encoding, Connection, Te, Trailer, Upgrade).
func ReservedHeader(name string) bool {
	if protocolHeader(name) {
		return true
	}
	switch http.CanonicalHeaderKey(name) {
	case "Authorization", "Proxy-Authorization", "Host", "Content-Length", "Transfer-Encoding", "Connection", "Te", "Trailer", "Upgrade":
		return true
	}
	return false
}
