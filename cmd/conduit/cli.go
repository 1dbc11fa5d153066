package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/sanitize"
	"github.com/conduitmcp/conduit/transport"
)

// app is one run of the CLI.
type app struct {
	std    streams
	stderr *lockedWriter // shared by logs, server log entries and the final error
	opts   options
	// cleanOut: stdout is a terminal and --raw was not given, so the
	// server's text printed there goes through sanitize.Lines.
	cleanOut bool
	// server, when set, is connected to instead of --url or the command
	// after -- (which must still be given): tests reach an in-memory
	// server through it.
	server transport.Transport
	// target is the server of --config that the command's arguments name,
	// once oneServer has found it; session connects to it.
	target *configTarget
	// declared is the handler set the client was given (clientOptions):
	// what it declares.
	declared conduit.Handlers
	// hooks, when set, adds a command's own hooks to the handler set
	// (conduit watch).
	hooks func(*conduit.Handlers)
	// tracing is the clients' tracer provider (tracing.go).
	tracing tracing
	// signingIn is what a sign-in in progress asks of the person (the live table shows it).
	signingIn atomic.Pointer[string]
}

// run executes the CLI with args (without the program name) and returns the
// exit status.
func run(ctx context.Context, args []string, std streams) int {
	return newApp(std).run(ctx, args)
}

func newApp(std streams) *app { return &app{std: std, stderr: &lockedWriter{w: std.err}} }

func (a *app) run(ctx context.Context, args []string) int {
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(a.std.in)
	root.SetOut(a.std.out)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	a.flushTraces()
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if a.opts.json {
		b, _ := json.Marshal(reportOf(err))
		// Escaped here too: a flag error ends the run before setUpOutput.
		_, _ = a.stderr.Write(append(sanitize.JSON(b), '\n'))
		return code
	}
	msg := "conduit: " + errorLine(err, code) + "\n"
	if code == exitUsage {
		c, _, ferr := root.Find(args)
		if ferr != nil || c == nil {
			c = root
		}
		msg += fmt.Sprintf("Run '%s --help' for usage.\n", c.CommandPath())
	}
	_, _ = a.stderr.Write([]byte(msg))
	return code
}

const exitStatusHelp = `Exit status: 0 success; 1 the call failed (JSON-RPC error, timeout, input
handler error, tool result with isError, interrupted); 2 usage error (bad flags or
arguments, unreadable or invalid answers file, a server --config does not run);
3 could not connect (the server could not be started, or the handshake failed).`

const answersHelp = `Answering the server's input requests:
  At a terminal (stdin is one) and without --answers, you answer each request
  yourself, on stderr: a form field by field, consent for a URL (never opened
  unless you choose to), a reply to a completion request; the current
  directory is offered as the root (or --roots). With --answers FILE the
  requests are answered from the file, never interactively: only the kinds
  present in the file are offered to the server (the others are refused).
  Without a terminal and without --answers, the client offers no sampling and
  no elicitation, and roots only with --roots. --sampling-command, when given,
  writes the completions in every case. The file:

  {"sampling":    {"result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "scripted"}, "delay": "0s"},
   "elicitation": {"modes": ["form", "url"], "action": "accept", "content": {"name": "Ada"}, "delay": "0s"},
   "roots":       ["/srv/repo", "file:///home/me/notes"]}

  "error": {"code": N, "message": "..."} in place of "result" (sampling) or of
  "action" (elicitation) refuses with that JSON-RPC error. "modes" defaults to
  ["form"]; "content" is sent with a form-mode accept only. "delay" waits before
  answering: a Go duration, or a distribution (see 'conduit load --help'). A
  root that is not a URI is a directory, relative to the current directory,
  offered as a file:// URI; --roots come first. "servers": {"ID": {...}}
  gives one server (its --config name, or --server-id) answers of its own,
  with the same keys, over the file's.

Diagnostics go to stderr: warnings and errors by default; -v adds Conduit's
info logs and the server's own stderr, -vv debug logs. What the client dropped
(log entries over the rate limit, notifications over the queue, input requests
refused as busy or over budget, malformed messages) is said there too, per
kind, when the command ends and at most every 10 s while it runs.`

// serverArgs ends the usage line of a command that talks to a server.
const serverArgs = "(--url URL | -- COMMAND [ARGS...])"

// flag groups, for the help.
const (
	groupConnection = "Connection flags"
	groupHandler    = "Handler flags"
)

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "conduit",
		Short: "An MCP client that answers the server's requests for input",
		Long: `conduit connects to an MCP server, calls a tool (or lists and reads what the
server offers), answers the server's requests for input (sampling, elicitation,
roots) and prints the result. At a terminal you answer each request yourself;
--answers FILE answers them from a scripted file.

Give the server as a command after -- (a subprocess speaking stdio) or as
--url URL (Streamable HTTP, falling back to the older HTTP+SSE transport when
the server refuses it; --transport picks one). conduit demo needs neither: it
runs an embedded server that asks for every kind of input.`,
		Annotations: map[string]string{"more": exitStatusHelp},
		Example: `  conduit demo
  conduit tools -- everything-server
  conduit call --answers answers.json test_sampling '{"prompt":"hi"}' -- everything-server
  conduit call --url http://127.0.0.1:8080/mcp test_simple_text`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: a.setUpOutput,
	}
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usagef("%v", err) })
	root.PersistentFlags().CountVarP(&a.opts.verbose, "verbose", "v", "``more diagnostics on stderr: -v adds Conduit's info logs and the server's stderr, -vv debug logs (default: warnings and errors only)")
	root.SetUsageFunc(a.usage)

	root.AddCommand(a.loginCommand(), a.logoutCommand())
	root.AddCommand(
		a.rawFlag(a.oneServer(&cobra.Command{
			Use:   "call [flags] TOOL [ARGS_JSON] " + serverArgs,
			Short: "Call a tool, answer its input requests, print the result",
			Long: `Call the tool TOOL with the arguments ARGS_JSON (a JSON object; none when
omitted), answering the server's input requests, and print the result: each
text block's text on its own line, any other block as compact JSON, then the
structured content as JSON. At a terminal the text is shown without its
escape sequences and control characters (--raw prints it as written). With
--json, the whole CallToolResult as JSON.
A result with isError is printed and exits 1.

A tool that runs as a task (2025-11-25: execution.taskSupport "required"; modern:
the server's choice) runs as one with no flag: the task is awaited, its input
requests answered like any other, its status shown on stderr like progress
("task ID STATUS: message"). --tasks also runs "optional" ones as tasks;
--no-tasks runs none (a tool that requires a task then fails).`,
			Example: `  conduit call test_simple_text -- everything-server
  conduit call --answers answers.json --json test_sampling '{"prompt":"hi"}' -- everything-server
  conduit call --url http://127.0.0.1:8080/mcp test_simple_text`,
		}, "TOOL", a.runCall)),
		a.hostable(&cobra.Command{
			Use:   "tools [flags] " + serverArgs,
			Short: "List the server's tools",
			Long:  "List the server's tools: one per line, name and the first line of its description. With --json, the JSON array of tools.",
		}, a.runTools, a.hostTools),
		a.hostable(&cobra.Command{
			Use:   "resources [flags] " + serverArgs,
			Short: "List the server's resources",
			Long:  "List the server's resources: one per line, URI, name and the first line of its description. With --json, the JSON array of resources.",
		}, a.runResources, a.hostResources),
		a.hostable(&cobra.Command{
			Use:   "prompts [flags] " + serverArgs,
			Short: "List the server's prompts",
			Long:  "List the server's prompts: one per line, name, arguments (required ones marked *) and the first line of its description. With --json, the JSON array of prompts.",
		}, a.runPrompts, a.hostPrompts),
		a.rawFlag(a.oneServer(&cobra.Command{
			Use:   "read [flags] URI " + serverArgs,
			Short: "Read a resource",
			Long:  "Read the resource URI and print its contents: text as is (at a terminal, without its escape sequences and control characters: see --raw), anything else as compact JSON. With --json, the whole ReadResourceResult. With --config FILE, URI is SERVER/URI.",
		}, "URI", a.runRead)),
		a.rawFlag(a.oneServer(&cobra.Command{
			Use:   "prompt [flags] NAME [ARGS_JSON] " + serverArgs,
			Short: "Get a prompt",
			Long:  "Get the prompt NAME with the arguments ARGS_JSON (a JSON object of strings) and print its messages, one per line as \"[role] text\" (at a terminal, without escape sequences and control characters: see --raw). With --json, the whole GetPromptResult. With --config FILE, NAME is SERVER/NAME or SERVER__NAME, as conduit prompts --config lists it.",
		}, "PROMPT", a.runPrompt)),
		a.templatesCommand(),
		a.completeCommand(),
		a.hostCommand(),
		a.gatewayCommand(),
		a.conformanceCommand(),
		a.demoCommand(),
		a.loadCommand(),
		a.watchCommand(),
	)
	return root
}

// command completes a server command: the connection and handler flags,
// the help, and the split of the arguments at --.
func (a *app) command(c *cobra.Command, do func(cmd *cobra.Command, args, server []string) error) *cobra.Command {
	c.Annotations = map[string]string{"more": answersHelp + "\n\n" + exitStatusHelp}
	c.Flags().SortFlags = false
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, all []string) error {
		args, server := all, []string(nil)
		if n := cmd.ArgsLenAtDash(); n >= 0 {
			args, server = all[:n], all[n:]
			if len(server) == 0 {
				return usagef("no server command after --")
			}
		}
		return do(cmd, args, server)
	}
	a.connectionFlags(c.Flags())
	a.handlerFlags(c.Flags())
	return c
}

func (a *app) connectionFlags(fs *pflag.FlagSet) {
	o := &a.opts
	group := func(name string) { _ = fs.SetAnnotation(name, "group", []string{groupConnection}) }
	fs.StringVar(&o.url, "url", "", "connect to the Streamable HTTP endpoint at `URL` (instead of -- COMMAND); a server that refuses initialize there with a 4xx is tried on the deprecated HTTP+SSE transport at the same URL unless --transport http")
	group("url")
	fs.StringVar(&o.transport, "transport", "", "the `KIND` of connection: stdio (-- COMMAND), http (Streamable HTTP at --url, no fallback) or sse (the deprecated HTTP+SSE transport of 2024-11-05: GET --url for the event stream, POST to the endpoint it announces)")
	group("transport")
	fs.StringVar(&o.serverID, "server-id", "", "an `ID` for the server, passed to the handlers and written in the audit records")
	group("server-id")
	fs.StringVar(&o.era, "era", "auto", "the protocol `ERA`: auto, legacy or modern (auto probes server/discover and falls back to initialize)")
	group("era")
	fs.StringVar(&o.protocolVersion, "protocol-version", "", fmt.Sprintf("pin protocol version `V`: %s (modern), %s (legacy)",
		strings.Join(era.ModernVersions, " or "), strings.Join(era.LegacyVersions, " or ")))
	group("protocol-version")
	fs.BoolVar(&o.tasks, "tasks", false, "run the call as a task whenever the tool allows it (2025-11-25: taskSupport optional); a tool that requires a task, or a call the server turns into one, runs as a task without it")
	group("tasks")
	fs.BoolVar(&o.noTasks, "no-tasks", false, "never run a call as a task: tasks are not declared to the server, and a tool that requires one fails with the server's error")
	group("no-tasks")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up on each request after `D`, paused while the server waits for input (default 60s)")
	group("timeout")
	fs.DurationVar(&o.maxTotalTimeout, "max-total-timeout", 0, "give up on each request after `D` in all, pauses included (default 30m)")
	group("max-total-timeout")
	a.maxMessageFlag(fs)
	group("max-message-bytes")
	fs.StringArrayVar(&o.headers, "header", nil, "send the HTTP header `K=V` with every request, repeatable (HTTP only: ignored, with a warning, for a stdio server)")
	group("header")
}

// rawFlag adds --raw to c, a command that prints a server's text.
func (a *app) rawFlag(c *cobra.Command) *cobra.Command {
	c.Flags().BoolVar(&a.opts.raw, "raw", false, "print the server's text as it wrote it even when stdout is a terminal, escape sequences and control characters included (by default they are taken out at a terminal; piped, the text is always as written)")
	return c
}

// maxMessageFlag is --max-message-bytes, on every command that connects.
func (a *app) maxMessageFlag(fs *pflag.FlagSet) {
	fs.Var(&a.opts.maxMessageBytes, "max-message-bytes", "refuse a message from the server (a stdio line, an HTTP body or SSE event) larger than `SIZE`: bytes, or with a unit KiB, MiB, GiB, KB, MB, GB (default 64MiB)")
	fs.Var(&a.opts.maxWriteQueueBytes, "max-write-queue-bytes", "close the connection when more than `SIZE` of messages wait to be written to a server that stopped reading its input (each counted with 64 bytes more), as --max-message-bytes takes it (default 16MiB)")
}

func (a *app) handlerFlags(fs *pflag.FlagSet) {
	o := &a.opts
	group := func(name string) { _ = fs.SetAnnotation(name, "group", []string{groupHandler}) }
	fs.StringVar(&o.answers, "answers", "", "answer the server's input requests from `FILE`, non-interactively (format below)")
	group("answers")
	fs.StringArrayVar(&o.roots, "roots", nil, "offer `DIR|URI` to the server as a root, repeatable (a directory becomes a file:// URI)")
	group("roots")
	fs.DurationVar(&o.handlerTimeout, "handler-timeout", 0, "give up on answering one input request after `D`, for every kind (default 5m for elicitation, 60s otherwise)")
	group("handler-timeout")
	fs.IntVar(&o.maxServerRequests, "max-server-requests", 0, "answer at most `N` input requests at once; more are refused as busy (default 8)")
	group("max-server-requests")
	fs.StringVar(&o.audit, "audit", "", "append one JSON object per line to `FILE` for every input request: what the handler saw after the guards, its outcome (answered, refused, timeout, cancelled, busy, rate_limited) and the code/message or result sent")
	group("audit")
	fs.StringVar(&o.samplingCommand, "sampling-command", "", "answer sampling by running `CMD` (sh -c): it gets the request as JSON on stdin and prints the completion; approved at the terminal unless --yes")
	group("sampling-command")
	fs.BoolVar(&o.yes, "yes", false, "send --sampling-command's completions without asking (without a terminal, nothing is sent otherwise)")
	group("yes")
	fs.StringVar(&o.logLevel, "log-level", "", "ask the server for logs at `LEVEL` and above: "+strings.Join(logLevels, ", "))
	group("log-level")
	fs.BoolVar(&o.json, "json", false, `machine output: the result as JSON on stdout; each server log entry as one JSON object {"level","logger","data"} per line on stderr, and what was dropped as {"dropped":{…},"final":…}; C1 controls, bidirectional and invisible characters are written as \u escapes`)
	group("json")
}

// usage prints a command's usage with its flags in groups.
func (a *app) usage(c *cobra.Command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage:\n  %s\n", c.UseLine())
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
	}
	if c.Example != "" {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		width := 0
		for _, sub := range c.Commands() {
			width = max(width, len(sub.Name()))
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				fmt.Fprintf(&b, "  %-*s  %s\n", width, sub.Name(), sub.Short)
			}
		}
	}
	groups := map[string]*pflag.FlagSet{}
	other := pflag.NewFlagSet("other", pflag.ContinueOnError)
	other.SortFlags = false
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		g := f.Annotations["group"]
		if len(g) == 0 {
			other.AddFlag(f)
			return
		}
		if groups[g[0]] == nil {
			groups[g[0]] = pflag.NewFlagSet(g[0], pflag.ContinueOnError)
			groups[g[0]].SortFlags = false
		}
		groups[g[0]].AddFlag(f)
	})
	for _, name := range []string{groupConnection, groupHandler} {
		if fs := groups[name]; fs != nil {
			fmt.Fprintf(&b, "\n%s:\n%s", name, fs.FlagUsages())
		}
	}
	c.InheritedFlags().VisitAll(func(f *pflag.Flag) { other.AddFlag(f) })
	if other.HasFlags() {
		fmt.Fprintf(&b, "\nFlags:\n%s", other.FlagUsages())
	}
	if more := c.Annotations["more"]; more != "" {
		fmt.Fprintf(&b, "\n%s\n", more)
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more about a command.\n", c.CommandPath())
	}
	_, err := fmt.Fprint(c.OutOrStderr(), b.String())
	return err
}
