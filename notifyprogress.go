package conduit

import (
	"context"

	"github.com/conduitmcp/conduit/actors"
)

// NotifyProgress tells the server how far an input handler (sampling,
// elicitation, roots) has got with the request it is answering: it sends
// notifications/progress under the progressToken the server put in that
// request's _meta. Call it with the handler's own ctx. progress must grow
// with each report; total is the amount progress reaches at the end (0:
// unknown, not sent) and message a human-readable note ("": none).
//
// It fails with KindUsage when ctx is not an input handler's, when the
// request carried no progressToken, when progress does not grow, and in
// the modern era: there input requests come embedded in a result, and the
// specification (2026-07-28) gives progress one direction only, server to
// client, so there is no channel back. Once the request has ended (ctx
// done) it fails with KindCancelled or KindTimeout and sends nothing.
func NotifyProgress(ctx context.Context, progress, total float64, message string) error {
	return actors.NotifyProgress(ctx, progress, total, message)
}
