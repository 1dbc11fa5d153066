package host

import (
	"context"

	"github.com/conduitmcp/conduit"
)

// CatalogChanged returns a channel that receives a value when the catalog
// may have changed: a server changed state, or its tools were listed
// again. Changes coalesce (one slot): a reader that is busy gets one value
// for several. It is meant for one reader (a gateway), which then reads
// Tools, Prompts and Resources anew.
func (h *Host) CatalogChanged() <-chan struct{} { return h.catalog }

// catalogChanged signals CatalogChanged without blocking. Called with mu
// held.
func (h *Host) catalogChanged() {
	select {
	case h.catalog <- struct{}{}:
	default: // one is pending already
	}
}

// GetPrompt gets prompt name (its name on the server) from server, waiting
// for it as CallTool does.
func (h *Host) GetPrompt(ctx context.Context, server, name string, args map[string]string, opts ...conduit.CallOption) (*conduit.GetPromptResult, error) {
	const method = "prompts/get"
	_, e, c, done, err := h.route(ctx, server, method, "", opts)
	if err != nil {
		return nil, err
	}
	defer done()
	res, err := c.GetPrompt(ctx, name, args, opts...)
	if err != nil {
		return nil, h.explain(ctx, server, e, c, method, err)
	}
	return res, nil
}
