// Package era knows the protocol revisions: which versions each era has,
// how a client's capabilities are derived from its handler in each
// revision's exact shape, and how a legacy initialize is offered and checked.
//
// The root package and the actors use it; a host does not need to import it
// (conduit.Capabilities says what a handler set advertises).
package era

import (
	"fmt"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/messages"
)

// LegacyVersions are the legacy revisions Conduit speaks, newest first; the
// first is the one offered in initialize. A server may answer with any of
// them; what an older one lacks is then neither offered nor accepted (see
// AtLeast and docs/protocol.md).
var LegacyVersions = []string{messages.Version20251125, messages.Version20250618, messages.Version20250326, messages.Version20241105}

// AtLeast reports whether version is min or a later revision. Revisions
// are dates written YYYY-MM-DD, so they order as strings; "" (not yet
// negotiated) is earlier than every revision.
func AtLeast(version, min string) bool { return version >= min }

// ModernVersions are the modern revisions Conduit speaks, newest first.
var ModernVersions = []string{messages.Version20260728}

// Of returns the era of a version, and false when Conduit does not speak it.
func Of(version string) (messages.Era, bool) {
	switch {
	case slices.Contains(LegacyVersions, version):
		return messages.EraLegacy, true
	case slices.Contains(ModernVersions, version):
		return messages.EraModern, true
	}
	return "", false
}

// Declared is what a client declares it can do, derived once from its
// handler and options. It decides both the advertised capabilities and
// which server requests are refused before any callback.
type Declared struct {
	Sampling        bool
	SamplingTools   bool // sampling.tools (2025-11-25+)
	SamplingContext bool // sampling.context (2025-11-25+)
	ElicitModes     []string
	Roots           bool
	// Tasks: the client runs task-augmented tools/call (Options.Tasks).
	// In 2025-11-25 it declares the tasks capability; in the modern era
	// the tasks extension (ModernCapabilities).
	Tasks bool
}

// Declare derives a Declared from a handler set. samplingContext is the
// option that allows includeContext other than "none". Unknown and repeated
// elicitation modes are ignored; none declared means form only.
func Declare(h messages.Handlers, samplingContext bool) Declared {
	var d Declared
	if h.Sampling != nil {
		d.Sampling = true
		d.SamplingContext = samplingContext
		d.SamplingTools = h.SamplingTools
	}
	if h.Elicitation != nil {
		var modes []string
		for _, mode := range h.ElicitationModes {
			if (mode == messages.ModeForm || mode == messages.ModeURL) && !slices.Contains(modes, mode) {
				modes = append(modes, mode)
			}
		}
		if len(modes) == 0 {
			modes = []string{messages.ModeForm}
		}
		d.ElicitModes = modes
	}
	d.Roots = h.Roots != nil
	return d
}

// Elicitation reports whether elicitation is declared at all in version.
func (d Declared) Elicitation(version string) bool {
	return len(d.ModesIn(version)) > 0
}

// ModesIn returns the declared elicitation modes that exist in version:
// 2025-06-18 has form mode only, and the revisions before it have no
// elicitation at all.
func (d Declared) ModesIn(version string) []string {
	if known(version) && !AtLeast(version, messages.Version20250618) {
		return nil
	}
	if version == messages.Version20250618 {
		if slices.Contains(d.ElicitModes, messages.ModeForm) {
			return []string{messages.ModeForm}
		}
		return nil
	}
	return d.ElicitModes
}

// Allows reports whether a server request for method was declared: the
// capability check that runs before any callback.
func (d Declared) Allows(method, version string) bool {
	switch method {
	case messages.MethodCreateMessage:
		return d.Sampling
	case messages.MethodElicit:
		return d.Elicitation(version)
	case messages.MethodListRoots:
		return d.Roots
	}
	return false
}

// Capabilities returns ClientCapabilities in version's exact shape. With
// nothing declared it is {}.
func (d Declared) Capabilities(version string) map[string]any {
	caps := map[string]any{}
	// sampling.context and sampling.tools, and the elicitation modes, are
	// 2025-11-25's; an unknown version gets the newest shape.
	newer := !known(version) || AtLeast(version, messages.Version20251125)
	if d.Sampling {
		s := map[string]any{}
		if newer && d.SamplingContext {
			s["context"] = map[string]any{}
		}
		if newer && d.SamplingTools {
			s["tools"] = map[string]any{}
		}
		caps["sampling"] = s
	}
	if modes := d.ModesIn(version); len(modes) > 0 {
		e := map[string]any{}
		if newer {
			for _, m := range modes {
				e[m] = map[string]any{}
			}
		}
		caps["elicitation"] = e
	}
	if d.Roots {
		// A legacy client tells the server with
		// notifications/roots/list_changed (Client.RootsChanged); the
		// modern era has no listChanged (a server asks each time).
		r := map[string]any{}
		if e, _ := Of(version); e == messages.EraLegacy {
			r["listChanged"] = true
		}
		caps["roots"] = r
	}
	if d.Tasks && version == messages.Version20251125 {
		// The client only sends task-augmented requests: it hosts no task
		// (no tasks/list, no tasks/cancel, no augmentable request types;
		// the requests list is exhaustive), so the capability is empty.
		caps["tasks"] = map[string]any{}
	}
	return caps
}

// known reports whether version is a revision Conduit speaks.
func known(version string) bool { _, ok := Of(version); return ok }

// StructuredContent reports whether version has structured tool output
// (structuredContent on results, outputSchema on tools): 2025-06-18 and
// later. An unknown version is taken to have it.
func StructuredContent(version string) bool {
	return !known(version) || AtLeast(version, messages.Version20250618)
}

// InitializeParams builds the legacy initialize request's params, offering
// version (LegacyVersions[0] when empty).
func InitializeParams(d Declared, info messages.Implementation, version string) messages.InitializeParams {
	if version == "" {
		version = LegacyVersions[0]
	}
	return messages.InitializeParams{ProtocolVersion: version, Capabilities: d.Capabilities(version), ClientInfo: info}
}

// CheckInitialize accepts the server's answer when it names a legacy
// version Conduit speaks, and otherwise returns an error naming both sides'
// versions.
func CheckInitialize(res *messages.InitializeResult, offered string) error {
	if era, ok := Of(res.ProtocolVersion); ok && era == messages.EraLegacy {
		return nil
	}
	return fmt.Errorf("server answered initialize with protocol version %q; Conduit offered %s and accepts %s",
		res.ProtocolVersion, offered, strings.Join(LegacyVersions, ", "))
}
