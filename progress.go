package conduit

import (
	"context"

	"github.com/conduitmcp/conduit/messages"
)

// Progress is a server's notifications/progress, decoded for
// Handlers.Progress (messages.Progress):
//
//	Token    any      // the request's progressToken (WithProgressToken): a string, or an int64
//	Progress float64  // how far along it is
//	Total    *float64 // where Progress ends; nil when the server does not know
//	Message  string   // the server's description of the step, sanitised; "" when none
type Progress = messages.Progress

// ProgressHandler receives the server's notifications/progress decoded
// (Handlers.Progress), in arrival order with the other notifications;
// NotificationHandler then no longer receives them.
type ProgressHandler interface {
	HandleProgress(ctx context.Context, nc NotificationContext, p *Progress)
}
