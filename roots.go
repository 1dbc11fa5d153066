package conduit

import (
	"context"

	"github.com/conduitmcp/conduit/messages"
)

// RootsChanged tells the server that the roots the Roots handler lists
// have changed, so that it asks the handler again.
//
// In the legacy era it sends notifications/roots/list_changed: a client
// with a Roots handler declares roots.listChanged in initialize, and the
// server then sends a fresh roots/list whenever it needs the roots. In the
// modern era there is nothing to send, and it returns nil: a modern server
// keeps no session, asks for the roots in an input request each time it
// needs them, and so always gets the handler's current answer.
//
// It returns when the notification is queued for the server. A client
// without a Roots handler declares no roots: RootsChanged fails with
// KindUsage and sends nothing. On a client that has ended it fails as a
// call would.
func (c *Client) RootsChanged(ctx context.Context) error {
	const method = messages.MethodRootsListChanged
	if c.sess().rt.Handlers().Roots == nil || !c.declared.Roots {
		return &Error{Kind: KindUsage, Method: method, Message: "no Roots handler: the client declares no roots"}
	}
	if err := ctx.Err(); err != nil {
		return &Error{Kind: KindCancelled, Method: method, Err: context.Cause(ctx)}
	}
	select {
	case <-c.Done():
		return c.ended(method)
	default:
	}
	s := c.sess()
	if s.rt.Era() == EraModern {
		return nil
	}
	return s.rt.Notify(method, nil)
}
