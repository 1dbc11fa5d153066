package conduit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
)

// Handlers is [messages.Handlers], a handler set: one typed function per
// kind of input, the notification hooks and the capability flags. Set
// [Options].Handlers to one, or [Options].Handler to a value implementing
// the interfaces below. A nil function is a kind not implemented: not
// advertised, and refused (-32601) before any callback runs. Its fields:
//
//   - Sampling func(ctx, *[SamplingRequest]) (*[CreateMessageResult], error):
//     sampling/createMessage, the approval point for sampling;
//     SamplingTools bool: it can run the tools a server offers (declares
//     sampling.tools).
//   - Elicitation func(ctx, *[ElicitationRequest]) (*[ElicitResult], error):
//     elicitation/create; ElicitationModes []string: the modes it handles
//     ([ModeForm], [ModeURL]; nil means form only).
//   - Roots func(ctx, *[RootsRequest]) (*[ListRootsResult], error): roots/list.
//   - Notification func(ctx, [NotificationContext], *[Notification]): the server's
//     notifications other than log entries, one at a time in arrival order.
//   - Log func(ctx, [NotificationContext], *[LoggingMessage]): the server's
//     log entries (notifications/message), sanitised, interleaved with them.
//   - ElicitationComplete func(ctx, [NotificationContext], *[ElicitationComplete]):
//     a URL elicitation the client was asked for is complete (2025-11-25).
//
// See [messages.Handlers] for each field's full contract, and the example
// below.
type Handlers = messages.Handlers

// SamplingHandler answers sampling/createMessage; it is the approval point
// for sampling. Implementing it advertises "sampling".
type SamplingHandler interface {
	HandleSampling(ctx context.Context, req *SamplingRequest) (*CreateMessageResult, error)
}

// SamplingToolUser is implemented by sampling handlers that can run the
// tools a server offers in a sampling request; only then is sampling.tools
// declared (2025-11-25 and later).
type SamplingToolUser interface {
	UsesSamplingTools() bool
}

// ElicitationHandler answers elicitation/create. Implementing it advertises
// "elicitation" with the modes of ElicitationModes (form only by default).
// A user who declines is a result ({Action: "decline"}), not an error.
type ElicitationHandler interface {
	HandleElicitation(ctx context.Context, req *ElicitationRequest) (*ElicitResult, error)
}

// ElicitationModer declares the elicitation modes a handler supports
// ("form", "url"). Without it, a handler supports form mode only.
type ElicitationModer interface {
	ElicitationModes() []string
}

// RootsLister answers roots/list. Implementing it advertises "roots".
type RootsLister interface {
	ListRoots(ctx context.Context, req *RootsRequest) (*ListRootsResult, error)
}

// NotificationHandler receives server notifications other than log
// entries, one at a time in arrival order. A call returns only once the
// notifications and log entries the server sent before its answer have
// been handled, so a callback must not wait for a call of its own client
// except one made with the callback's ctx (that one does not wait for
// the notifications behind the callback).
type NotificationHandler interface {
	HandleNotification(ctx context.Context, nc NotificationContext, n *Notification)
}

// LogHandler receives sanitised server log entries (notifications/message),
// one at a time in arrival order, interleaved with notifications.
type LogHandler interface {
	HandleLog(ctx context.Context, nc NotificationContext, entry *LoggingMessage)
}

// ErrHandler reports a handler value that cannot be what its author meant:
// a method with a handler interface's name but another signature, methods
// with pointer receivers on a value passed by value, or (when it
// implements none of the interfaces) a method named almost like one.
var ErrHandler = errors.New("conduit: handler")

// handlerInterfaces are the interfaces HandlersOf looks for, by their one
// method's name.
var handlerInterfaces = []struct {
	name, method string
	typ          reflect.Type
}{
	{"SamplingHandler", "HandleSampling", reflect.TypeFor[SamplingHandler]()},
	{"SamplingToolUser", "UsesSamplingTools", reflect.TypeFor[SamplingToolUser]()},
	{"ElicitationHandler", "HandleElicitation", reflect.TypeFor[ElicitationHandler]()},
	{"ElicitationModer", "ElicitationModes", reflect.TypeFor[ElicitationModer]()},
	{"RootsLister", "ListRoots", reflect.TypeFor[RootsLister]()},
	{"NotificationHandler", "HandleNotification", reflect.TypeFor[NotificationHandler]()},
	{"LogHandler", "HandleLog", reflect.TypeFor[LogHandler]()},
	{"ProgressHandler", "HandleProgress", reflect.TypeFor[ProgressHandler]()},
	{"ElicitationCompleteHandler", "HandleElicitationComplete", reflect.TypeFor[ElicitationCompleteHandler]()},
	{"ToolsChangedHandler", "HandleToolsChanged", reflect.TypeFor[ToolsChangedHandler]()},
	{"PromptsChangedHandler", "HandlePromptsChanged", reflect.TypeFor[PromptsChangedHandler]()},
	{"ResourcesChangedHandler", "HandleResourcesChanged", reflect.TypeFor[ResourcesChangedHandler]()},
	{"ResourceUpdatedHandler", "HandleResourceUpdated", reflect.TypeFor[ResourceUpdatedHandler]()},
	{"ListRefresher", "RefreshDelay", reflect.TypeFor[ListRefresher]()},
}

// HandlersOf adapts v, a value implementing any of SamplingHandler
// (+ SamplingToolUser), ElicitationHandler (+ ElicitationModer),
// RootsLister, NotificationHandler, LogHandler, ProgressHandler,
// ElicitationCompleteHandler and the change hooks (ToolsChangedHandler …
// ResourceUpdatedHandler, ListRefresher), to a
// handler set. A nil v
// is the empty set. The error (matching ErrHandler) names every method that
// looks meant as a handler method but is not one, so a typo or a pointer
// receiver never silently advertises less.
func HandlersOf(v any) (Handlers, error) {
	var h Handlers
	if v == nil {
		return h, nil
	}
	if s, ok := v.(SamplingHandler); ok {
		h.Sampling = s.HandleSampling
		if u, ok := v.(SamplingToolUser); ok {
			h.SamplingTools = u.UsesSamplingTools()
		}
	}
	if e, ok := v.(ElicitationHandler); ok {
		h.Elicitation = e.HandleElicitation
		if m, ok := v.(ElicitationModer); ok {
			h.ElicitationModes = m.ElicitationModes()
		}
	}
	if r, ok := v.(RootsLister); ok {
		h.Roots = r.ListRoots
	}
	if n, ok := v.(NotificationHandler); ok {
		h.Notification = n.HandleNotification
	}
	if l, ok := v.(LogHandler); ok {
		h.Log = l.HandleLog
	}
	if p, ok := v.(ProgressHandler); ok {
		h.Progress = p.HandleProgress
	}
	if e, ok := v.(ElicitationCompleteHandler); ok {
		h.ElicitationComplete = e.HandleElicitationComplete
	}
	changeHooksOf(v, &h)
	if problems := diagnose(reflect.TypeOf(v)); len(problems) > 0 {
		return h, fmt.Errorf("%w of type %s: %s", ErrHandler, reflect.TypeOf(v), strings.Join(problems, "; "))
	}
	return h, nil
}

// diagnose lists what in t looks meant to implement a handler interface
// but does not.
func diagnose(t reflect.Type) []string {
	var problems []string
	implementsAny := false
	// pt has every method of t and of *t: a value's methods and those of
	// its pointer, or a pointer's.
	pt := reflect.PointerTo(t)
	if t.Kind() == reflect.Pointer {
		pt = t
	}
	for _, hi := range handlerInterfaces {
		if t.Implements(hi.typ) {
			implementsAny = true
			continue
		}
		if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(hi.typ) {
			problems = append(problems, fmt.Sprintf("%s has a pointer receiver: pass a *%s to implement %s", hi.method, t, hi.name))
			continue
		}
		if m, ok := pt.MethodByName(hi.method); ok {
			want, _ := hi.typ.MethodByName(hi.method)
			problems = append(problems, fmt.Sprintf("%s has signature %s, %s needs %s", hi.method, signature(m.Type, 1), hi.name, signature(want.Type, 0)))
		}
	}
	if implementsAny {
		return problems
	}
	for i := range pt.NumMethod() {
		name := pt.Method(i).Name
		for _, hi := range handlerInterfaces {
			if name != hi.method && nearly(name, hi.method) {
				problems = append(problems, fmt.Sprintf("method %s is not %s (%s)", name, hi.method, hi.name))
			}
		}
	}
	return problems
}

// signature prints a func type without its first skip inputs (the
// receiver of a method value).
func signature(f reflect.Type, skip int) string {
	var in, out []string
	for i := skip; i < f.NumIn(); i++ {
		in = append(in, f.In(i).String())
	}
	for i := range f.NumOut() {
		out = append(out, f.Out(i).String())
	}
	s := "func(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
	case 1:
		s += " " + out[0]
	default:
		s += " (" + strings.Join(out, ", ") + ")"
	}
	return s
}

// nearly reports a likely misspelling: equal ignoring case, or at most two
// single-character edits apart.
func nearly(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	if d := len(a) - len(b); d > 2 || d < -2 {
		return false
	}
	return editDistance(a, b) <= 2
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Capability is one capability a client may advertise, whether it does,
// and why.
type Capability struct {
	// Name is the capability's path in clientCapabilities: "sampling",
	// "sampling.tools", "sampling.context", "elicitation.form",
	// "elicitation.url", "roots" or "roots.listChanged".
	Name       string
	Advertised bool
	Why        string
}

// Capabilities reports what a client with opts advertises, capability by
// capability, and why, in the newest legacy revision (2025-11-25; in
// 2025-06-18 sampling has no sub-capabilities and elicitation no url mode).
// It fails like Connect does on a handler that cannot be what was meant.
func Capabilities(opts Options) ([]Capability, error) {
	h, err := opts.handlers()
	if err != nil {
		return nil, err
	}
	source := "Options.Handlers"
	if opts.Handler != nil {
		source = fmt.Sprintf("Options.Handler (%T)", opts.Handler)
	}
	d := era.Declare(h, opts.Sampling.Context)
	told, err := declareOnly(opts.DeclareOnly, d)
	if err != nil {
		return nil, err
	}
	set := func(ok bool, yes, no string) Capability {
		if ok {
			return Capability{Advertised: true, Why: yes}
		}
		return Capability{Why: no}
	}
	named := func(name string, c Capability) Capability { c.Name = name; return c }
	viaHandler := func(field, iface, method string) (string, string) {
		if opts.Handler != nil {
			return fmt.Sprintf("%s implements %s (%s)", source, iface, method),
				fmt.Sprintf("%s does not implement %s (%s)", source, iface, method)
		}
		return fmt.Sprintf("Options.Handlers.%s is set", field), fmt.Sprintf("Options.Handlers.%s is nil", field)
	}
	var out []Capability
	yes, no := viaHandler("Sampling", "SamplingHandler", "HandleSampling")
	out = append(out, named("sampling", set(d.Sampling, yes, no)))
	switch {
	case !d.Sampling:
		out = append(out, Capability{Name: "sampling.tools", Why: "sampling is not advertised"},
			Capability{Name: "sampling.context", Why: "sampling is not advertised"})
	default:
		toolsYes, toolsNo := "Options.Handlers.SamplingTools is true", "Options.Handlers.SamplingTools is false"
		if opts.Handler != nil {
			toolsYes, toolsNo = source+" UsesSamplingTools() is true", source+" does not implement SamplingToolUser with UsesSamplingTools() true"
		}
		out = append(out, named("sampling.tools", set(d.SamplingTools, toolsYes, toolsNo)),
			named("sampling.context", set(d.SamplingContext, "Options.Sampling.Context is true", "Options.Sampling.Context is false: includeContext is coerced to \"none\"")))
	}
	yes, no = viaHandler("Elicitation", "ElicitationHandler", "HandleElicitation")
	for _, mode := range []string{messages.ModeForm, messages.ModeURL} {
		c := Capability{Name: "elicitation." + mode}
		switch {
		case d.ElicitModes == nil:
			c.Why = no
		case slices.Contains(d.ElicitModes, mode):
			c.Advertised, c.Why = true, yes+"; mode "+mode+" declared"
		default:
			c.Why = yes + "; mode " + mode + " not declared"
		}
		switch {
		case d.ElicitModes == nil:
		case len(h.ElicitationModes) == 0:
			c.Why += " (no modes given: form only)"
		case !slices.Contains(h.ElicitationModes, messages.ModeForm) && !slices.Contains(h.ElicitationModes, messages.ModeURL):
			c.Why += " (no known mode given: form only)"
		}
		out = append(out, c)
	}
	yes, no = viaHandler("Roots", "RootsLister", "ListRoots")
	out = append(out, named("roots", set(d.Roots, yes, no)),
		named("roots.listChanged", set(d.Roots, "roots are advertised: Client.RootsChanged tells the server", "roots are not advertised")))
	if opts.DeclareOnly != nil {
		// What the handlers allow, less what DeclareOnly leaves out.
		kept := (&narrowed{sampling: told.Sampling, samplingTools: told.SamplingTools, samplingContext: told.SamplingContext,
			modes: told.ElicitModes, roots: told.Roots}).names()
		for i, c := range out {
			name, _ := strings.CutSuffix(c.Name, ".listChanged")
			if c.Advertised && !slices.Contains(kept, name) {
				out[i] = Capability{Name: c.Name, Why: "Options.DeclareOnly leaves it out"}
			}
		}
	}
	return out, nil
}
