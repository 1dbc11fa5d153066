package conduit

import (
	"fmt"
	"net/http"

	"golang.org/x/net/http/httpguts"

	"github.com/conduitmcp/conduit/transport"
)

// WithHeader puts an HTTP header on the requests of this one call
// (Streamable HTTP, both eras: the call's request and, in the modern era,
// each retry carrying input responses; not the requests of a task: a
// 2025-11-25 task-augmented tools/call, tasks/get, tasks/result). It may
// be given more than once; values of one name add up.
//
// The call fails with KindUsage, before anything is sent, for a name or
// value that is not valid in HTTP, for a header Conduit owns or that holds
// the session's credentials (see transport.ReservedHeader: Accept,
// Content-Type, MCP-Protocol-Version, Mcp-Session-Id, Mcp-Method,
// Mcp-Name, Mcp-Param-*, Last-Event-ID, Authorization, …), and on a
// transport that has no headers (stdio, in memory): a header that could
// not be sent is not dropped in silence.
func WithHeader(name, value string) CallOption {
	return func(o *callOptions) {
		switch {
		case o.usage != nil:
		case !httpguts.ValidHeaderFieldName(name):
			o.usage = fmt.Errorf("WithHeader: %q is not a valid header name", name)
		case !httpguts.ValidHeaderFieldValue(value):
			o.usage = fmt.Errorf("WithHeader: the value of %s is not a valid header value", name)
		case transport.ReservedHeader(name):
			o.usage = fmt.Errorf("WithHeader: %s is set by Conduit or the transport, not per call", http.CanonicalHeaderKey(name))
		default:
			h := o.header.Clone() // an option never changes the caller's earlier copy
			if h == nil {
				h = http.Header{}
			}
			h.Add(name, value)
			o.header = h
		}
	}
}

// checkHeader is the KindUsage error of a call whose options are wrong, or
// whose WithHeader the session's transport cannot send.
func checkHeader(s *session, method string, o callOptions) error {
	if o.usage != nil {
		return &Error{Kind: KindUsage, Method: method, Message: o.usage.Error()}
	}
	if o.header == nil {
		return nil
	}
	if _, ok := s.rt.Conn().(transport.RequestHeaders); !ok {
		return &Error{Kind: KindUsage, Method: method, Message: fmt.Sprintf("WithHeader: the transport (%T) sends no HTTP headers", s.rt.Conn())}
	}
	return nil
}
