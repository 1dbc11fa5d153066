package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// A call refused with -32042 lists the pages to visit, one line each with
// what the URL check found; what the server wrote cannot break a line.
func TestCallFailedListsTheURLsToVisit(t *testing.T) {
	urls := &conduit.URLElicitationRequiredError{
		Elicitations: []*conduit.ElicitationRequest{
			{Mode: conduit.ModeURL, URL: "https://calendar.example/c", Host: "calendar.example", OriginMismatch: true,
				Params: messages.ElicitParams{Message: "Connect your\ncalendar.", ElicitationID: "el-1"}},
			{Mode: conduit.ModeURL, URL: "https://xn--80ak6aa92e.com/x", Host: "xn--80ak6aa92e.com", IDN: true,
				Params: messages.ElicitParams{Message: "Sign in."}},
		},
		Refused: []error{errors.New("elicitation 2: url scheme \"javascript\" is not https")},
	}
	err := &conduit.Error{Kind: conduit.KindRPC, Method: "tools/call",
		RPC: &conduit.RPCError{Code: conduit.CodeURLElicitationRequired, Message: "Authorization\nneeded", Cause: urls}}
	e := callFailed(context.Background(), err)
	assert.Equal(t, exitFailed, exitCode(e))
	assert.Equal(t, `tools/call: the server refused the call (-32042): Authorization needed
the server needs you to visit 2 page(s) first, then to call again:
  https://calendar.example/c  (host calendar.example; not the server's own site)  Connect your calendar.
  https://xn--80ak6aa92e.com/x  (host xn--80ak6aa92e.com; punycode: may imitate another name)  Sign in.
  refused: elicitation 2: url scheme "javascript" is not https`, errorLine(e, exitFailed))
}
