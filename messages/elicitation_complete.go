package messages

import "fmt"

// ElicitationComplete is a server's notifications/elicitation/complete
// (2025-11-25), for Handlers.ElicitationComplete: the out-of-band
// interaction of a URL elicitation is over.
type ElicitationComplete struct {
	// ElicitationID is the id the server gave the URL elicitation.
	ElicitationID string
	// Request is the URL elicitation it completes, as the client was asked
	// for it: by an elicitation/create (as the elicitation handler got it)
	// or in the error of a call (URLElicitationRequiredError).
	Request *ElicitationRequest
}

// URLElicitationRequiredError is what a call that failed with -32042
// (2025-11-25: the server needs the user to visit URLs first) carries: the
// Cause of its *RPCError, found with errors.As; errors.Is(err,
// ErrURLElicitationRequired) holds as well. Show each URL with its verdict
// (Host, IDN, OriginMismatch …, the same checks as an elicitation/create
// of mode "url"), let the user consent, and call again later (for instance
// once Handlers.ElicitationComplete has reported each one complete).
type URLElicitationRequiredError struct {
	// Elicitations are the URL elicitations the server named that passed
	// the URL guard, in its order.
	Elicitations []*ElicitationRequest
	// Refused are why each other entry was left out (a URL the guard
	// refuses, a missing elicitationId, data that is not the
	// specification's), counted in Stats.Refused.
	Refused []error
}

func (e *URLElicitationRequiredError) Error() string {
	s := fmt.Sprintf("the server requires %d URL elicitation(s) first", len(e.Elicitations))
	if len(e.Refused) > 0 {
		s += fmt.Sprintf(" (%d refused: %v)", len(e.Refused), e.Refused[0])
	}
	return s
}
