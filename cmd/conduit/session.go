package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/transport"
	"github.com/conduitmcp/conduit/transport/oauth"
)

// options are the values of every flag; one command runs per process, so
// the commands share one set.
type options struct {
	// connection
	url             string
	serverID        string
	era             string
	protocolVersion string
	tasks           bool // --tasks: run a call as a task whenever the tool allows
	noTasks         bool // --no-tasks: never run a call as a task
	timeout         time.Duration
	maxTotalTimeout time.Duration
	maxMessageBytes messageSize
	headers         []string
	transport       string // --transport: "" (stdio, or Streamable HTTP falling back to HTTP+SSE), stdio, http, sse
	// handler
	answers           string
	roots             []string
	handlerTimeout    time.Duration
	maxServerRequests int
	audit             string
	samplingCommand   string
	yes               bool
	logLevel          string
	json              bool
	raw               bool // --raw: the server's text on stdout as it wrote it, even at a terminal
	scripted          bool // demo: the built-in handler even at a terminal
	// host
	config string
	once   bool
	admin  adminOptions // --admin, --admin-token (host, gateway)
	// global
	verbose int

	// maxWriteQueueBytes is --max-write-queue-bytes (0: the default).
	maxWriteQueueBytes messageSize
}

// logLevels are the RFC 5424 levels of logging/setLevel.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// check validates the flags that do not need the server command.
func (o *options) check() error {
	if o.url != "" {
		if _, err := transport.ParseEndpoint(o.url); err != nil {
			return usagef("--url %q: want an http:// or https:// URL with a host", o.url)
		}
	}
	switch o.transport {
	case "", "stdio", "http", "sse":
	default:
		return usagef("--transport %q: want stdio, http or sse", o.transport)
	}
	switch o.era {
	case "auto", "legacy", "modern":
	default:
		return usagef("--era %q: want auto, legacy or modern", o.era)
	}
	if o.transport == "sse" && o.era == "modern" {
		return usagef("--transport sse carries the legacy era only, not --era modern")
	}
	if v := o.protocolVersion; v != "" {
		e, ok := era.Of(v)
		if !ok {
			all := append(slices.Clone(era.ModernVersions), era.LegacyVersions...)
			return usagef("--protocol-version %q: want one of %s", v, strings.Join(all, ", "))
		}
		if o.era != "auto" && o.era != string(e) {
			return usagef("--protocol-version %s is not of the %s era", v, o.era)
		}
	}
	if o.tasks && o.noTasks {
		return usagef("give --tasks or --no-tasks, not both")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--timeout", o.timeout}, {"--max-total-timeout", o.maxTotalTimeout}, {"--handler-timeout", o.handlerTimeout}} {
		if d.v < 0 {
			return usagef("%s %s: must be positive", d.name, d.v)
		}
	}
	if o.maxServerRequests < 0 {
		return usagef("--max-server-requests %d: must be positive", o.maxServerRequests)
	}
	if o.url != "" {
		if u, err := url.Parse(o.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url %q: want an http:// or https:// URL, such as http://127.0.0.1:8080/mcp", o.url)
		}
	}
	for _, h := range o.headers {
		if k, _, ok := strings.Cut(h, "="); !ok || strings.TrimSpace(k) == "" {
			return usagef("--header %q: want NAME=VALUE", h)
		}
	}
	if o.logLevel != "" && !slices.Contains(logLevels, o.logLevel) {
		return usagef("--log-level %q: want one of %s", o.logLevel, strings.Join(logLevels, ", "))
	}
	return nil
}

// warnConfigIgnored warns about the connection flags that the servers of
// --config do not take: the file gives each server its headers, and its
// name is its id.
func (o *options) warnConfigIgnored(logger *slog.Logger) {
	if len(o.headers) > 0 {
		logger.Warn("--header is not used with --config (a server's headers are in the file); ignored")
	}
	if o.serverID != "" {
		logger.Warn("--server-id is not used with --config (each server's name is its id); ignored")
	}
}

// connection is what a command needs to connect to the server: the
// transport, the client's options (handlers, audit hook, limits) and the
// logs. close releases the audit file.
type connection struct {
	transport transport.Transport
	options   conduit.Options
	logger    *slog.Logger
	tail      *stderrTail
	audit     *auditor // counts what the drop summaries need beyond Stats
	close     func()
}

// configTarget is one server of the --config file.
type configTarget struct {
	cfg  host.Config
	name string
}

// setup checks the connection and handler flags and builds the connection
// to the server named by --url, by server (the words after --) or, when
// target is not nil, by target. With interactive, a terminal without
// --answers answers the input requests itself; otherwise only the answers
// file, --roots and --sampling-command do. Its errors carry their exit
// status.
func (a *app) setup(server []string, target *configTarget, interactive bool) (*connection, error) {
	o := &a.opts
	if err := o.check(); err != nil {
		return nil, err
	}
	switch {
	case target != nil:
	case o.url != "" && len(server) > 0:
		return nil, usagef("give either --url URL or -- COMMAND [ARGS...], not both")
	case o.url != "" && o.transport == "stdio":
		return nil, usagef("--transport stdio takes -- COMMAND [ARGS...], not --url")
	case o.url != "":
	case o.transport == "http" || o.transport == "sse":
		return nil, usagef("--transport %s needs --url URL", o.transport)
	case len(server) == 0 || server[0] == "":
		return nil, usagef("no server: give --url URL, or its command after the arguments, following --: -- COMMAND [ARGS...]")
	}
	logger := newLogger(a.stderr, o.verbose, o.json)
	switch {
	case target != nil:
		o.warnConfigIgnored(logger)
	case len(o.headers) > 0 && o.url == "":
		logger.Warn("--header is only used with --url (HTTP); ignored for a stdio server")
	}

	handlers, audit, closeAudit, err := a.inputHandlers(logger, interactive)
	if err != nil {
		return nil, err
	}

	if a.hooks != nil {
		a.hooks(&handlers)
	}
	options := a.clientOptions(handlers, audit, logger)
	tail := &stderrTail{}
	var t transport.Transport
	switch {
	case a.server != nil:
		t = a.server
	case target != nil:
		// The server's settings over the flags, its name as ServerID.
		if t, options, err = target.cfg.Connection(target.name, options); err != nil {
			closeAudit()
			return nil, &exitError{code: exitUsage, err: err}
		}
	case o.url == "":
		t = &transport.Command{Path: server[0], Args: server[1:]}
	default:
		header := http.Header{}
		for _, h := range o.headers {
			k, v, _ := strings.Cut(h, "=")
			header.Add(strings.TrimSpace(k), v)
		}
		switch o.transport {
		case "sse":
			t = &transport.SSE{URL: o.url, Header: header}
		case "http":
			t = &transport.HTTP{URL: o.url, Header: header}
		default: // see docs/decisions.md: the fallback is on unless --transport http
			t = &transport.HTTP{URL: o.url, Header: header, SSEFallback: true}
		}
	}
	switch t := t.(type) {
	case *transport.Command:
		t.MaxMessageBytes = int(o.maxMessageBytes)
		t.Logger = slog.New(tailHandler{next: options.Logger.Handler(), tail: tail})
	case *transport.HTTP:
		t.MaxBodyBytes, t.MaxEventBytes, t.Logger = int(o.maxMessageBytes), int(o.maxMessageBytes), options.Logger
		oauth.Attach(t, oauth.Config{Store: tokenStore()}) // stored tokens; sign-in is `conduit login`'s
	case *transport.SSE:
		t.MaxEventBytes, t.Logger = int(o.maxMessageBytes), options.Logger
	}
	return &connection{
		transport: t,
		options:   options,
		logger:    logger,
		tail:      tail,
		audit:     audit,
		close:     closeAudit,
	}, nil
}

// clientOptions are the client options of the connection and handler
// flags, with handlers and the audit hook.
func (a *app) clientOptions(handlers conduit.Handlers, audit *auditor, logger *slog.Logger) conduit.Options {
	o := &a.opts
	a.declared = handlers
	return conduit.Options{
		ServerID:          o.serverID,
		Handlers:          handlers,
		HandlerTimeout:    o.handlerTimeout,
		MaxServerRequests: o.maxServerRequests,
		Timeout:           o.timeout,
		MaxTotalTimeout:   o.maxTotalTimeout,
		ProtocolVersion:   o.protocolVersion,
		Era:               eraOption(o.era),
		Tasks:             !o.noTasks,
		Logger:            logger,
		Audit:             audit.record,

		MaxWriteQueueBytes: int(o.maxWriteQueueBytes),
		TracerProvider:     a.tracerProvider(),
	}
}

// session connects to the server named by --url or by server (the words
// after --), runs do with the client, and closes the client. Its errors
// carry their exit status.
func (a *app) session(ctx context.Context, server []string, do func(context.Context, *conduit.Client) error) error {
	o := &a.opts
	su, err := a.setup(server, a.target, true)
	if err != nil {
		return err
	}
	defer su.close()
	logger, tail := su.logger, su.tail
	client, err := signInAndRetry(ctx, a, oauthOf(a.target), func(ctx context.Context) (*conduit.Client, error) {
		return conduit.Connect(ctx, su.transport, su.options) // a sign-in at a TTY, then once more
	})
	if err != nil {
		a.showTail(logger, tail, err)
		return sizeHint(connectFailed(ctx, err))
	}
	finishDrops := a.watchDrops(clientDrops(client))
	defer func() {
		if err := client.Close(); err != nil {
			logger.Debug("close", "err", err)
		}
		finishDrops()
	}()
	info := client.ServerInfo()
	logger.Info("connected", "server", info.Name, "server_version", info.Version, "protocol_version", client.ProtocolVersion(), "era", client.Era())

	if o.logLevel != "" {
		switch {
		case !hasCapability(client.ServerCapabilities(), "logging"):
			logger.Warn("the server does not offer logging; --log-level ignored", "server", info.Name)
		default:
			if err := client.SetLogLevel(ctx, o.logLevel); err != nil {
				if ctx.Err() != nil {
					return callFailed(ctx, err)
				}
				logger.Warn("logging/setLevel failed; continuing", "err", err)
			}
		}
	}

	if err := do(ctx, client); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		var ce *conduit.Error
		if errors.As(err, &ce) && ce.Kind == conduit.KindTransport {
			a.showTail(logger, tail, err)
		}
		return sizeHint(callFailed(ctx, err))
	}
	return nil
}

// inputHandlers builds the handler set of the handler flags (the answers
// file, --roots, --sampling-command, or, with interactive, the person at
// the terminal) and the audit hook; closeAudit closes the --audit file. Its
// errors are usage errors.
func (a *app) inputHandlers(logger *slog.Logger, interactive bool) (conduit.Handlers, *auditor, func(), error) {
	o := &a.opts
	var flagRoots []conduit.Root
	if len(o.roots) > 0 {
		var err error
		if flagRoots, err = parseRoots(o.roots); err != nil {
			return conduit.Handlers{}, nil, nil, usagef("--roots: %v", err)
		}
	}
	var ans *answers
	if o.answers != "" {
		var err error
		if ans, err = loadAnswers(o.answers); err != nil {
			return conduit.Handlers{}, nil, nil, err
		}
	}
	n := &notifier{w: a.stderr, json: o.json, logger: logger}
	cmd := samplingCommand{command: o.samplingCommand, yes: o.yes}
	handlers := newHandlers(n, ans, flagRoots, cmd)
	if interactive && ans == nil && isTerminal(a.std.in) {
		// At a terminal without --answers, the person answers every kind
		// of input (interactive.go); the prompts go to stderr, stdout
		// keeping the result.
		roots, err := rootsOrCwd(flagRoots)
		if err != nil {
			return conduit.Handlers{}, nil, nil, err
		}
		ih := newInteractiveHandler(a.std.in, a.std.err, roots, flagRoots != nil, o.handlerTimeout)
		ih.samplingCommand = cmd
		handlers = ih.handlers()
		handlers.Notification, handlers.Log, handlers.Progress = n.HandleNotification, n.HandleLog, n.HandleProgress
	}
	warnMissingRoots(logger, o.roots)
	if ans != nil {
		warnMissingRoots(logger, ans.rootEntries)
	}

	audit := &auditor{logger: logger}
	if o.audit != "" {
		f, err := os.OpenFile(o.audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return conduit.Handlers{}, nil, nil, usagef("--audit: %v", err)
		}
		audit.file = f
	}
	closeAudit := func() {
		if audit.file == nil {
			return
		}
		if err := audit.file.Close(); err != nil {
			logger.Error("audit file", "err", err)
		}
	}
	return handlers, audit, closeAudit, nil
}

// rootsOrCwd is the roots offered by a handler that offers roots even
// without --roots (the interactive and the demo's built-in ones): those of
// --roots, else the current directory.
func rootsOrCwd(flagRoots []conduit.Root) ([]conduit.Root, error) {
	if flagRoots != nil {
		return flagRoots, nil
	}
	cwd, err := parseRoots([]string{"."})
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	return cwd, nil
}

// warnMissingRoots warns about directory roots (not URIs) that do not
// exist: most likely a typo, since a stdio server shares our file system.
// They are offered all the same.
func warnMissingRoots(logger *slog.Logger, entries []string) {
	for _, e := range entries {
		if isURI(e) {
			continue
		}
		if fi, err := os.Stat(e); err != nil || !fi.IsDir() {
			logger.Warn("root is not a directory; offered all the same", "root", e)
		}
	}
}

// showTail prints the server's last stderr lines when they were hidden
// (no -v) and err, the failure, does not carry them already (the exit
// error of a stdio server does): they usually say why it failed.
func (a *app) showTail(logger *slog.Logger, tail *stderrTail, err error) {
	lines := tail.get()
	var exit *transport.ServerExitError
	if len(lines) == 0 || a.opts.verbose > 0 || errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return
	}
	if a.opts.json {
		logger.Warn("server stderr", "lines", lines)
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "the server's last stderr lines:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  | %s\n", sanitize.Text(l, 0))
	}
	_, _ = a.stderr.Write([]byte(b.String()))
}

// hasCapability reports whether the server's capabilities name key.
func hasCapability(caps json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}

// auditor is the Audit hook: it appends each record to the --audit file,
// one JSON object per line, and points out requests refused because the
// kind was not offered. The library calls it one record at a time; the
// mutex guards against a future that does not.
type auditor struct {
	mu     sync.Mutex
	file   *os.File
	logger *slog.Logger
}

// answerKeys names the answers-file key of each kind of input request.
var answerKeys = map[string]string{
	"sampling/createMessage": `"sampling"`,
	"elicitation/create":     `"elicitation"`,
	"roots/list":             `"roots" (or --roots)`,
}

func (au *auditor) record(rec conduit.AuditRecord) {
	if key, ok := answerKeys[rec.Method]; ok && rec.Outcome == "refused" && rec.Code != nil && *rec.Code == -32601 {
		au.logger.Warn(fmt.Sprintf("the server asked for %s, which this client does not offer: add %s to an --answers file", rec.Method, key))
	}
	if au.file == nil {
		return
	}
	b, err := json.Marshal(rec)
	if err != nil {
		au.logger.Error("audit record could not be encoded", "method", rec.Method, "err", err)
		return
	}
	au.mu.Lock()
	defer au.mu.Unlock()
	if _, err := au.file.Write(append(b, '\n')); err != nil {
		au.logger.Error("audit file", "err", err)
	}
}

// eraOption maps --era to Options.Era ("" probes).
func eraOption(flag string) conduit.Era {
	switch flag {
	case "legacy":
		return conduit.EraLegacy
	case "modern":
		return conduit.EraModern
	}
	return ""
}

// configServer splits name, which names a server of cfg and a thing
// (what: TOOL, PROMPT, URI) there as SERVER/NAME or SERVER__NAME, into the
// server to connect to and the thing's own name. A name that names no
// enabled server of the file is a usage error, found before anything
// starts.
func (a *app) configServer(cfg host.Config, what, name string) (*configTarget, string, error) {
	split := func(name string) (string, string, bool) { return cfg.Split(name, host.DefaultSeparator) }
	server, local, ok := serverTool(name, split)
	if _, known := cfg.Servers[server]; !ok || !known {
		return nil, "", usagef("%q: want SERVER/%s or SERVER__%s, with SERVER one of %s's servers: %s",
			name, what, what, a.opts.config, strings.Join(slices.Sorted(maps.Keys(cfg.Servers)), ", "))
	}
	if cfg.Servers[server].Conduit.Disabled {
		return nil, "", usagef("server %q is disabled in %s", server, a.opts.config)
	}
	return &configTarget{cfg: cfg, name: server}, local, nil
}

// oneServer completes a command whose first argument names a thing on
// one server (call's TOOL, read's URI, prompt's NAME): with --config, that
// argument names the server too (SERVER/NAME or SERVER__NAME), and only
// that server is started; direct then runs as against --url or a command.
func (a *app) oneServer(c *cobra.Command, what string, direct func(cmd *cobra.Command, args, server []string) error) *cobra.Command {
	c = a.command(c, func(cmd *cobra.Command, args, server []string) error {
		if a.opts.config == "" || len(args) == 0 {
			return direct(cmd, args, server)
		}
		if err := a.configOnly(server); err != nil {
			return err
		}
		cfg, err := a.readConfig(newLogger(a.stderr, a.opts.verbose, a.opts.json))
		if err != nil {
			return err
		}
		target, local, err := a.configServer(cfg, what, args[0])
		if err != nil {
			// No server named: find the one that offers it. A URI holds
			// "/" of its own: its first segment is a server or not one.
			server, _, named := serverTool(args[0], func(n string) (string, string, bool) { return cfg.Split(n, host.DefaultSeparator) })
			_, known := cfg.Servers[server]
			switch {
			case what == "TOOL" && !named:
				return a.callAnywhere(cmd.Context(), args)
			case what == "URI" && !known:
				return a.readAnywhere(cmd.Context(), args)
			}
			return err
		}
		a.target = target
		return direct(cmd, append([]string{local}, args[1:]...), nil)
	})
	a.configFlag(c, fmt.Sprintf("use a server of the configuration `FILE` (mcpServers or VS Code servers), named in %s as SERVER/%s or SERVER__%s, in place of --url or -- COMMAND; only that server is started", what, what, what))
	return c
}

// noteDeclared says on stderr, for a listing of tools, which kinds of input
// the client declared when it did not declare them all: a server may list
// only the tools it can run with what a client declares (npm
// server-everything lists 13 of its 17 tools to a client with none).
func (a *app) noteDeclared() {
	if a.opts.json {
		return
	}
	h := a.declared
	var yes, no []string
	for _, k := range []struct {
		name string
		set  bool
	}{{"sampling", h.Sampling != nil}, {"elicitation", h.Elicitation != nil}, {"roots", h.Roots != nil}} {
		if k.set {
			yes = append(yes, k.name)
		} else {
			no = append(no, k.name)
		}
	}
	if len(no) == 0 {
		return
	}
	declared := "no sampling, elicitation or roots"
	if len(yes) > 0 {
		declared = strings.Join(yes, " and ") + ", not " + strings.Join(no, " or ")
	}
	fmt.Fprintf(a.stderr, "conduit: note: this client declared %s: a server may list only the tools it can run with what a client declares (answer at a terminal, or give --answers FILE or --roots)\n", declared)
}
