package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/huh"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
)

// interactiveHandler asks the person at the terminal for every input
// request: forms field by field, consent for a URL, approval of a
// completion with a typed reply. It is used only when stdin is a terminal
// and no --answers file is given. Prompts are shown one at a time.
type interactiveHandler struct {
	samplingCommand samplingCommand // --sampling-command, --yes
	in              io.Reader
	out             io.Writer
	mu              chan struct{} // one prompt at a time
	wmu             sync.Mutex
	once            sync.Once

	roots          []conduit.Root
	rootsFromFlags bool
	handlerTimeout time.Duration // --handler-timeout, 0 for the defaults
	openURL        func(string) error
}

var _ interface {
	conduit.SamplingHandler
	conduit.ElicitationHandler
	conduit.ElicitationModer
	conduit.RootsLister
} = (*interactiveHandler)(nil)

func newInteractiveHandler(in io.Reader, out io.Writer, roots []conduit.Root, rootsFromFlags bool, handlerTimeout time.Duration) *interactiveHandler {
	return &interactiveHandler{in: in, out: out, mu: make(chan struct{}, 1), roots: roots, rootsFromFlags: rootsFromFlags, handlerTimeout: handlerTimeout, openURL: openInBrowser}
}

// interactiveHandlerDesc describes the handler in the demo's header.
const interactiveHandlerDesc = "interactive: you answer each request at this terminal\n(forms, URL consent, sampling approval; nothing is opened without your choice)"

func (h *interactiveHandler) printf(format string, args ...any) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	fmt.Fprintf(h.out, format, args...)
}

func (h *interactiveHandler) timeout(method string) time.Duration {
	switch {
	case h.handlerTimeout > 0:
		return h.handlerTimeout
	case method == messages.MethodElicit:
		return conduit.DefaultElicitationTimeout
	}
	return conduit.DefaultHandlerTimeout
}

// acquire waits for the terminal, or for ctx to end.
func (h *interactiveHandler) acquire(ctx context.Context) error {
	select {
	case h.mu <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *interactiveHandler) release() { <-h.mu }

// run shows a form until it is submitted, aborted (ctrl-c: errAborted) or
// ctx ends (the line saying why is printed, ctx's error returned).
func (h *interactiveHandler) run(ctx context.Context, started time.Time, timeout time.Duration, groups ...*huh.Group) error {
	f := huh.NewForm(groups...).WithInput(h.in).WithOutput(h.out).WithShowHelp(true)
	err := f.RunWithContext(ctx)
	if ctx.Err() != nil {
		h.printf("  prompt closed: %s\n", endedMessage(ctx, started, timeout))
		return ctx.Err()
	}
	if errors.Is(err, huh.ErrUserAborted) {
		return errAborted
	}
	return err
}

var errAborted = errors.New("aborted at the terminal")

// choose asks one question with a list of answers; the first is the
// default. Errors are run's.
func (h *interactiveHandler) choose(ctx context.Context, started time.Time, timeout time.Duration, title string, opts []huh.Option[string]) (string, error) {
	choice := opts[0].Value
	sel := huh.NewSelect[string]().Title(title).Options(opts...).Value(&choice)
	return choice, h.run(ctx, started, timeout, huh.NewGroup(sel))
}

func (h *interactiveHandler) who(rc messages.RequestContext) string {
	id := rc.ServerID
	if id == "" {
		id = "(unnamed server)"
	}
	return sanitize.Text(id, 60)
}

// ElicitationModes declares both modes.
func (h *interactiveHandler) ElicitationModes() []string {
	return []string{messages.ModeForm, messages.ModeURL}
}

// HandleElicitation asks for a form or for consent to a URL.
func (h *interactiveHandler) HandleElicitation(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	started := time.Now()
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	defer h.release()
	if r.Mode == messages.ModeURL {
		return h.askURL(ctx, started, r)
	}
	return h.askForm(ctx, started, r)
}

const (
	choiceFill    = "fill"
	choiceDecline = "decline"
	choiceCancel  = "cancel"
	choiceAccept  = "accept"
	choiceOpen    = "open"
	choiceReply   = "reply"
	choiceRefuse  = "refuse"
	choiceSend    = "send"
)

func (h *interactiveHandler) askForm(ctx context.Context, started time.Time, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	timeout := h.timeout(messages.MethodElicit)
	specs := fieldSpecs(r.Form)
	var b strings.Builder
	fmt.Fprintf(&b, "\n  ┌ The server %q (client %s) asks you to fill in a form\n", h.who(r.RequestContext), sanitize.Text(r.Client, 40))
	for _, line := range strings.Split(sanitize.Text(r.Params.Message, 1000), "\n") {
		fmt.Fprintf(&b, "  │ %s\n", line)
	}
	fmt.Fprintf(&b, "  └ %s; * marks a required field\n", pluralize(len(specs), "field"))
	h.printf("%s", b.String())

	choice, err := h.choose(ctx, started, timeout, "Answer this form?", []huh.Option[string]{
		huh.NewOption("Fill in the form", choiceFill),
		huh.NewOption("Decline (tell the server no)", choiceDecline),
		huh.NewOption("Cancel (dismiss without answering)", choiceCancel),
	})
	switch {
	case errors.Is(err, errAborted):
		return &conduit.ElicitResult{Action: messages.ActionCancel}, nil
	case err != nil:
		return nil, err
	}
	if choice != choiceFill {
		h.printf("  you chose: %s\n", choice)
		return &conduit.ElicitResult{Action: choice}, nil
	}

	vals := newFormValues(specs)
	ask := specs
	note := map[string]string{}
	for {
		var fields []huh.Field
		for _, s := range ask {
			fields = append(fields, vals.field(s, note[s.Name]))
		}
		switch err := h.run(ctx, started, timeout, huh.NewGroup(fields...)); {
		case errors.Is(err, errAborted):
			h.printf("  form abandoned: cancelled, nothing sent\n")
			return &conduit.ElicitResult{Action: messages.ActionCancel}, nil
		case err != nil:
			return nil, err
		}
		content, bad, msg := vals.content(specs)
		if bad == nil {
			h.printf("  form answered: %s sent\n", pluralize(len(content), "field"))
			return &conduit.ElicitResult{Action: messages.ActionAccept, Content: content}, nil
		}
		// An invalid answer is never sent: ask that field again, with why.
		h.printf("  %s: %s; asking again\n", bad.Title, msg)
		ask = []fieldSpec{*bad}
		note = map[string]string{bad.Name: msg}
	}
}

// formValues holds what the terminal fields are bound to.
type formValues struct {
	text  map[string]*string
	bools map[string]*bool
	multi map[string]*[]string
}

func newFormValues(specs []fieldSpec) *formValues {
	v := &formValues{text: map[string]*string{}, bools: map[string]*bool{}, multi: map[string]*[]string{}}
	for _, s := range specs {
		switch s.Kind {
		case messages.FieldBoolean:
			b := s.DefaultBool
			v.bools[s.Name] = &b
		case messages.FieldMultiSelect:
			m := slices.Clone(s.DefaultMulti)
			v.multi[s.Name] = &m
		default:
			t := s.DefaultText
			v.text[s.Name] = &t
		}
	}
	return v
}

// field is the terminal field of s, bound to its value; note is the error
// of a previous attempt.
func (v *formValues) field(s fieldSpec, note string) huh.Field {
	desc := s.Hint()
	if s.Description != "" {
		desc = s.Description + "\n" + desc
	}
	if s.Sensitive {
		desc = secretWarning + "\n" + desc
	}
	if note != "" {
		desc = "✗ " + note + "\n" + desc
	}
	title := s.Label()
	switch s.Kind {
	case messages.FieldBoolean:
		return huh.NewConfirm().Title(title).Description(desc).Affirmative("Yes").Negative("No").Value(v.bools[s.Name])
	case messages.FieldMultiSelect:
		opts := make([]huh.Option[string], len(s.Options))
		for i, o := range s.Options {
			opts[i] = huh.NewOption(o.Label, o.Value).Selected(slices.Contains(*v.multi[s.Name], o.Value))
		}
		return huh.NewMultiSelect[string]().Title(title).Description(desc).Options(opts...).Value(v.multi[s.Name]).Validate(s.checkMulti)
	case messages.FieldSelect:
		var opts []huh.Option[string]
		if !s.Required && !s.HasDefault {
			opts = append(opts, huh.NewOption("(no answer)", ""))
		}
		for _, o := range s.Options {
			opts = append(opts, huh.NewOption(o.Label, o.Value))
		}
		return huh.NewSelect[string]().Title(title).Description(desc).Options(opts...).Value(v.text[s.Name]).Validate(s.checkText)
	}
	in := huh.NewInput().Title(title).Description(desc).Value(v.text[s.Name]).Validate(s.checkText)
	if s.Sensitive {
		in = in.EchoMode(huh.EchoModePassword)
	}
	return in
}

// content builds the answer and checks it whole, as the guards will:
// bad is the first field that fails, with the message to show.
func (v *formValues) content(specs []fieldSpec) (map[string]any, *fieldSpec, string) {
	out := map[string]any{}
	for i := range specs {
		s := &specs[i]
		switch s.Kind {
		case messages.FieldBoolean:
			out[s.Name] = *v.bools[s.Name]
		case messages.FieldMultiSelect:
			m := *v.multi[s.Name]
			if err := s.checkMulti(m); err != nil {
				return nil, s, err.Error()
			}
			if s.skipped(m) {
				continue // left empty: skipped, as an empty optional text field
			}
			if m == nil {
				m = []string{}
			}
			out[s.Name] = m
		default:
			val, present, err := s.textValue(*v.text[s.Name])
			if err == nil && present {
				err = s.check(val)
			}
			if err != nil {
				return nil, s, err.Error()
			}
			if present {
				out[s.Name] = val
			}
		}
	}
	return out, nil, ""
}

func (h *interactiveHandler) askURL(ctx context.Context, started time.Time, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	timeout := h.timeout(messages.MethodElicit)
	h.printf("%s", urlScreen(h.who(r.RequestContext), r, func(s string) string { return "\x1b[1;7m" + s + "\x1b[0m" }))
	choice, err := h.choose(ctx, started, timeout, "Open this URL?", []huh.Option[string]{
		huh.NewOption("Decline (tell the server no)", choiceDecline),
		huh.NewOption("Cancel (dismiss without answering)", choiceCancel),
		huh.NewOption("Accept (consent only: the URL is not opened)", choiceAccept),
		huh.NewOption("Accept and open it in the system browser", choiceOpen),
	})
	switch {
	case errors.Is(err, errAborted):
		return &conduit.ElicitResult{Action: messages.ActionCancel}, nil
	case err != nil:
		return nil, err
	}
	switch choice {
	case choiceOpen:
		if err := h.openURL(r.URL); err != nil {
			h.printf("  could not open the browser: %v\n", err)
		} else {
			h.printf("  opened in the system browser\n")
		}
		return &conduit.ElicitResult{Action: messages.ActionAccept}, nil
	case choiceAccept:
		h.printf("  accepted (not opened)\n")
		return &conduit.ElicitResult{Action: messages.ActionAccept}, nil
	}
	h.printf("  you chose: %s (nothing opened)\n", choice)
	return &conduit.ElicitResult{Action: choice}, nil
}

// urlScreen is the text of the URL consent screen; mark highlights the host.
func urlScreen(who string, r *conduit.ElicitationRequest, mark func(string) string) string {
	var b strings.Builder
	// The whole URL, as the specification asks: the guards bound it
	// (guards.MaxURLBytes).
	u := sanitize.Text(r.URL, 0)
	host := sanitize.Text(r.Host, 200)
	written := sanitize.Text(r.WrittenHost, 200)
	if written == "" {
		written = host
	}
	fmt.Fprintf(&b, "\n  ┌ The server %q asks you to open a URL\n", who)
	for _, line := range strings.Split(sanitize.Text(r.Params.Message, 1000), "\n") {
		fmt.Fprintf(&b, "  │ %s\n", line)
	}
	fmt.Fprintf(&b, "  │ url:  %s\n", highlightHost(u, written, mark))
	// The host the URL leads to, which is not always the one it shows.
	if r.HostMapped {
		fmt.Fprintf(&b, "  │ host: %s (written %s)\n", mark(host), written)
	} else {
		fmt.Fprintf(&b, "  │ host: %s\n", mark(host))
	}
	for _, w := range urlWarnings(r) {
		fmt.Fprintf(&b, "  │ %s\n", w)
	}
	fmt.Fprintf(&b, "  └ Conduit never fetches this URL; it is opened only if you choose so.\n")
	return b.String()
}

// openInBrowser opens u with the system's opener (only on explicit choice).
func openInBrowser(u string) error {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	cmd := exec.Command(name, u)
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// errRefused is the sampling refusal the spec documents.
var errRefused = &conduit.RPCError{Code: messages.CodeSamplingRejected, Message: "User rejected sampling request"}

// HandleSampling shows the completion request and asks for an answer: a
// reply the person types, or --sampling-command's completion to send, edit
// or refuse (sent at once with --yes).
func (h *interactiveHandler) HandleSampling(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	started := time.Now()
	draft, model := "", "human (conduit interactive)"
	if h.samplingCommand.command != "" {
		text, err := h.samplingCommand.run(ctx, r)
		if err != nil {
			return nil, err
		}
		if h.samplingCommand.yes {
			return h.samplingCommand.completion(text), nil
		}
		draft, model = text, "sampling-command"
	}
	if err := h.acquire(ctx); err != nil {
		return nil, err
	}
	defer h.release()
	timeout := h.timeout(messages.MethodCreateMessage)
	h.printf("%s", samplingScreen(h.who(r.RequestContext), r))
	title, opts := "Approve this completion?", []huh.Option[string]{
		huh.NewOption("Type a reply (sent as the assistant's message)", choiceReply),
		huh.NewOption("Refuse", choiceRefuse),
	}
	if draft != "" {
		h.printf("  --sampling-command answered:\n%s\n", indent(draft))
		title, opts = "Send this completion?", []huh.Option[string]{
			huh.NewOption("Send it", choiceSend),
			huh.NewOption("Edit it, then send", choiceReply),
			huh.NewOption("Refuse", choiceRefuse),
		}
	}
	choice, err := h.choose(ctx, started, timeout, title, opts)
	switch {
	case errors.Is(err, errAborted) || (err == nil && choice == choiceRefuse):
		h.printf("  refused\n")
		return nil, errRefused
	case err != nil:
		return nil, err
	}
	reply := draft
	if choice == choiceReply {
		in := huh.NewText().Title("Your reply").Description("enter for a new line is alt+enter; tab then enter to send").Value(&reply).
			Validate(func(s string) error {
				if strings.TrimSpace(s) == "" {
					return errors.New("type a reply, or ctrl-c to refuse")
				}
				return nil
			})
		switch err := h.run(ctx, started, timeout, huh.NewGroup(in)); {
		case errors.Is(err, errAborted):
			h.printf("  refused\n")
			return nil, errRefused
		case err != nil:
			return nil, err
		}
	}
	h.printf("  reply sent (%d characters)\n", len(reply))
	return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text(reply), Model: model, StopReason: "endTurn"}, nil
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// samplingScreen is the text of the sampling approval screen: the request
// as the guards changed it, and what they changed.
func samplingScreen(who string, r *conduit.SamplingRequest) string {
	var b strings.Builder
	p := r.Params
	fmt.Fprintf(&b, "\n  ┌ The server %q asks for a completion (sampling): you are the model\n", who)
	if p.SystemPrompt != "" {
		fmt.Fprintf(&b, "  │ system prompt: %s\n", sanitize.Text(p.SystemPrompt, 500))
	}
	for _, m := range p.Messages {
		fmt.Fprintf(&b, "  │ %s: %s\n", sanitize.Text(m.Role, 20), sanitize.Text(samplingText(m.Content), 1000))
	}
	fmt.Fprintf(&b, "  │ maxTokens: %d", p.MaxTokens)
	if p.IncludeContext != "" {
		fmt.Fprintf(&b, ", includeContext: %s", sanitize.Text(p.IncludeContext, 30))
	}
	b.WriteString("\n")
	if ch := samplingChanges(r); len(ch) > 0 {
		fmt.Fprintf(&b, "  │ Changed by Conduit's guards from what the server sent:\n")
		for _, c := range ch {
			fmt.Fprintf(&b, "  │   - %s\n", c)
		}
	}
	fmt.Fprintf(&b, "  └ No model is called: your reply is the answer.\n")
	return b.String()
}

// ListRoots offers the roots, stated on screen once.
func (h *interactiveHandler) ListRoots(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	h.once.Do(func() {
		what := "the current directory"
		if h.rootsFromFlags {
			what = "the roots of --roots"
		}
		h.printf("  roots    offered to the server: %s (%s)\n", rootURIs(h.roots), what)
	})
	return &conduit.ListRootsResult{Roots: slices.Clone(h.roots)}, nil
}

// handlers is the interactive handler as a handler set: every input kind,
// both elicitation modes; the caller adds the notification hooks.
func (h *interactiveHandler) handlers() conduit.Handlers {
	return conduit.Handlers{
		Sampling:         h.HandleSampling,
		Elicitation:      h.HandleElicitation,
		ElicitationModes: h.ElicitationModes(),
		Roots:            h.ListRoots,
	}
}
