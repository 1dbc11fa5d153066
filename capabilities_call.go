package conduit

import (
	"context"
	"fmt"
	"slices"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/internal/tracing"
	"github.com/conduitmcp/conduit/messages"
)

// WithCapabilities narrows the client capabilities one call declares to
// those named, by their paths as [Capabilities] names them: "sampling",
// "sampling.tools", "sampling.context", "elicitation.form",
// "elicitation.url", "roots" and "roots.listChanged" (a sub-capability
// names its parent too). A capability the client does not declare stays
// off: the option narrows, it never widens. It is for a client that calls
// on behalf of another, as a gateway does for its downstream clients.
//
// In the modern era the call's _meta io.modelcontextprotocol/clientCapabilities
// (every round's) carries only what is left, so the server sees what the
// named capabilities allow (and may answer -32021 for one it needs), and
// an input request of the call for a method left out is refused as
// undeclared, as for a capability the client never had. In the legacy
// era the capabilities are the session's, told once at initialize: the
// option changes nothing on the wire, and the server's input requests
// reach the handlers as they would without it (a handler that must refuse
// them finds the call's assigns, WithAssigns, in its RequestContext).
// An unknown name fails the call with KindUsage before anything is sent.
func WithCapabilities(names ...string) CallOption {
	return func(o *callOptions) {
		var c narrowed
		for _, n := range names {
			switch n {
			case "sampling":
				c.sampling = true
			case "sampling.tools":
				c.sampling, c.samplingTools = true, true
			case "sampling.context":
				c.sampling, c.samplingContext = true, true
			case "elicitation.form":
				c.modes = append(c.modes, messages.ModeForm)
			case "elicitation.url":
				c.modes = append(c.modes, messages.ModeURL)
			case "roots", "roots.listChanged":
				c.roots = true
			default:
				if o.usage == nil {
					o.usage = fmt.Errorf("WithCapabilities: unknown capability %q (want sampling, sampling.tools, sampling.context, elicitation.form, elicitation.url, roots or roots.listChanged)", n)
				}
			}
		}
		o.capabilities = &c
	}
}

// CapabilitiesOf is what opts narrow a call's capabilities to
// (WithCapabilities; the last one wins), by their paths in a fixed order
// (sampling, sampling.tools, sampling.context, elicitation.form,
// elicitation.url, roots; a sub-capability's parent included, "roots" for
// "roots.listChanged"); ok is false when opts hold no WithCapabilities or
// it names an unknown capability. For a layer that forwards a call
// elsewhere and must make it declare there what it declares here (package
// cluster), or pick a connection told exactly that (package host).
func CapabilitiesOf(opts ...CallOption) (names []string, ok bool) {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.capabilities == nil || o.usage != nil {
		return nil, false
	}
	return o.capabilities.names(), true
}

// names are c's paths, in CapabilitiesOf's order; never nil.
func (c *narrowed) names() []string {
	out := []string{}
	if c.sampling {
		out = append(out, "sampling")
		if c.samplingTools {
			out = append(out, "sampling.tools")
		}
		if c.samplingContext {
			out = append(out, "sampling.context")
		}
	}
	for _, m := range []string{messages.ModeForm, messages.ModeURL} {
		if slices.Contains(c.modes, m) {
			out = append(out, "elicitation."+m)
		}
	}
	if c.roots {
		out = append(out, "roots")
	}
	return out
}

// declareOnly is d narrowed to names (Options.DeclareOnly), d itself when
// names is nil.
func declareOnly(names []string, d era.Declared) (era.Declared, error) {
	if names == nil {
		return d, nil
	}
	var o callOptions
	WithCapabilities(names...)(&o)
	if o.usage != nil {
		return d, &Error{Kind: KindUsage, Message: "Options.DeclareOnly", Err: o.usage}
	}
	return o.capabilities.of(d), nil
}

// narrowed is what WithCapabilities leaves of the client's capabilities.
type narrowed struct {
	sampling, samplingTools, samplingContext, roots bool
	modes                                           []string
}

// of is d narrowed to c; the tasks extension is not a capability c names
// and stays as d has it.
func (c *narrowed) of(d era.Declared) era.Declared {
	out := era.Declared{Tasks: d.Tasks}
	out.Sampling = d.Sampling && c.sampling
	out.SamplingTools = out.Sampling && d.SamplingTools && c.samplingTools
	out.SamplingContext = out.Sampling && d.SamplingContext && c.samplingContext
	for _, m := range d.ElicitModes {
		if slices.Contains(c.modes, m) {
			out.ElicitModes = append(out.ElicitModes, m)
		}
	}
	out.Roots = d.Roots && c.roots
	return out
}

// callMeta is requestMeta for a call made WithCapabilities or
// WithLogLevel: the capabilities it declares (narrowing *declared, the
// call's, to them) and the level it asks for, over the client's.
func (c *Client) callMeta(ctx context.Context, version string, o callOptions, declared *era.Declared) func() ([]era.Member, error) {
	tc := tracing.Members(ctx)
	if o.capabilities != nil {
		*declared = o.capabilities.of(*declared)
	}
	d := *declared
	return func() ([]era.Member, error) {
		var m *era.Meta
		if o.capabilities == nil {
			var err error
			if m, err = c.sessionMeta(version); err != nil {
				return nil, err
			}
		} else {
			nm, err := era.NewMeta(version, d.ModernCapabilities(version), Implementation{Name: c.opts.Name, Version: c.opts.Version})
			if err != nil {
				return nil, err
			}
			m = &nm
		}
		level := ""
		if o.logLevel != nil {
			level = *o.logLevel
		} else if l := c.logLevel.Load(); l != nil {
			level = *l
		}
		out, err := m.Request(level, o.progressToken)
		if err != nil || tc == nil {
			return out, err
		}
		return append(out, tc...), nil
	}
}
