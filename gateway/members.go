package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Members make a gateway one member of several that serve the same
// endpoint (package cluster): a modern client's retry may reach any of
// them. Each requestState a member issues is sealed under a key every
// member shares and names the member that holds its pending call; a retry
// another member receives is handed to that one. Its methods are safe for
// concurrent use.
type Members interface {
	// StateKey is the requestState MAC key every member shares.
	StateKey() []byte
	// Self is this member's name in the states it seals.
	Self() string
	// Resume hands p, a retry whose requestState member sealed, to that
	// member (its Gateway.Resume) and returns its answer. A refusal of
	// the member's is a *jsonrpc.Error, passed on as it is; any other
	// error (the member is gone, or was lost before it answered) means
	// the pending call is lost with it: the retry is refused as expired.
	Resume(ctx context.Context, member string, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)
}

// Resume serves p, a modern client's retry carrying a requestState this
// gateway issued, as if it had come to this gateway: the answer is the
// call's next input_required round or its result. A refused state is a
// *jsonrpc.Error (-32602). Another member's Members.Resume reaches it.
func (g *Gateway) Resume(ctx context.Context, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	pc, err := g.relay.resume(p.RequestState, fmt.Sprintf("tool %q", p.Name), p.InputResponses)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return toolOutcome(g.await(ctx, pc))
}

// resumeElsewhere hands p, a tools/call retry, to the member that issued its
// requestState when that is another member; elsewhere is false when the
// retry is this gateway's to serve (its own state, or no Members). A state
// that does not open is refused here.
func (g *Gateway) resumeElsewhere(ctx context.Context, p *mcp.CallToolParamsRaw) (elsewhere bool, res *mcp.CallToolResult, err error) {
	_, member, err := g.relay.open(p.RequestState)
	if err != nil {
		return true, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if g.members == nil || member == "" || member == g.relay.self {
		return false, nil, nil
	}
	res, err = g.members.Resume(ctx, member, p)
	var je *jsonrpc.Error
	if err != nil && !errors.As(err, &je) {
		g.relay.lostStates.Add(1)
		g.logger.Warn("gateway: a retry's pending call was lost with the member that held it; refused as expired",
			"member", member, "err", err, "total", g.relay.lostStates.Load())
		return true, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: errStateExpired.Error()}
	}
	return true, res, err
}
