package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/host"
)

const hostHelp = `The configuration file is the one most hosts read (Claude Desktop, Cursor's
.cursor/mcp.json), or VS Code's:

  {"mcpServers": {
     "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/notes"]},
     "search": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"},
                "conduit": {"restart": {"backoff": {"initial": "1s", "max": "1m"}, "intensity": 3, "period": "5m"}}}}}

${VAR} and ${env:VAR} are replaced by environment variables. Conduit's own
settings of a server live under its "conduit" key (era, protocolVersion,
timeout, maxTotalTimeout, handlerTimeout, maxServerRequests, startTimeout,
roots, restart, ping, disabled, inheritEnv, optional); other hosts ignore it.
docs/supervision.md has the details.

A server that exits or loses its connection is restarted after 0.5s, then
1s, 2s... up to 30s; a failure after 5 starts within 60s parks it (stopped,
with its last error) until its configuration changes.

conduit host reloads the file on SIGHUP and when it changes on disk: an
unchanged server keeps its process, a changed one restarts, a removed one
stops, an added one starts; a bad file is reported and the running
configuration kept.

Exit status: 0 stopped by SIGINT/SIGTERM, or (--once) every server ready;
1 (--once) a server parked; 2 usage error (bad flags, unreadable or invalid
configuration).`

func (a *app) hostCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "host --config FILE [flags]",
		Short: "Run the servers of a configuration file, restarting those that fail",
		Long: `Run every MCP server of the configuration FILE, each under its own
supervisor, answering their input requests with the handler flags, until
SIGINT or SIGTERM. Each state change is printed on stdout (starting, ready,
restarting, parked, stopped); with --json, one JSON object per line:
{"time","server","state","pid"?,"restarts","next_retry"?,"error"?,"tools",
"calls","input_requests","drops","tools_error"?}, and {"time","reload",
"servers"?,"error"?} for each reading of the file (SIGHUP, or a change on
disk).

With --once, start every server, wait until each is ready or parked, print
a status table (with --json, one object per server) and exit.`,
		Example: `  conduit host --config ~/.cursor/mcp.json
  conduit host --config mcp.json --once
  conduit host --config mcp.json --json --answers answers.json`,
		Annotations: map[string]string{"more": hostHelp + "\n\n" + answersHelp},
		Args:        cobra.NoArgs,
		RunE:        func(cmd *cobra.Command, _ []string) error { return a.runHost(cmd.Context()) },
	}
	c.Flags().SortFlags = false
	c.Flags().StringVar(&a.opts.config, "config", "", "run the servers of the configuration `FILE` (mcpServers or VS Code servers)")
	c.Flags().BoolVar(&a.opts.once, "once", false, "start every server, wait until each is ready or parked, print their status and exit (1 if any is parked)")
	a.maxMessageFlag(c.Flags())
	a.adminFlags(c.Flags())
	a.handlerFlags(c.Flags())
	return c
}

func (a *app) runHost(ctx context.Context) error {
	if a.opts.config == "" {
		return usagef("missing --config FILE")
	}
	return a.withHost(nil, func(h *host.Host, events <-chan host.Event, _ *auditor) error {
		if a.opts.once {
			if err := settle(ctx, h, events); err != nil {
				return err
			}
			status := h.Status()
			go func() {
				for range events { // Close delivers the stopped events before it returns
				}
			}()
			_ = h.Close()
			a.printStatus(status)
			var parked []string
			for _, st := range status {
				if st.State == host.StateParked {
					parked = append(parked, st.Server)
				}
			}
			if len(parked) > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("parked: %s", strings.Join(parked, ", "))}
			}
			return nil
		}
		reloads := make(chan reload)
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			logger := newLogger(a.stderr, a.opts.verbose, a.opts.json)
			watchConfig(ctx, a.opts.config, h, logger, func(r reload) {
				select {
				case reloads <- r:
				case <-ctx.Done():
				}
			})
		}()
		stopSignIns := a.signInServers(ctx, h) // at a terminal: those that need it
		if f, ok := a.std.out.(*os.File); ok && !a.opts.json && isTerminal(f) {
			a.liveTable(ctx, h, events, reloads)
		}
		printed := make(chan struct{})
		go func() {
			defer close(printed)
			for ev := range events {
				a.printEvent(ev)
			}
		}()
		for running := true; running; {
			select {
			case r := <-reloads:
				a.printReload(r)
			case <-ctx.Done():
				running = false
			}
		}
		<-watched
		stopSignIns()
		_ = h.Close() // its last events are the servers stopping
		<-printed
		return nil
	})
}

// printReload prints a reading of the configuration file: a line, or with
// --json an object {"time","reload","servers"?,"error"?}.
func (a *app) printReload(r reload) {
	if a.opts.json {
		ev := struct {
			Time    time.Time `json:"time"`
			Reload  string    `json:"reload"`
			Servers *int      `json:"servers,omitempty"`
			Error   string    `json:"error,omitempty"`
		}{Time: r.Time.UTC(), Reload: r.Why}
		if r.Err != nil {
			ev.Error = plain(r.Err)
		} else {
			ev.Servers = &r.Servers
		}
		b, _ := json.Marshal(ev)
		_ = a.write(append(b, '\n'))
		return
	}
	_ = a.write([]byte(reloadLine(a.opts.config, r) + "\n"))
}

// reloadLine is a reading of the configuration file in words.
func reloadLine(path string, r reload) string {
	at := r.Time.Format("15:04:05.000")
	if r.Err != nil {
		return fmt.Sprintf("%s reload (%s) failed, the running configuration is kept: %s", at, r.Why, oneLine(plain(r.Err)))
	}
	return fmt.Sprintf("%s reloaded %s (%s): %s", at, oneLine(path), r.Why, pluralize(r.Servers, "server"))
}

// withHost starts a host running the servers of --config (those pick
// keeps, when it is given, after checking the file and the arguments: its
// error stops everything before anything starts), with the handler set of
// the handler flags and the connection flags as defaults, runs do with it,
// its events and the audit hook of its clients, and closes it.
func (a *app) withHost(pick func(host.Config) (host.Config, error), do func(*host.Host, <-chan host.Event, *auditor) error) error {
	o := &a.opts
	if err := o.check(); err != nil {
		return err
	}
	metrics, err := a.adminMetrics()
	if err != nil {
		return err
	}
	logger := newLogger(a.stderr, o.verbose, o.json)
	o.warnConfigIgnored(logger)
	if o.logLevel != "" {
		logger.Warn("--log-level is not used with --config; ignored")
	}
	cfg, err := a.readConfig(logger)
	if err != nil {
		return err
	}
	if pick != nil {
		if cfg, err = pick(cfg); err != nil {
			return err
		}
	}
	handlers, audit, closeAudit, err := a.inputHandlers(logger, true)
	if err != nil {
		return err
	}
	defer closeAudit()
	warnRootsOverride(logger, cfg, handlers)
	// Each server's name is its ServerID.
	h, err := host.New(cfg, host.Options{Client: a.clientOptions(handlers, audit, logger), MaxMessageBytes: int(o.maxMessageBytes), ServerOptions: serverOptionsOf(metrics)})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer h.Close()
	stopAdmin, err := a.serveAdmin(h, metrics, admin.Options{Title: "conduit host"})
	if err != nil {
		return err
	}
	defer stopAdmin()
	events, cancel := h.Subscribe()
	defer cancel()
	return do(h, events, audit)
}

// readConfig reads the configuration of --config, its warnings to logger.
// Its errors are usage errors.
func (a *app) readConfig(logger *slog.Logger) (host.Config, error) {
	cfg, warnings, err := host.Load(a.opts.config)
	if err != nil {
		return cfg, &exitError{code: exitUsage, err: err}
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	return cfg, nil
}

// configFlag adds --config to c, among the connection flags.
func (a *app) configFlag(c *cobra.Command, usage string) {
	c.Flags().StringVar(&a.opts.config, "config", "", usage)
	_ = c.Flags().SetAnnotation("config", "group", []string{groupConnection})
}

// configOnly refuses --url or a server command beside --config.
func (a *app) configOnly(server []string) error {
	if a.opts.url != "" || len(server) > 0 {
		return usagef("give --config FILE, --url URL or -- COMMAND [ARGS...], not several")
	}
	return nil
}

// serverTool splits a tool named for a configuration: a namespaced name
// (SERVER__TOOL), which resolve splits, or else SERVER/TOOL. The namespaced
// name comes first: a tool's own name may hold a "/" ("user-profile/update").
func serverTool(name string, resolve func(string) (server, tool string, ok bool)) (server, tool string, ok bool) {
	if server, tool, ok = resolve(name); ok {
		return server, tool, true
	}
	if server, tool, ok = strings.Cut(name, "/"); ok {
		return server, tool, true
	}
	return "", "", false
}

// settle waits until every server is ready, parked or stopped.
func settle(ctx context.Context, h *host.Host, events <-chan host.Event) error {
	waiting := map[string]bool{}
	for _, st := range h.Status() {
		waiting[st.Server] = true
	}
	for len(waiting) > 0 {
		select {
		case ev := <-events:
			switch ev.State {
			case host.StateReady, host.StateParked, host.StateStopped, host.StateNeedsSignIn:
				delete(waiting, ev.Server)
			}
		case <-ctx.Done():
			return &exitError{code: exitFailed, err: errors.New("interrupted while the servers were starting")}
		}
	}
	return nil
}

// listed picks the servers a listing with --config runs: the one its
// argument names, or every one; each is parked at its first failure, not
// restarted, so that a crash-looping server is reported at once instead
// of holding the listing for its whole backoff (only conduit host keeps
// restarting it).
func listed(args []string) func(host.Config) (host.Config, error) {
	return func(cfg host.Config) (host.Config, error) {
		switch {
		case len(args) > 1:
			return cfg, usagef("too many arguments: %q (give at most one SERVER)", args[1:])
		case len(args) == 1:
			s, ok := cfg.Servers[args[0]]
			if !ok {
				return cfg, usagef("no server %q in the configuration: its servers are %s", args[0], strings.Join(slices.Sorted(maps.Keys(cfg.Servers)), ", "))
			}
			cfg.Servers = map[string]host.Server{args[0]: s}
		}
		for name, s := range cfg.Servers {
			s.Conduit.Restart.Intensity = 1
			cfg.Servers[name] = s
		}
		return cfg, nil
	}
}

// hostable completes a listing that also runs against the servers of
// --config (in place of --url or -- COMMAND), or against the one its
// argument names (onHost).
func (a *app) hostable(c *cobra.Command, direct func(cmd *cobra.Command, args, server []string) error, viaHost func(ctx context.Context, args []string, h *host.Host) error) *cobra.Command {
	c = a.command(c, func(cmd *cobra.Command, args, server []string) error {
		if a.opts.config == "" {
			return direct(cmd, args, server)
		}
		if err := a.configOnly(server); err != nil {
			return err
		}
		return a.onHost(cmd.Context(), listed(args), func(ctx context.Context, h *host.Host) error { return viaHost(ctx, args, h) })
	})
	a.configFlag(c, "use the servers of the configuration `FILE` (mcpServers or VS Code servers) in place of --url or -- COMMAND; tools and prompts are named SERVER__NAME")
	return c
}

// onHost runs do with a host of the servers of --config that pick keeps,
// once each is ready, parked (at its first failure: a warning) or
// disabled, and says what its servers dropped.
func (a *app) onHost(ctx context.Context, pick func(host.Config) (host.Config, error), do func(ctx context.Context, h *host.Host) error) error {
	return a.withHost(pick, func(h *host.Host, events <-chan host.Event, audit *auditor) error {
		if err := settle(ctx, h, events); err != nil {
			return err
		}
		// Before the host closes, which leaves no counters (what its
		// clients discard as they close is not counted).
		defer a.watchDrops(hostDrops(h))()
		logger := newLogger(a.stderr, a.opts.verbose, a.opts.json)
		for _, st := range h.Status() {
			if st.State == host.StateParked {
				logger.Warn(fmt.Sprintf("server %q is parked: %s", st.Server, plain(st.Err)))
			}
		}
		if err := do(ctx, h); err != nil {
			var ee *exitError
			if errors.As(err, &ee) {
				return err
			}
			return callFailed(ctx, err)
		}
		return nil
	})
}

// readAnywhere reads URI, named without its server, on the one server of
// --config that lists it among its resources: every server is started to
// find it (SERVER/URI starts only that one). Two servers listing it is a
// usage error that names them; none, a failed read.
func (a *app) readAnywhere(ctx context.Context, args []string) error {
	if len(args) > 1 {
		return usagef("too many arguments: %q", args[1:])
	}
	uri := args[0]
	return a.onHost(ctx, listed(nil), func(ctx context.Context, h *host.Host) error {
		resources, err := h.Resources(ctx)
		var servers []string
		for _, r := range resources {
			if r.URI == uri && !slices.Contains(servers, r.Server) {
				servers = append(servers, r.Server)
			}
		}
		switch len(servers) {
		case 0:
			if err != nil {
				return err
			}
			return &exitError{code: exitFailed, err: fmt.Errorf("no resource %q among the ready servers' resources: give SERVER/URI, or a URI that conduit resources --config lists", uri)}
		case 1:
		default:
			return usagef("resource %q is offered by %s: give SERVER/%s", uri, strings.Join(servers, " and "), uri)
		}
		res, err := h.ReadResource(ctx, servers[0], uri)
		if err != nil {
			return err
		}
		return a.printReadResult(res)
	})
}

// callAnywhere calls TOOL, named without its server, on the one server of
// --config that offers it: every server is started to find it (name one,
// SERVER/TOOL, to start only that one). Two servers offering it is a usage
// error that names them; none, a failed call.
func (a *app) callAnywhere(ctx context.Context, args []string) error {
	if len(args) > 2 {
		return usagef("too many arguments: %q", args[2:])
	}
	tool := args[0]
	var toolArgs json.RawMessage
	if len(args) == 2 {
		var err error
		if toolArgs, err = objectArg("ARGS_JSON", args[1]); err != nil {
			return err
		}
	}
	return a.onHost(ctx, listed(nil), func(ctx context.Context, h *host.Host) error {
		var servers []string
		for _, t := range h.Tools() {
			if t.ServerTool == tool {
				servers = append(servers, t.Server)
			}
		}
		switch len(servers) {
		case 0:
			return &exitError{code: exitFailed, err: fmt.Errorf("no tool %q among the ready servers' tools: give SERVER/TOOL, or a name that conduit tools --config lists", tool)}
		case 1:
		default:
			return usagef("tool %q is offered by %s: give SERVER/%s", tool, strings.Join(servers, " and "), tool)
		}
		return a.callTool(ctx, tool, toolArgs, func(ctx context.Context, tool string, args any, opts ...conduit.CallOption) (*conduit.CallToolResult, error) {
			return h.CallTool(ctx, servers[0], tool, args, opts...)
		})
	})
}

// hostDrops reads the drop counters of the host's servers, summed.
func hostDrops(h *host.Host) func() dropCounts {
	return func() dropCounts {
		var d dropCounts
		for _, st := range h.Status() {
			d.stats = d.stats.Add(st.Stats)
		}
		return d
	}
}

func (a *app) hostTools(_ context.Context, args []string, h *host.Host) error {
	tools := h.Tools()
	if a.opts.json {
		return a.printJSON(nonNil(tools))
	}
	a.noteDeclared()
	plainTools := make([]conduit.Tool, len(tools))
	for i, t := range tools {
		plainTools[i] = t.Tool
	}
	return a.table(toolRows(plainTools))
}

func (a *app) hostResources(ctx context.Context, args []string, h *host.Host) error {
	resources, err := h.Resources(ctx)
	if err != nil {
		return err
	}
	if a.opts.json {
		return a.printJSON(nonNil(resources))
	}
	// The server first: two servers may offer the same URI.
	return a.table(func(w io.Writer) {
		for _, r := range resources {
			fmt.Fprintf(w, "%s\t", oneLine(r.Server))
			resourceRows([]conduit.Resource{r.Resource})(w)
		}
	})
}

func (a *app) hostPrompts(ctx context.Context, args []string, h *host.Host) error {
	prompts, err := h.Prompts(ctx)
	if err != nil {
		return err
	}
	if a.opts.json {
		return a.printJSON(nonNil(prompts))
	}
	plainPrompts := make([]conduit.Prompt, len(prompts))
	for i, p := range prompts {
		plainPrompts[i] = p.Prompt
	}
	return a.table(promptRows(plainPrompts))
}

// hostEvent is an event as --json prints it.
type hostEvent struct {
	Time      time.Time  `json:"time"`
	Server    string     `json:"server"`
	State     host.State `json:"state"`
	PID       int        `json:"pid,omitempty"`
	Restarts  int        `json:"restarts"`
	NextRetry *time.Time `json:"next_retry,omitempty"`
	Error     string     `json:"error,omitempty"`
	// The counters of the table: tools in the catalog, tool calls through
	// the host, input requests, drops (notifications and logs), and why the
	// tools may be out of date.
	Tools         int    `json:"tools"`
	Calls         int64  `json:"calls"`
	InputRequests int64  `json:"input_requests"`
	Drops         int64  `json:"drops"`
	ToolsError    string `json:"tools_error,omitempty"`
	// ToolsChanged marks a refresh of a ready server's tools that changed
	// the catalog; its time is the refresh's.
	ToolsChanged bool `json:"tools_changed,omitempty"`
}

// eventOf is st as a JSON event; its time is when st's state began.
func eventOf(st host.Status) hostEvent {
	ev := hostEvent{Time: st.Since.UTC(), Server: st.Server, State: st.State, PID: st.PID, Restarts: st.Restarts,
		Tools: st.Tools, Calls: st.Calls, InputRequests: st.Stats.ServerRequests, Drops: drops(st)}
	if st.ToolsErr != nil {
		ev.ToolsError = plain(st.ToolsErr)
	}
	if !st.NextRetry.IsZero() {
		next := st.NextRetry.UTC()
		ev.NextRetry = &next
	}
	if st.Err != nil {
		ev.Error = plain(st.Err)
	}
	return ev
}

// jsonEvent is ev as --json prints it (and the admin listener's /events
// sends it): a state change, or a refresh of a ready server's tools.
func jsonEvent(ev host.Event) hostEvent {
	je := eventOf(ev.Status)
	if ev.ToolsChanged {
		je.Time, je.ToolsChanged = ev.Time.UTC(), true
	}
	return je
}

func (a *app) printEvent(ev host.Event) {
	if a.opts.json {
		b, _ := json.Marshal(jsonEvent(ev))
		_ = a.write(append(b, '\n'))
		return
	}
	line := eventLine(ev) + "\n"
	if ev.State == host.StateParked {
		for _, l := range ev.Stderr {
			line += fmt.Sprintf("  | %s\n", oneLine(l))
		}
	}
	_ = a.write([]byte(line))
}

// eventLine is a state change in words, on one line.
func eventLine(ev host.Event) string {
	var b strings.Builder
	if ev.ToolsChanged {
		fmt.Fprintf(&b, "%s %s tools changed: %s", ev.Time.Format("15:04:05.000"), oneLine(ev.Server), pluralize(ev.Tools, "tool"))
		if note := toolsNote(ev.Status); note != "" {
			fmt.Fprintf(&b, " (%s)", note)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%s %s %s", ev.Time.Format("15:04:05.000"), oneLine(ev.Server), ev.State)
	switch ev.State {
	case host.StateReady:
		if ev.PID != 0 {
			fmt.Fprintf(&b, " pid %d", ev.PID)
		}
		fmt.Fprintf(&b, ", %s", pluralize(ev.Tools, "tool"))
	case host.StateRestarting:
		fmt.Fprintf(&b, " in %s (attempt %d)", ev.NextRetry.Sub(ev.Time).Round(time.Millisecond), ev.Attempt)
	case host.StateParked:
		fmt.Fprintf(&b, " after %s", host.RestartsText(ev.Restarts))
		if !ev.NextRetry.IsZero() {
			fmt.Fprintf(&b, ", next try in %s", ev.NextRetry.Sub(ev.Time).Round(time.Second))
		}
	}
	if ev.Err != nil && ev.State != host.StateReady {
		fmt.Fprintf(&b, ": %s", oneLine(plain(ev.Err)))
	}
	return b.String()
}

// liveRecent is how many state changes the live table shows under it.
const liveRecent = 8

// liveTable redraws, until ctx ends, a status table at each state change
// and every second, with the last state changes under it.
func (a *app) liveTable(ctx context.Context, h *host.Host, events <-chan host.Event, reloads <-chan reload) {
	var recent []string
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case ev := <-events:
			recent = append(recent, eventLine(ev))
			recent = recent[max(0, len(recent)-liveRecent):]
		case r := <-reloads:
			recent = append(recent, reloadLine(a.opts.config, r))
			recent = recent[max(0, len(recent)-liveRecent):]
		case <-tick.C:
		case <-ctx.Done():
			_ = a.write([]byte("\n"))
			return
		}
		var screen bytes.Buffer
		screen.WriteString("\x1b[H\x1b[2J") // home, clear the screen
		screen.Write(tableText(liveRows(h.Status(), time.Now())))
		screen.WriteString("\n" + strings.Join(recent, "\n") + "\n")
		out := cutLines(screen.Bytes(), terminalWidth(a.std.out))
		if p := a.signingIn.Load(); p != nil {
			out = append(out, "\n"+*p...) // uncut: its URL must stay whole
		}
		_ = a.write(out)
	}
}

// liveRows are the rows of the live table: state, uptime, restarts,
// calls, input requests, drops, and what comes next or went wrong.
func liveRows(status []host.Status, now time.Time) func(io.Writer) {
	return func(w io.Writer) {
		fmt.Fprintln(w, "SERVER\tSTATE\tPID\tUPTIME\tRESTARTS\tTOOLS\tCALLS\tINPUT\tDROPS\tNOTE")
		for _, st := range status {
			uptime, note := "-", ""
			switch st.State {
			case host.StateReady:
				uptime = now.Sub(st.Since).Truncate(time.Second).String()
				note = toolsNote(st)
			case host.StateRestarting:
				note = fmt.Sprintf("next try in %s (attempt %d)", max(0, st.NextRetry.Sub(now)).Round(100*time.Millisecond), st.Attempt)
			case host.StateNeedsSignIn:
				note = firstLine(plain(st.Err))
			case host.StateParked:
				note = firstLine(plain(st.Err))
				if !st.NextRetry.IsZero() {
					note = fmt.Sprintf("next try in %s: %s", max(0, st.NextRetry.Sub(now)).Round(time.Second), note)
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", oneLine(st.Server), st.State, pidText(st), uptime, st.Restarts, st.Tools, st.Calls, st.Stats.ServerRequests, drops(st), note)
		}
	}
}

// printStatus prints a status table, or one JSON object per server.
func (a *app) printStatus(status []host.Status) {
	if a.opts.json {
		var b bytes.Buffer
		for _, st := range status {
			line, _ := json.Marshal(eventOf(st))
			b.Write(append(line, '\n'))
		}
		_ = a.write(b.Bytes())
		return
	}
	_ = a.table(func(w io.Writer) {
		fmt.Fprintln(w, "SERVER\tSTATE\tPID\tRESTARTS\tTOOLS\tCALLS\tINPUT\tDROPS\tERROR")
		for _, st := range status {
			errText := ""
			if st.Err != nil {
				errText = firstLine(plain(st.Err))
			} else if st.State == host.StateReady {
				errText = toolsNote(st)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", oneLine(st.Server), st.State, pidText(st), st.Restarts, st.Tools, st.Calls, st.Stats.ServerRequests, drops(st), errText)
		}
	})
}

// toolsNote says that a ready server's tools in the catalog may be out of
// date, and why; "" when they are not.
func toolsNote(st host.Status) string {
	if st.ToolsErr == nil {
		return ""
	}
	return "tools out of date: " + firstLine(plain(st.ToolsErr))
}

// pidText is st's process id for a table, "-" when it has none.
func pidText(st host.Status) string {
	if st.PID == 0 {
		return "-"
	}
	return fmt.Sprint(st.PID)
}

// drops is what st's connection dropped: notifications and log entries.
func drops(st host.Status) int64 {
	return st.Stats.NotificationsDropped + st.Stats.LogsDropped
}

// terminalWidth is w's width in columns when it is a terminal, else 0.
func terminalWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return width
}

// cutLines cuts every line of b to width runes, so that a long one does
// not wrap onto the next row of a table redrawn in place; 0 cuts nothing.
func cutLines(b []byte, width int) []byte {
	if width <= 0 {
		return b
	}
	var out bytes.Buffer
	for line := range strings.Lines(string(b)) {
		text, nl := strings.CutSuffix(line, "\n")
		if utf8.RuneCountInString(text) > width {
			text = string([]rune(text)[:width])
		}
		out.WriteString(text)
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// warnRootsOverride warns of a stdio server whose arguments name
// directories (server-filesystem's allowed directories, say) when the roots
// it would be offered do not hold them: a server that takes roots uses them
// in place of its own, so the current directory (what a terminal or
// --roots offers) would silently replace the configured one.
func warnRootsOverride(logger *slog.Logger, cfg host.Config, handlers conduit.Handlers) {
	if handlers.Roots == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Servers)) {
		s := cfg.Servers[name]
		if s.Command == "" || s.Conduit.Roots != nil || s.Conduit.Disabled {
			continue // the server's own roots answer for it
		}
		var dirs []string
		for _, arg := range s.Args {
			if fi, err := os.Stat(arg); err == nil && fi.IsDir() && filepath.IsAbs(arg) {
				dirs = append(dirs, arg)
			}
		}
		if len(dirs) == 0 {
			continue
		}
		res, err := handlers.Roots(context.Background(), &conduit.RootsRequest{RequestContext: conduit.RequestContext{ServerID: name}})
		if err != nil || res == nil {
			continue
		}
		offered := map[string]bool{}
		for _, r := range res.Roots {
			offered[strings.TrimSuffix(r.URI, "/")] = true
		}
		var missing []string
		for _, d := range dirs {
			root, err := parseRoots([]string{d}) // as --roots would offer it
			if err == nil && !offered[strings.TrimSuffix(root[0].URI, "/")] {
				missing = append(missing, d)
			}
		}
		if len(missing) > 0 {
			logger.Warn(fmt.Sprintf(`server %q: its arguments name %s, but it is offered other roots, which a server that takes roots uses in their place; give it its own with "conduit": {"roots": [...]} in the file, or a "servers" entry in the answers file`, name, strings.Join(missing, ", ")))
		}
	}
}
