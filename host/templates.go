package host

import (
	"context"

	"github.com/conduitmcp/conduit"
)

// ResourceTemplate is a resource template of one server.
type ResourceTemplate struct {
	conduit.ResourceTemplate
	Server string `json:"server"`
}

// ResourceTemplates lists the resource templates of every ready server
// that offers resources, as Resources does.
func (h *Host) ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error) {
	return collect(ctx, h, "resources", func(c *conduit.Client, server string) ([]ResourceTemplate, error) {
		list, err := c.ListResourceTemplates(ctx)
		out := make([]ResourceTemplate, len(list))
		for i, t := range list {
			out[i] = ResourceTemplate{ResourceTemplate: t, Server: server}
		}
		return out, err
	})
}
