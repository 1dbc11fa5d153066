package gateway

import (
	"context"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// Upstream is what a gateway serves: its servers' catalog and the requests
// it forwards to them. A *host.Host (this process's servers) is one; a
// cluster's servers, each held by one member (package cluster), are
// another. Its methods are safe for concurrent use.
type Upstream interface {
	Tools() []host.Tool
	CatalogChanged() <-chan struct{}
	Status() []host.Status
	Prompts(ctx context.Context) ([]host.Prompt, error)
	Resources(ctx context.Context) ([]host.Resource, error)
	ResourceTemplates(ctx context.Context) ([]host.ResourceTemplate, error)
	CallTool(ctx context.Context, server, tool string, args any, opts ...conduit.CallOption) (*conduit.CallToolResult, error)
	GetPrompt(ctx context.Context, server, name string, args map[string]string, opts ...conduit.CallOption) (*conduit.GetPromptResult, error)
	ReadResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) (*conduit.ReadResourceResult, error)
	Complete(ctx context.Context, server string, p conduit.CompleteParams, opts ...conduit.CallOption) (*conduit.CompleteResult, error)
	SubscribeResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) error
	UnsubscribeResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) error
	SetLogLevel(ctx context.Context, server, level string, opts ...conduit.CallOption) error
	Close() error
}

var _ Upstream = (*host.Host)(nil)

// Gating is implemented by an Upstream that runs the gate of each gated
// server (Gated, decision 37) itself, where the server runs, for the calls
// of every gateway that reaches it (package cluster: the gate lives with
// the server's grain, so that calls through every member queue at one).
// A gateway on such an Upstream gates none itself; it says in its calls'
// assigns which parks its input rounds on a modern client (AssignParks).
type Gating interface {
	GatesServers() bool
}

// AssignParks is the assign (true) of an upstream call whose downstream
// client is modern: its input rounds park until the client's retry, and a
// gate may cancel it once another call has waited ParkGrace (decision 38).
const AssignParks = "conduit.gateway.parks"
