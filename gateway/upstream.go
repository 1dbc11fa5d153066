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
