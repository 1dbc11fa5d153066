package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
)

// `conduit demo`: Conduit's client against the demo server (package
// demoserver, in process), one step per tool, each asking for one kind of
// input.

const demoExitHelp = `The answers file (--answers) is the one of conduit call: see 'conduit call --help'.

Exit status: 0 every step went as expected; 1 a step did not (or the demo was
interrupted); 2 usage error (bad flags, unreadable or invalid answers file).`

func (a *app) demoCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Watch the client answer every kind of input, against an embedded demo server",
		Long: `Run a demo MCP server inside this process (no subprocess, no network) and call
its tools one by one. Each asks the client for one kind of input: a form with every
field type, URLs to open (a punycode lookalike host, a host off the server's origin),
a completion without and with tools, the roots, two questions in a row, an approval
inside a background task; the last two send progress notifications and log entries
full of terminal tricks. Each step prints what was asked, what the client answered
and the tool's result; a summary built from the client's audit records ends it.

The server speaks both eras. With --era auto (the default) the client probes
server/discover, which the demo server answers, so the modern era (2026-07-28) is
used: input is asked for inside results (input_required) and the client retries with
the answers; background_job runs as a task. --era legacy shows the legacy flow
(2025-11-25): initialize, then the server sends its own requests while a call is open.

At a terminal you answer each request yourself (about 20 prompts); --scripted,
or a run without a terminal, lets the built-in scripted handler answer instead:
forms filled in with values that fit their schema (defaults left to Conduit to fill
in), URLs declined (nothing is ever opened), a fixed completion (no model is called),
the current directory as the only root (or --roots). It declares no sampling tools,
so plan_with_tools is refused (-32602): that refusal is one of the steps. With
--answers FILE the file answers, as for conduit call; the kinds it lacks are not
offered, and their steps say so. --sampling-command writes the completions at a
terminal or with --answers.`,
		Example: `  conduit demo
  conduit demo --scripted
  conduit demo --era legacy
  conduit demo --answers docs/answers.example.json --audit audit.jsonl`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("demo takes no arguments, got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runDemo(cmd.Context()) },
	}
	c.Annotations = map[string]string{"more": demoExitHelp}
	fs := c.Flags()
	fs.SortFlags = false
	fs.StringVar(&a.opts.era, "era", "auto", "the protocol `ERA`: auto, legacy or modern (auto probes server/discover; the demo server answers it, so modern)")
	_ = fs.SetAnnotation("era", "group", []string{groupConnection})
	a.handlerFlags(fs)
	fs.BoolVar(&a.opts.scripted, "scripted", false, "no prompts at a terminal: the built-in scripted handler answers, as it does without a terminal")
	_ = fs.SetAnnotation("scripted", "group", []string{groupHandler})
	// The demo has no format below (it points to conduit call's) and
	// asks for info logs by default.
	fs.Lookup("answers").Usage = "answer the server's input requests from `FILE`, non-interactively (the format of conduit call --help)"
	fs.Lookup("log-level").Usage += " (default info)"
	_ = fs.MarkHidden("json")
	return c
}

// demoLogLevel is the level asked of the demo server without --log-level.
const demoLogLevel = "info"

// runDemo starts the demo server on one end of a memory pair, connects the
// client to the other and walks through the steps.
func (a *app) runDemo(ctx context.Context) error {
	o := &a.opts
	if err := o.check(); err != nil {
		return err
	}
	if o.json {
		return usagef("--json is not available for demo, which prints a walkthrough for people: use --audit FILE for machine-readable records")
	}
	logger := newLogger(a.stderr, o.verbose, false)
	out := &lockedWriter{w: a.std.out}

	var flagRoots []conduit.Root
	if len(o.roots) > 0 {
		var err error
		if flagRoots, err = parseRoots(o.roots); err != nil {
			return usagef("--roots: %v", err)
		}
		warnMissingRoots(logger, o.roots)
	}
	// Server log entries are printed by the CLI's notifier, in the step
	// they belong to.
	n := &notifier{w: &prefixWriter{w: out, prefix: "  log      "}, logger: logger}
	cmd := samplingCommand{command: o.samplingCommand, yes: o.yes}
	var inner conduit.Handlers
	var handlerDesc string
	interactive, builtIn := false, false
	if o.answers != "" {
		ans, err := loadAnswers(o.answers)
		if err != nil {
			return err
		}
		warnMissingRoots(logger, ans.rootEntries)
		inner = newHandlers(n, ans, flagRoots, cmd)
		handlerDesc = "scripted from " + o.answers
	} else {
		roots, err := rootsOrCwd(flagRoots)
		if err != nil {
			return err
		}
		if isTerminal(a.std.in) && !o.scripted {
			ih := newInteractiveHandler(a.std.in, a.std.out, roots, flagRoots != nil, o.handlerTimeout)
			ih.samplingCommand = cmd
			inner, handlerDesc, interactive = ih.handlers(), interactiveHandlerDesc, true
		} else {
			if cmd.command != "" {
				return usagef("--sampling-command needs --answers FILE or a terminal: the built-in scripted handler answers sampling itself")
			}
			inner, builtIn = scriptedDemoHandlers(roots), true
			handlerDesc = "built-in, scripted: forms filled in, URLs declined (never opened),\na fixed completion (no model is called, no sampling tools),\nroots " + rootURIs(roots)
		}
	}
	obs := &demoObserver{notifier: n, out: out}
	handlers := obs.observe(inner)

	audit := &demoAudit{next: &auditor{logger: logger}}
	if o.audit != "" {
		f, err := os.OpenFile(o.audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return usagef("--audit: %v", err)
		}
		audit.next.file = f
		defer func() {
			if err := f.Close(); err != nil {
				logger.Error("audit file", "err", err)
			}
		}()
	}

	srv := demoserver.New()
	stopServer := func() {
		if err := srv.Close(); err != nil {
			logger.Warn("demo server", "err", err)
		}
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	client, err := conduit.Connect(ctx, srv, conduit.Options{
		ServerID:          "demo",
		Handlers:          handlers,
		HandlerTimeout:    o.handlerTimeout,
		MaxServerRequests: o.maxServerRequests,
		Timeout:           timeout,
		MaxTotalTimeout:   o.maxTotalTimeout,
		Era:               eraOption(o.era),
		Tasks:             o.era != "legacy",
		Logger:            logger,
		Audit:             audit.record,
	})
	if err != nil {
		stopServer()
		return connectFailed(ctx, err)
	}
	d := &demoRun{out: out, client: client, srv: srv, obs: obs, audit: audit, era: o.era, scripted: builtIn, interactive: interactive,
		samplingTools: handlers.SamplingTools}
	finishDrops := a.watchDrops(clientDrops(client))
	runErr := d.run(ctx, handlerDesc, demoOrDefault(o.logLevel, demoLogLevel))
	if err := client.Close(); err != nil {
		logger.Debug("close", "err", err)
	}
	finishDrops()
	stopServer()
	if runErr != nil {
		return runErr
	}
	d.summary()
	if bad := d.unexpected(); len(bad) > 0 {
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d of %d demo steps did not go as expected: %s", len(bad), len(d.reports), strings.Join(bad, ", "))}
	}
	return nil
}

func demoOrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// scriptedDemoHandlers are the built-in scripted handler's.
func scriptedDemoHandlers(roots []conduit.Root) conduit.Handlers {
	h := &scriptedDemoHandler{roots: roots}
	return conduit.Handlers{
		Sampling:         h.HandleSampling,
		Elicitation:      h.HandleElicitation,
		ElicitationModes: []string{messages.ModeForm, messages.ModeURL},
		Roots:            h.ListRoots,
	}
}

// isTerminal reports whether r is a terminal. A character device is not
// enough: /dev/null is one, and a CI job's stdin often is /dev/null.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// scriptedDemoHandler answers every input request at once, sensibly and
// safely: a form gets values that fit its schema, a URL is declined (the
// demo never opens one), sampling gets a fixed text, roots are the ones it
// was given. It declares sampling without tools (it cannot run a server's
// tools, so a request offering tools is refused), and both elicitation
// modes.
type scriptedDemoHandler struct{ roots []conduit.Root }

const (
	demoModel   = "conduit-demo-scripted"
	demoSummary = "Conduit answers an MCP server's requests for input on supervised actors with timeouts, checks both the requests and the answers, cleans the server's logs and audits every request."
)

func (h *scriptedDemoHandler) HandleSampling(_ context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	text := "This is the demo's scripted handler: no model was called."
	if n := len(r.Params.Messages); n > 0 && strings.HasPrefix(samplingText(r.Params.Messages[n-1].Content), "Summarise") {
		text = demoSummary
	}
	return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text(text), Model: demoModel, StopReason: "endTurn"}, nil
}

func (h *scriptedDemoHandler) HandleElicitation(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	if r.Mode == messages.ModeURL {
		return &conduit.ElicitResult{Action: messages.ActionDecline}, nil
	}
	return &conduit.ElicitResult{Action: messages.ActionAccept, Content: demoFormAnswer(r.Form)}, nil
}

func (h *scriptedDemoHandler) ListRoots(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	return &conduit.ListRootsResult{Roots: slices.Clone(h.roots)}, nil
}

// demoFormAnswer fills in a form: a value that fits each field without a
// default (Conduit's guard fills in the defaults, as a form would show
// them pre-filled).
func demoFormAnswer(form []conduit.FormField) map[string]any {
	content := map[string]any{}
	for _, f := range form {
		if f.Default != nil {
			continue
		}
		if v := demoFieldAnswer(f); v != nil {
			content[f.Name] = v
		}
	}
	return content
}

func demoFieldAnswer(f conduit.FormField) any {
	switch f.Kind {
	case conduit.FieldSelect:
		if len(f.Options) > 0 {
			return f.Options[0].Value
		}
	case conduit.FieldMultiSelect:
		n := min(2, len(f.Options))
		if f.MinItems != nil {
			n = max(n, *f.MinItems)
		}
		if f.MaxItems != nil {
			n = min(n, *f.MaxItems)
		}
		values := make([]string, 0, n)
		for _, o := range f.Options[:min(n, len(f.Options))] {
			values = append(values, o.Value)
		}
		return values
	case conduit.FieldBoolean:
		return true
	case conduit.FieldInteger, conduit.FieldNumber:
		v := 1.0
		switch {
		case f.Minimum != nil && f.Maximum != nil:
			v = (*f.Minimum + *f.Maximum) / 2
		case f.Minimum != nil:
			v = max(*f.Minimum, v)
		case f.Maximum != nil:
			v = min(*f.Maximum, v)
		}
		if f.Kind == conduit.FieldInteger {
			return int64(math.Ceil(v))
		}
		return math.Round(v*100) / 100
	case conduit.FieldString:
		v := "demo answer"
		label := strings.ToLower(f.Name + " " + f.Title)
		switch {
		case f.Format == "email":
			return "ada@example.com"
		case f.Format == "uri":
			return "https://example.com/ada"
		case f.Format == "date":
			return "1815-12-10"
		case f.Format == "date-time":
			return "1815-12-10T09:00:00Z"
		case strings.Contains(label, "project"):
			v = "analytical-engine"
		case strings.Contains(label, "name"):
			v = "Ada Lovelace"
		}
		if f.MaxLength != nil && len(v) > *f.MaxLength {
			v = v[:*f.MaxLength]
		}
		if f.MinLength != nil && len(v) < *f.MinLength {
			v += strings.Repeat("x", *f.MinLength-len(v))
		}
		return v
	}
	return nil
}

// demoObserver receives the server's log entries and other notifications for
// the demo: the CLI's notifier prints the log entries (Conduit sanitised
// them before they got here), progress is shown as it comes, and everything
// is counted so the demo knows when a step's output is all in.
type demoObserver struct {
	notifier *notifier
	out      io.Writer
	logs     atomic.Int64
	progress atomic.Int64
	seen     atomic.Int64 // logs and notifications, once shown
}

func (o *demoObserver) HandleLog(ctx context.Context, nc conduit.NotificationContext, e *conduit.LoggingMessage) {
	o.notifier.HandleLog(ctx, nc, e)
	o.logs.Add(1)
	o.seen.Add(1)
}

// HandleProgress shows progress decoded (its message sanitised by Conduit).
func (o *demoObserver) HandleProgress(_ context.Context, _ conduit.NotificationContext, p *conduit.Progress) {
	line := fmt.Sprintf("%g", p.Progress)
	if p.Total != nil {
		line += fmt.Sprintf("/%g", *p.Total)
	}
	if p.Message != "" {
		line += " " + sanitize.Text(p.Message, 200)
	}
	fmt.Fprintf(o.out, "  progress %s\n", line)
	o.progress.Add(1)
	o.seen.Add(1)
}

func (o *demoObserver) HandleNotification(ctx context.Context, nc conduit.NotificationContext, n *conduit.Notification) {
	o.notifier.HandleNotification(ctx, nc, n) // logged with -v
	o.seen.Add(1)
}

// observe returns inner with o's notification hooks: the client declares
// exactly what inner declares.
func (o *demoObserver) observe(inner conduit.Handlers) conduit.Handlers {
	inner.Log, inner.Notification, inner.Progress = o.HandleLog, o.HandleNotification, o.HandleProgress
	return inner
}

// demoAudit keeps the client's audit records for the summary and passes
// them on to the CLI's auditor (the --audit file, the warnings).
type demoAudit struct {
	mu   sync.Mutex
	recs []conduit.AuditRecord
	next *auditor
}

func (d *demoAudit) record(rec conduit.AuditRecord) {
	d.mu.Lock()
	d.recs = append(d.recs, rec)
	d.mu.Unlock()
	d.next.record(rec)
}

func (d *demoAudit) since(i int) []conduit.AuditRecord {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.recs[i:])
}

func (d *demoAudit) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.recs)
}

// prefixWriter writes each Write (one line) after a prefix, in one Write.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Step statuses.
const (
	stepOK         = "ok"
	stepRefused    = "refused"     // the client refused (or gave up on) an input request
	stepNotOffered = "not offered" // the server needs a capability the client does not declare
	stepFailed     = "FAILED"
)

// demoStep is one tool the demo calls: what it asks for, and what to
// look at (in each era, when they differ).
type demoStep struct {
	tool, about string
	why         string
	whyLegacy   string
}

var demoSteps = []demoStep{
	{tool: "profile_form", about: "a form with every field type of the spec",
		why: "Conduit checks the schema is the spec's flat subset, then the answer against it, and fills in the defaults."},
	{tool: "link_account", about: "a URL to open, on a punycode lookalike host",
		why: "xn--80ak6aa92e.com reads \"аррӏе.com\" in Cyrillic letters: Conduit flags the punycode host for the handler, and never opens a URL itself."},
	{tool: "open_dashboard", about: "a URL to open, off the server's origin",
		why: "The host starts like the demo's own name but is another domain: Conduit flags every URL off the server's origin."},
	{tool: "summarise", about: "a completion (sampling)",
		why: "The server asks for 100000 tokens and this server's context: the guards clamp maxTokens (4096) and set includeContext to none before the handler, the approval point, sees it."},
	{tool: "plan_with_tools", about: "a completion offering tools to the model",
		why: "Tools in a sampling request need the sampling.tools capability: a client that did not declare it must refuse."},
	{tool: "workspace", about: "the client's roots",
		why: "Only local file:// roots are sent to the server."},
	{tool: "two_step", about: "two questions, the second built from the first answer",
		why:       "Each question comes back inside the tool's result (input_required); the client answers and calls again (MRTR).",
		whyLegacy: "The server sends elicitation/create requests while the tool call is open; the call's timeout is paused meanwhile."},
	{tool: "background_job", about: "an approval, asked for by a background task",
		why:       "The call returns a task; its question arrives through tasks/get and goes through the same guards and handler.",
		whyLegacy: "No tasks in the legacy era: a plain tool call asks the same question."},
	{tool: "progress", about: "progress notifications for the call's progressToken",
		why: "Progress and logs reach the handler one at a time, in order; the server's text is cleaned before it is shown."},
	{tool: "noisy_logs", about: "log entries full of terminal tricks",
		why: "Escape sequences, control, bidi and invisible characters are removed from every log entry before the handler gets it."},
}

// stepReport is what one step did.
type stepReport struct {
	step     demoStep
	status   string
	expected []string
	inputs   []conduit.AuditRecord
	logs     int64
	progress int64
	task     bool
	needs    string // not offered: the capabilities the server asked for
}

// demoRun is one walk through the steps.
type demoRun struct {
	out           io.Writer
	client        *conduit.Client
	srv           *demoserver.Server
	obs           *demoObserver
	audit         *demoAudit
	era           string // --era
	scripted      bool   // the built-in handler answers: every outcome is known
	interactive   bool   // the person at the terminal answers
	samplingTools bool
	reports       []stepReport
}

func (d *demoRun) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// field prints a labelled, sanitised block of text, continuation lines
// indented under the first.
func (d *demoRun) field(label, text string) {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if i == 0 {
			fmt.Fprintf(&b, "  %-8s %s\n", label, sanitize.Text(line, 0))
		} else {
			fmt.Fprintf(&b, "           %s\n", sanitize.Text(line, 0))
		}
	}
	io.WriteString(d.out, b.String())
}

func (d *demoRun) run(ctx context.Context, handlerDesc, level string) error {
	c := d.client
	info := c.ServerInfo()
	how := "found by server/discover, which the demo server answers"
	switch {
	case c.Era() == conduit.EraLegacy && d.pinned(conduit.EraLegacy):
		how = "pinned with --era legacy: initialize, no probe"
	case c.Era() == conduit.EraLegacy:
		how = "server/discover went unanswered: initialize"
	case d.pinned(conduit.EraModern):
		how = "pinned with --era modern"
	}
	d.printf("Conduit demo: an MCP server asks this client for every kind of input.\n")
	if d.interactive {
		d.printf("You are %s.\n", demoInteractiveNote)
	}
	d.printf("\n")
	d.field("server", fmt.Sprintf("%s %s, embedded (in memory: no process, no network)", info.Name, info.Version))
	d.field("era", fmt.Sprintf("%s, protocol %s (%s)", c.Era(), c.ProtocolVersion(), how))
	d.field("handler", handlerDesc)
	if hasCapability(c.ServerCapabilities(), "logging") {
		if err := c.SetLogLevel(ctx, level); err != nil {
			return callFailed(ctx, err)
		}
		d.field("logs", level+" and above, cleaned by Conduit before they are shown")
	}
	tools, err := c.ListTools(ctx)
	if err != nil {
		return callFailed(ctx, err)
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	d.field("tools", wrapWords(fmt.Sprintf("%d: %s", len(tools), strings.Join(names, " ")), 76))
	for i, st := range demoSteps {
		d.printf("\n[%d/%d] %s: %s\n", i+1, len(demoSteps), st.tool, st.about)
		why := st.why
		if c.Era() == conduit.EraLegacy && st.whyLegacy != "" {
			why = st.whyLegacy
		}
		for line := range strings.Lines(wrapWords(why, 86)) {
			d.printf("  %s", line)
		}
		d.printf("\n")
		r := d.step(ctx, st)
		d.reports = append(d.reports, r)
		if ctx.Err() != nil {
			return &exitError{code: exitFailed, msg: "interrupted", err: ctx.Err()}
		}
	}
	return nil
}

// pinned reports whether --era named e (the demo has no
// --protocol-version, so --era is the only way to pin one).
func (d *demoRun) pinned(e conduit.Era) bool { return d.era == string(e) }

func (d *demoRun) step(ctx context.Context, st demoStep) stepReport {
	r := stepReport{step: st, expected: d.expected(st.tool)}
	first := d.audit.len()
	logs, progress := d.obs.logs.Load(), d.obs.progress.Load()
	var res *conduit.CallToolResult
	var err error
	switch st.tool {
	case "progress":
		res, err = d.client.CallTool(ctx, st.tool, nil, conduit.WithProgressToken("demo-progress"))
	case "background_job":
		res, err = d.client.CallTool(ctx, st.tool, nil)
		if err == nil && res.Task != nil {
			t := res.Task
			r.task = true
			every := ""
			if t.PollIntervalMs != nil {
				every = fmt.Sprintf(" every %dms", *t.PollIntervalMs)
			}
			d.field("task", fmt.Sprintf("%s %s (%s): the client polls tasks/get%s and answers its input with tasks/update", t.TaskID, t.Status, t.StatusMessage, every))
			res, err = d.client.AwaitTask(ctx, t)
			if err != nil && ctx.Err() == nil {
				// AwaitTask cancels the task only when its context ends;
				// a task whose input was refused would wait for ever.
				if cerr := d.client.Call(ctx, "tasks/cancel", map[string]any{"taskId": t.TaskID}, nil); cerr == nil {
					d.field("task", t.TaskID+" cancelled with tasks/cancel: its input was not given")
				}
			}
		}
	default:
		res, err = d.client.CallTool(ctx, st.tool, nil)
	}
	d.settle(ctx)
	r.inputs = d.audit.since(first)
	r.logs, r.progress = d.obs.logs.Load()-logs, d.obs.progress.Load()-progress
	for _, rec := range r.inputs {
		asked, answer := describeInput(rec)
		d.field("asked", asked)
		label := "answer"
		if rec.Outcome != "answered" {
			label = rec.Outcome
		}
		d.field(label, answer)
	}
	if err != nil {
		d.field("error", plain(err))
	} else {
		d.field("result", demoResultText(res))
	}
	r.status = classifyStep(res, err, r.inputs)
	if r.status == stepNotOffered {
		r.needs = requiredCapabilities(res, err)
	}
	d.printf("  => %s\n", d.verdict(r))
	return r
}

// settle waits (a second at most) until the handler has shown everything
// the server sent and the audit hook has recorded every input request, so
// a step's output is complete before the next starts.
func (d *demoRun) settle(ctx context.Context) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		sent := d.srv.Counts()
		if d.obs.seen.Load() >= sent.Notifications && int64(d.audit.len()) >= sent.InputRequests {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expected lists the statuses a step may end with. With the built-in
// handler every outcome is known; with an answers file, any outcome but a
// failure is the file's doing.
func (d *demoRun) expected(tool string) []string {
	if !d.scripted {
		return []string{stepOK, stepRefused, stepNotOffered}
	}
	if tool == "plan_with_tools" && !d.samplingTools {
		return []string{stepRefused}
	}
	return []string{stepOK}
}

func classifyStep(res *conduit.CallToolResult, err error, inputs []conduit.AuditRecord) string {
	switch {
	case err == nil && !res.IsError:
		return stepOK
	case slices.ContainsFunc(inputs, func(r conduit.AuditRecord) bool { return r.Outcome != "answered" }):
		return stepRefused
	case requiredCapabilities(res, err) != "":
		return stepNotOffered
	}
	return stepFailed
}

// requiredCapabilities returns, as compact JSON, the capabilities the
// server said the tool needs: -32021's data (modern), or the demo server's
// legacy counterpart, a tool error with the same structured content. It is
// "" when the server said no such thing.
func requiredCapabilities(res *conduit.CallToolResult, err error) string {
	var raw json.RawMessage
	var rpc *conduit.RPCError
	switch {
	case err != nil && errors.Is(err, messages.ErrMissingClientCapability) && errors.As(err, &rpc):
		raw = rpc.Data
	case err == nil && res.IsError:
		raw = res.StructuredContent
	}
	var v struct {
		Required map[string]json.RawMessage `json:"requiredCapabilities"`
	}
	if json.Unmarshal(raw, &v) != nil || len(v.Required) == 0 {
		return ""
	}
	b, err := json.Marshal(v.Required) // compact, keys sorted
	if err != nil {
		return ""
	}
	return sanitize.Text(string(b), 80)
}

func (d *demoRun) verdict(r stepReport) string {
	ok := slices.Contains(r.expected, r.status)
	switch {
	case !ok:
		return fmt.Sprintf("%s (expected %s)", r.status, strings.Join(r.expected, " or "))
	case r.status == stepRefused && d.scripted && r.step.tool == "plan_with_tools":
		return "refused by the client, as expected: it did not declare sampling.tools, so Conduit's guard refuses a request offering tools (-32602) before the handler sees it"
	case r.status == stepRefused:
		return "refused by the client"
	case r.status == stepNotOffered:
		return "not offered: the server needs " + r.needs + ", which this client does not declare"
	}
	return "ok"
}

func (d *demoRun) unexpected() []string {
	var bad []string
	for _, r := range d.reports {
		if !slices.Contains(r.expected, r.status) {
			bad = append(bad, r.step.tool)
		}
	}
	return bad
}

// demoResultText is a tool result as text: each text block, other blocks as
// compact JSON, then the structured content.
func demoResultText(res *conduit.CallToolResult) string {
	var b strings.Builder
	for _, block := range res.Content {
		if block.Type == "text" {
			b.WriteString(block.Text)
		} else {
			j, _ := json.Marshal(block)
			b.Write(j)
		}
		b.WriteByte('\n')
	}
	if res.IsError {
		b.WriteString("(the tool reported an error: isError)\n")
	}
	if b.Len() == 0 {
		return "(empty)"
	}
	return b.String()
}

// inputView is what the demo shows of an input request, decoded from the
// audit record's view of it.
type inputView struct {
	Mode   string `json:"mode"`
	Params struct {
		Message         string `json:"message"`
		URL             string `json:"url"`
		RequestedSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"requestedSchema"`
	} `json:"params"`
	Host           string `json:"host"`
	IDN            bool   `json:"idn"`
	HostMapped     bool   `json:"host_mapped"`
	OriginMismatch bool   `json:"origin_mismatch"`
}

// describeInput says what an input request asked for and what was
// answered, from its audit record. Everything the server chose is
// sanitised when printed.
func describeInput(rec conduit.AuditRecord) (asked, answer string) {
	where := ""
	switch {
	case rec.Key != "":
		where = " [key " + rec.Key + "]"
	case !rec.RequestID.IsZero():
		where = " [request " + rec.RequestID.String() + "]"
	}
	reqJSON, _ := json.Marshal(rec.Request)
	resJSON, _ := json.Marshal(rec.Result)
	asked = rec.Method + where
	switch rec.Method {
	case messages.MethodElicit:
		var v inputView
		if rec.Request != nil && json.Unmarshal(reqJSON, &v) == nil {
			if v.Mode == messages.ModeURL {
				asked = fmt.Sprintf("%s, url %s%s", rec.Method, v.Params.URL, where)
				var flags []string
				if v.HostMapped {
					flags = append(flags, "not the host the URL shows")
				}
				if v.IDN {
					flags = append(flags, "punycode (IDN)")
				}
				if v.OriginMismatch {
					flags = append(flags, "off the server's origin")
				}
				if len(flags) > 0 {
					asked += fmt.Sprintf("\nhost %s: %s", v.Host, strings.Join(flags, ", "))
				}
			} else {
				asked = fmt.Sprintf("%s, form \"%s\" (%s)%s", rec.Method, sanitize.Text(v.Params.Message, 80), pluralize(len(v.Params.RequestedSchema.Properties), "field"), where)
			}
		}
		var res conduit.ElicitResult
		if rec.Result != nil && json.Unmarshal(resJSON, &res) == nil {
			answer = res.Action
			if len(res.Content) > 0 {
				c, _ := json.Marshal(res.Content)
				if len(c) <= 70 {
					answer += " " + string(c)
				} else {
					answer += " (" + pluralize(len(res.Content), "field") + ")"
				}
			}
		}
	case messages.MethodCreateMessage:
		var p messages.CreateMessageParams
		if rec.Request != nil && json.Unmarshal(reqJSON, &p) == nil && len(p.Messages) > 0 {
			text := samplingText(p.Messages[len(p.Messages)-1].Content)
			extra := ""
			if p.IncludeContext != "" {
				extra = ", includeContext " + sanitize.Text(p.IncludeContext, 20)
			}
			asked = fmt.Sprintf("%s, \"%s\" (maxTokens %d%s)%s", rec.Method, sanitize.Text(text, 50), p.MaxTokens, extra, where)
		}
		var res conduit.CreateMessageResult
		if rec.Result != nil && json.Unmarshal(resJSON, &res) == nil {
			answer = fmt.Sprintf("\"%s\" (model %s)", sanitize.Text(samplingText(res.Content), 60), res.Model)
		}
	case messages.MethodListRoots:
		var res conduit.ListRootsResult
		if rec.Result != nil && json.Unmarshal(resJSON, &res) == nil {
			answer = rootURIs(res.Roots)
		}
	}
	if rec.Outcome != "answered" {
		answer = rec.Outcome
		if rec.Code != nil {
			answer = fmt.Sprintf("%d %s", *rec.Code, rec.Message)
		} else if rec.Message != "" {
			answer += ": " + rec.Message
		}
	}
	return asked, answer
}

// samplingText is the text blocks of c joined by spaces, or "(no text)".
func samplingText(c messages.Contents) string {
	if t := c.PlainText(); t != "" {
		return t
	}
	return "(no text)"
}

func rootURIs(roots []conduit.Root) string {
	if len(roots) == 0 {
		return "none"
	}
	uris := make([]string, len(roots))
	for i, r := range roots {
		uris[i] = r.URI
	}
	return strings.Join(uris, " ")
}

// inputKind names an input request's kind for the summary.
func inputKind(rec conduit.AuditRecord) string {
	switch rec.Method {
	case messages.MethodElicit:
		var v inputView
		b, _ := json.Marshal(rec.Request)
		if json.Unmarshal(b, &v) == nil && v.Mode != "" {
			return "elicitation (" + v.Mode + ")"
		}
		return "elicitation"
	case messages.MethodCreateMessage:
		return "sampling"
	case messages.MethodListRoots:
		return "roots"
	}
	return rec.Method
}

// summary prints a table of the steps and the input requests of each, as
// the audit hook recorded them.
func (d *demoRun) summary() {
	counts := map[string]int{}
	outcomes := map[string]int{}
	inputs := 0
	for _, r := range d.reports {
		counts[r.status]++
		for _, rec := range r.inputs {
			inputs++
			outcomes[rec.Outcome]++
		}
	}
	var tb bytes.Buffer
	tw := tabwriter.NewWriter(&tb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STEP\tSTATUS\tINPUT\tOUTCOME\tDETAIL")
	for _, r := range d.reports {
		status := r.status
		if !slices.Contains(r.expected, r.status) {
			status += " (unexpected)"
		}
		var notes []string
		if r.needs != "" {
			notes = append(notes, "needs "+r.needs)
		}
		if r.task {
			notes = append(notes, "ran as a task")
		}
		if r.progress > 0 {
			notes = append(notes, pluralize(int(r.progress), "progress notification"))
		}
		if r.logs > 0 {
			notes = append(notes, strings.Replace(pluralize(int(r.logs), "log entry"), "entrys", "entries", 1)+", sanitised")
		}
		if len(r.inputs) == 0 {
			fmt.Fprintf(tw, "  %s\t%s\t-\t-\t%s\n", r.step.tool, status, strings.Join(notes, ", "))
			continue
		}
		for i, rec := range r.inputs {
			_, answer := describeInput(rec)
			detail := sanitize.Text(strings.ReplaceAll(answer, "\n", " "), 60)
			if i == len(r.inputs)-1 && len(notes) > 0 {
				detail += " (" + strings.Join(notes, ", ") + ")"
			}
			name, st := r.step.tool, status
			if i > 0 {
				name, st = "", ""
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", name, st, inputKind(rec), rec.Outcome, detail)
		}
	}
	_ = tw.Flush()

	d.printf("\nSummary (%s era, protocol %s)\n", d.client.Era(), d.client.ProtocolVersion())
	for line := range strings.Lines(tb.String()) {
		d.printf("%s\n", strings.TrimRight(line, " \n"))
	}
	var parts []string
	for _, s := range []string{stepOK, stepRefused, stepNotOffered, stepFailed} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	verdict := "all as expected"
	if bad := d.unexpected(); len(bad) > 0 {
		verdict = fmt.Sprintf("%d not as expected", len(bad))
	}
	var outs []string
	for _, o := range []string{"answered", "refused", "timeout", "cancelled", "busy", "rate_limited"} {
		if outcomes[o] > 0 {
			outs = append(outs, fmt.Sprintf("%d %s", outcomes[o], o))
		}
	}
	d.printf("\n%d steps, %s (%s). %d input requests: %s.\n", len(d.reports), verdict, strings.Join(parts, ", "), inputs, strings.Join(outs, ", "))
	if d.client.Era() == conduit.EraModern {
		d.printf("The same walk in the legacy era, where the server sends its own requests: conduit demo --era legacy\n")
	}
}

// pluralize is "1 field", "2 fields".
func pluralize(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// wrapWords breaks s into lines of at most width bytes, at spaces.
func wrapWords(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 && n+1+len(w) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// demoInteractiveNote is the line of the interactive demo's first screen
// that tells how to get the scripted run instead.
const demoInteractiveNote = "answering yourself; run `conduit demo --scripted` for the scripted run"
