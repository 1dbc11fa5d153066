package host

import (
	"context"

	"github.com/conduitmcp/conduit"
)

// Complete asks server for completions (conduit.Client.Complete), waiting
// for it as CallTool does. p.Ref names the prompt by its name on the server.
func (h *Host) Complete(ctx context.Context, server string, p conduit.CompleteParams, opts ...conduit.CallOption) (*conduit.CompleteResult, error) {
	const method = "completion/complete"
	e, c, err := h.ready(ctx, server, method)
	if err != nil {
		return nil, err
	}
	res, err := c.Complete(ctx, p, opts...)
	if err != nil {
		return nil, h.explain(ctx, server, e, c, method, err)
	}
	return res, nil
}

// SubscribeResource subscribes to uri on server (conduit.Client.Subscribe), waiting
// for it as CallTool does. A server restarted since has lost it.
func (h *Host) SubscribeResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) error {
	return h.forward(ctx, server, "resources/subscribe", func(c *conduit.Client) error { return c.Subscribe(ctx, uri, opts...) })
}

// UnsubscribeResource ends a subscription of SubscribeResource.
func (h *Host) UnsubscribeResource(ctx context.Context, server, uri string, opts ...conduit.CallOption) error {
	return h.forward(ctx, server, "resources/unsubscribe", func(c *conduit.Client) error { return c.Unsubscribe(ctx, uri, opts...) })
}

// SetLogLevel sets the log level of server (conduit.Client.SetLogLevel),
// waiting for it as CallTool does. A server restarted since has lost it.
func (h *Host) SetLogLevel(ctx context.Context, server, level string, opts ...conduit.CallOption) error {
	if err := h.forward(ctx, server, "logging/setLevel", func(c *conduit.Client) error { return c.SetLogLevel(ctx, level, opts...) }); err != nil {
		return err
	}
	h.variantsLevel(ctx, server, level)
	return nil
}

func (h *Host) forward(ctx context.Context, server, method string, do func(*conduit.Client) error) error {
	e, c, err := h.ready(ctx, server, method)
	if err != nil {
		return err
	}
	if err := do(c); err != nil {
		return h.explain(ctx, server, e, c, method, err)
	}
	return nil
}
