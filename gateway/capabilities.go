//lint:file-ignore SA1019 sampling and roots are forwarded: deprecated in 2026-07-28 (SEP-2577), not gone

package gateway

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
)

// declaredAs is the call option that makes an upstream call declare what
// the downstream client c declared (conduit.WithCapabilities): a modern
// upstream sees it in the call's _meta; a legacy one was told Conduit's at
// initialize, and the relay refuses what c did not declare (route).
func declaredAs(c *mcp.ClientCapabilities) conduit.CallOption {
	var names []string
	if c != nil {
		if s := c.Sampling; s != nil {
			names = append(names, "sampling")
			if s.Tools != nil {
				names = append(names, "sampling.tools")
			}
			if s.Context != nil {
				names = append(names, "sampling.context")
			}
		}
		if e := c.Elicitation; e != nil {
			if e.Form != nil || e.URL == nil {
				names = append(names, "elicitation.form")
			}
			if e.URL != nil {
				names = append(names, "elicitation.url")
			}
		}
		if c.RootsV2 != nil {
			names = append(names, "roots")
		}
	}
	return conduit.WithCapabilities(names...)
}
