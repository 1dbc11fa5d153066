package conduit

import (
	"context"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/messages"
)

// AssignSession is the assign (WithAssigns) that names, as a string, the
// session a call is made for: a gateway's downstream session. The audit
// records of the call's input requests carry it (AuditRecord.Session).
const AssignSession = messages.AssignSession

// InputContext is the RequestContext of the input request (sampling,
// elicitation, roots) whose handler's ctx, or receiving middleware's, ctx
// is: a middleware that sees only the method and params learns the server
// and the call's assigns from it. It reports false for any other ctx.
func InputContext(ctx context.Context) (RequestContext, bool) {
	return actors.InputContext(ctx)
}
