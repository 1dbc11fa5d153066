package conduit

import (
	"context"
	"errors"

	"github.com/conduitmcp/conduit/messages"
)

// ErrURLElicitationRequired matches, with errors.Is, the error of a call
// the server refused with -32042 (2025-11-25): the user must first visit
// one or more URLs. errors.As with a *URLElicitationRequiredError gets
// them, typed and checked.
var ErrURLElicitationRequired = messages.ErrURLElicitationRequired

// URLElicitationRequiredError is [messages.URLElicitationRequiredError],
// found with errors.As in the error of a call that failed with -32042:
// Elicitations (each an [ElicitationRequest] of mode "url" with its
// elicitationId in Params and the URL's verdict, from the same guard as an
// elicitation/create's) and Refused (entries the guard left out, why).
type URLElicitationRequiredError = messages.URLElicitationRequiredError

// ElicitationComplete is [messages.ElicitationComplete], what
// Handlers.ElicitationComplete (ElicitationCompleteHandler) gets:
// ElicitationID and Request, the URL elicitation it completes.
type ElicitationComplete = messages.ElicitationComplete

// ElicitationCompleteHandler receives notifications/elicitation/complete
// (2025-11-25) for the URL elicitations the client was asked for, with the
// request each completes, one at a time in arrival order with the other
// notifications. An id never issued, forgotten (past the last 1 000) or
// completed already is dropped and counted in Stats.UnknownResponses.
type ElicitationCompleteHandler interface {
	HandleElicitationComplete(ctx context.Context, nc NotificationContext, c *ElicitationComplete)
}

// urlElicitationRequired gives the error of a call that failed with -32042
// its URLElicitationRequiredError (the RPC error's Cause), each of its URL
// elicitations checked by the URL guard and remembered for its completion;
// any other error is returned as it is.
func (c *Client) urlElicitationRequired(s *session, o callOptions, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.RPC == nil || e.RPC.Code != CodeURLElicitationRequired {
		return err
	}
	rc := RequestContext{Client: c.opts.Name, ServerID: c.opts.ServerID, Era: s.rt.Era(), Assigns: o.assigns}
	rpc := *e.RPC
	rpc.Cause = s.rt.URLElicitations(rpc.Data, rc)
	cp := *e
	cp.RPC = &rpc
	return &cp
}
