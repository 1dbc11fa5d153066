package host

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/conduitmcp/conduit"
)

// Resource is a resource of one server.
type Resource struct {
	conduit.Resource
	Server string `json:"server"`
}

// Prompt is a prompt of one server, its Name namespaced as for tools.
type Prompt struct {
	conduit.Prompt
	Server       string `json:"server"`
	ServerPrompt string `json:"serverPrompt"`
}

// Resources lists the resources of every ready server that offers them,
// asking each now (they are not cached). A server whose listing fails is
// left out, and its error joined to the one returned.
func (h *Host) Resources(ctx context.Context) ([]Resource, error) {
	return collect(ctx, h, "resources", func(c *conduit.Client, server string) ([]Resource, error) {
		list, err := c.ListResources(ctx)
		out := make([]Resource, len(list))
		for i, r := range list {
			out[i] = Resource{Resource: r, Server: server}
		}
		return out, err
	})
}

// Prompts lists the prompts of every ready server that offers them, as
// Resources does.
func (h *Host) Prompts(ctx context.Context) ([]Prompt, error) {
	return collect(ctx, h, "prompts", func(c *conduit.Client, server string) ([]Prompt, error) {
		list, err := c.ListPrompts(ctx)
		out := make([]Prompt, len(list))
		for i, p := range list {
			out[i] = Prompt{Prompt: p, Server: server, ServerPrompt: p.Name}
			out[i].Name = server + h.opts.Separator + p.Name
		}
		return out, err
	})
}

// collect calls list on the client of every ready server whose
// capabilities name capability, in the order of their names.
func collect[T any](ctx context.Context, h *Host, capability string, list func(*conduit.Client, string) ([]T, error)) ([]T, error) {
	h.mu.Lock()
	clients := map[string]*conduit.Client{}
	for name, e := range h.servers {
		if e.client != nil && hasCapability(e.client.ServerCapabilities(), capability) {
			clients[name] = e.client
		}
	}
	h.mu.Unlock()
	var all []T
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(clients)) {
		items, err := list(clients[name], name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		all = append(all, items...)
	}
	return all, errors.Join(errs...)
}
