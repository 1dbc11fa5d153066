package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit/load"
)

// `conduit load`: the load generator of package load, its Config filled
// from flags.

const loadHelp = `Shape of the load: --sessions connections (a stdio server is started once per
session: a stdio process serves one client), --concurrency callers in each; each
caller sends its next call when the last ends (closed loop), or, with --rate,
calls are started at that many per second in all whether or not the earlier
ones ended (open loop). The load ends after --calls counted calls or --duration,
whichever comes first; --warmup runs it first without counting.

With --config FILE, TOOL names a server of the file: SERVER/TOOL, or
SERVER__TOOL as 'conduit tools --config' lists it (in --mix too, all of one
server). Each session connects to that server as the file describes it (a
process of its own for a stdio server), with its "conduit" settings over the
connection flags; the file's other servers are not started.

--mix FILE calls several tools by weight instead of TOOL:
  [{"tool": "search", "weight": 3, "args": {"q": {"$pick": ["go", "mcp"]}}},
   {"tool": "fetch", "args": {"id": "doc-{{n}}"}}]
In ARGS_JSON and "args", "{{n}}" is the call's number (a JSON number when it is
the whole string) and {"$pick": [...]} one of the values, at random.

The server's input requests are answered from --answers FILE (never at the
terminal; the file is that of conduit call, see 'conduit call --help'), where
"delay" can be a distribution:
  "delay": "2s"  |  {"uniform": ["1s", "4s"]}  |  {"normal": {"mean": "2s", "stddev": "500ms"}}
  |  {"samples": ["800ms", "1.2s", "3s"]}
The input budget (10/s, bursts of 20) and --max-server-requests apply, as for
any client, to see them bite; --unlimited-input lifts them for the run.

Progress goes to stderr at most every 500 ms (JSON lines with --json); the
report to stdout (JSON with --json), to --report FILE.json, and as a
self-contained page with its plots to --html FILE.

Exit status: 0 every counted call succeeded (or the failures are within
--max-error-rate), and p99 is within --max-p99; 1 otherwise, or interrupted;
2 usage error; 3 could not connect.`

// loadFlags are conduit load's own flags.
type loadFlags struct {
	sessions, concurrency, calls int
	duration, warmup             time.Duration
	rate                         float64
	mix                          string
	unlimitedInput               bool
	report, html                 string
	maxErrorRate                 float64
	errorRateSet                 bool // --max-error-rate given
	maxP99                       time.Duration
	stages                       string
	rampCallers                  bool
}

func (a *app) loadCommand() *cobra.Command {
	var f loadFlags
	c := a.command(&cobra.Command{
		Use:   "load [flags] (TOOL [ARGS_JSON] | --mix FILE) " + serverArgs,
		Short: "Load a server with concurrent tool calls, answering its input requests",
		Long: `Call TOOL (or the tools of --mix) from many sessions and callers at once,
answering the server's input requests from the answers file, and report
throughput, latency percentiles, the time paused for input, how calls ended, what
the input guards did and the server's peak memory.`,
		Example: `  conduit load --sessions 4 --concurrency 8 --calls 2000 --answers answers.json test_input_required_result_elicitation -- everything-server
  conduit load --rate 200 --duration 30s --warmup 5s --html load.html --mix mix.json --url http://127.0.0.1:8080/mcp
  conduit load --config mcp.json --sessions 4 --calls 1000 files/read_file '{"path": "notes.md"}'`,
	}, func(cmd *cobra.Command, args, server []string) error {
		f.errorRateSet = cmd.Flags().Changed("max-error-rate")
		return a.runLoad(cmd.Context(), f, args, server)
	})
	c.Annotations["more"] = loadHelp
	c.AddCommand(a.loadCompareCommand())
	a.configFlag(c, "load a server of the configuration `FILE` (mcpServers or VS Code servers), named in TOOL as SERVER/TOOL or SERVER__TOOL, in place of --url or -- COMMAND")
	fs := c.Flags()
	fs.IntVar(&f.sessions, "sessions", 1, "open `N` sessions (one server process each for a stdio server)")
	fs.IntVar(&f.concurrency, "concurrency", 1, "run `C` callers in each session")
	fs.IntVar(&f.calls, "calls", 0, "stop after `K` counted calls in all")
	fs.DurationVar(&f.duration, "duration", 0, "stop starting calls after `D` (after the warm-up)")
	fs.Float64Var(&f.rate, "rate", 0, "start `R` calls per second in all (open loop; latency from the intended send time)")
	fs.DurationVar(&f.warmup, "warmup", 0, "run `D` before counting anything")
	fs.StringVar(&f.stages, "stages", "", "ramp the load linearly through `STAGES` DURATION:TARGET,… (as 30s:50,5m:500,30s:0): calls per second (open loop), callers per session with --ramp-callers; they set the duration, the warm-up is their first part")
	fs.BoolVar(&f.rampCallers, "ramp-callers", false, "the --stages targets are callers per session (closed loop), not calls per second")
	fs.StringVar(&f.mix, "mix", "", "call the tools of `FILE` by weight instead of TOOL (format below)")
	fs.BoolVar(&f.unlimitedInput, "unlimited-input", false, "lift the input budget and the cap on input requests at once for the run")
	fs.StringVar(&f.report, "report", "", "write the report as JSON to `FILE`")
	fs.StringVar(&f.html, "html", "", "write the report as a self-contained HTML page with plots to `FILE`")
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0, "exit 1 only when more than `F` (0 to 1) of the calls failed (without it: any failure)")
	fs.DurationVar(&f.maxP99, "max-p99", 0, "exit 1 when the p99 latency is above `D`")
	return c
}

// loadConfig checks the flags and arguments and fills a Config without
// the transport and options.
func loadConfig(f loadFlags, args []string) (load.Config, error) {
	cfg := load.Config{Sessions: f.sessions, Concurrency: f.concurrency, Calls: f.calls, Duration: f.duration,
		Rate: f.rate, Warmup: f.warmup, UnlimitedInput: f.unlimitedInput}
	switch {
	case f.sessions < 1:
		return cfg, usagef("--sessions %d: want 1 or more", f.sessions)
	case f.concurrency < 1:
		return cfg, usagef("--concurrency %d: want 1 or more", f.concurrency)
	case f.calls < 0:
		return cfg, usagef("--calls %d: must be positive", f.calls)
	case f.duration < 0 || f.warmup < 0 || f.maxP99 < 0:
		return cfg, usagef("--duration, --warmup and --max-p99 must be positive")
	case f.stages != "" && (f.duration > 0 || f.rate > 0):
		return cfg, usagef("--stages set the rate and the duration: give --stages or --rate and --duration")
	case f.rampCallers && f.stages == "":
		return cfg, usagef("--ramp-callers needs --stages")
	case f.calls == 0 && f.duration == 0 && f.stages == "":
		return cfg, usagef("give --calls K or --duration D (or both: the first reached ends the load), or --stages")
	case f.rate < 0 || math.IsInf(f.rate, 0) || math.IsNaN(f.rate):
		return cfg, usagef("--rate %g: want calls per second, 0 for closed loop", f.rate)
	case f.maxErrorRate > 1 || f.maxErrorRate < 0 || math.IsNaN(f.maxErrorRate):
		return cfg, usagef("--max-error-rate %g: want a fraction from 0 to 1", f.maxErrorRate)
	}
	if f.stages != "" {
		st, err := load.ParseStages(f.stages)
		if err != nil {
			return cfg, usagef("--stages: %v", err)
		}
		var total time.Duration
		for _, s := range st {
			total += s.Duration
		}
		if total <= f.warmup {
			return cfg, usagef("--stages last %s: the warm-up (%s) is their first part and must be shorter", total, f.warmup)
		}
		cfg.Stages, cfg.RampCallers = st, f.rampCallers
	}
	if f.mix != "" {
		if len(args) > 0 {
			return cfg, usagef("give TOOL [ARGS_JSON] or --mix FILE, not both")
		}
		data, err := os.ReadFile(f.mix)
		if err != nil {
			return cfg, usagef("--mix: %v", err)
		}
		if cfg.Mix, err = load.ParseMix(data); err != nil {
			return cfg, usagef("--mix %s: %v", f.mix, err)
		}
		return cfg, nil
	}
	switch {
	case len(args) == 0:
		return cfg, usagef("missing TOOL (or --mix FILE): conduit load [flags] TOOL [ARGS_JSON] %s", serverArgs)
	case len(args) > 2:
		return cfg, usagef("too many arguments before --: %q (put the server command after --)", args[2:])
	}
	call := load.Call{Tool: args[0]}
	if len(args) == 2 {
		raw, err := objectArg("ARGS_JSON", args[1])
		if err != nil {
			return cfg, err
		}
		call.Args = raw
	}
	cfg.Mix = []load.Call{call}
	return cfg, nil
}

func (a *app) runLoad(ctx context.Context, f loadFlags, args, server []string) error {
	cfg, err := loadConfig(f, args)
	if err != nil {
		return err
	}
	if a.opts.logLevel != "" {
		newLogger(a.stderr, a.opts.verbose, a.opts.json).Warn("--log-level is not used by conduit load; ignored")
	}
	var target *configTarget
	if a.opts.config != "" {
		if err := a.configOnly(server); err != nil {
			return err
		}
		if target, err = a.configTarget(cfg.Mix); err != nil {
			return err
		}
	}
	// Never at the terminal: a person cannot answer a load.
	su, err := a.setup(server, target, false)
	if err != nil {
		return err
	}
	defer su.close()
	cfg.Transport, cfg.Options = su.transport, su.options
	cfg.Progress = a.loadProgress(f.calls, len(cfg.Stages))

	rep, err := signInAndRetry(ctx, a, oauthOf(target), func(ctx context.Context) (*load.Report, error) { return load.Run(ctx, cfg) })
	if err != nil {
		if errors.Is(err, load.ErrConfig) { // the mix or ARGS_JSON: nothing was connected
			return &exitError{code: exitUsage, err: err}
		}
		if e := ctx.Err(); e != nil {
			return callFailed(ctx, err)
		}
		a.showTail(su.logger, su.tail, err)
		return connectFailed(ctx, err)
	}
	if err := writeReports(rep, f); err != nil {
		return err
	}
	if a.opts.json {
		err = a.printJSON(rep)
	} else {
		err = rep.WriteText(a.std.out)
	}
	if err != nil {
		return err
	}
	return loadVerdict(rep, f)
}

// configTarget finds the server of --config that the mix's tools name
// (SERVER/TOOL or SERVER__TOOL, all the same server: a load runs against
// one) and renames them to the server's own names.
func (a *app) configTarget(mix []load.Call) (*configTarget, error) {
	cfg, err := a.readConfig(newLogger(a.stderr, a.opts.verbose, a.opts.json))
	if err != nil {
		return nil, err
	}
	var target *configTarget
	for i, c := range mix {
		t, tool, err := a.configServer(cfg, "TOOL", c.Tool)
		if err != nil {
			return nil, err
		}
		if target != nil && t.name != target.name {
			return nil, usagef("a load runs against one server: the tools name %q and %q", target.name, t.name)
		}
		target, mix[i].Tool = t, tool
	}
	return target, nil
}

// loadProgress returns the progress callback: at a terminal, a live line
// on stderr redrawn in place (elapsed of total, or a bar of the calls;
// calls per second and p99 of the last window, errors, the stage); a JSON
// object per line with --json; nothing otherwise (stderr is a file or a
// pipe: the report alone says how the run went).
func (a *app) loadProgress(calls, stages int) func(load.Progress) {
	f, ok := a.std.err.(*os.File)
	live := ok && isTerminal(f)
	switch {
	case a.opts.json:
		return func(p load.Progress) {
			if b, err := json.Marshal(p); err == nil {
				_, _ = a.stderr.Write(append(b, '\n'))
			}
		}
	case !live:
		return nil
	}
	return func(p load.Progress) {
		var b strings.Builder
		b.WriteString("\r\x1b[K") // back to the start of the line, and clear it
		b.WriteString(loadLine(p, calls, stages))
		if p.Final {
			b.WriteByte('\n')
		}
		_, _ = a.stderr.Write([]byte(b.String()))
	}
}

// loadLine is the live line of a load without its terminal controls.
func loadLine(p load.Progress, calls, stages int) string {
	var b strings.Builder
	b.WriteString("load ")
	if p.Warmup {
		b.WriteString("warming up")
		return b.String()
	}
	el := max(p.Elapsed, 0).Round(time.Second)
	if p.Total > 0 {
		fmt.Fprintf(&b, "%s/%s ", el, p.Total.Round(time.Second))
	} else {
		fmt.Fprintf(&b, "%s ", el)
	}
	if calls > 0 {
		const width = 20
		frac := min(float64(p.Calls)/float64(calls), 1)
		filled := int(frac*width + 0.5)
		fmt.Fprintf(&b, "[%s%s] ", strings.Repeat("#", filled), strings.Repeat("-", width-filled))
	}
	fmt.Fprintf(&b, "%d calls, %.1f calls/s now, p99 %s now, %d errors", p.Calls, p.RateNow, p.P99Now, p.Errors)
	if stages > 0 && p.Stage > 0 {
		fmt.Fprintf(&b, ", stage %d/%d", p.Stage, stages)
	}
	return b.String()
}

// writeReports writes --report and --html.
func writeReports(rep *load.Report, f loadFlags) error {
	if f.report != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.report, append(b, '\n'), 0o644); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("--report: %w", err)}
		}
	}
	if f.html != "" {
		var b bytes.Buffer
		if err := load.WriteHTML(&b, rep); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("--html: %w", err)}
		}
		if err := os.WriteFile(f.html, b.Bytes(), 0o644); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("--html: %w", err)}
		}
	}
	return nil
}

// loadVerdict is the exit status of a load: failed calls beyond
// --max-error-rate (any, without it), a p99 above --max-p99, or an
// interrupted run fail it.
func loadVerdict(rep *load.Report, f loadFlags) error {
	fail := func(format string, args ...any) error {
		return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
	}
	if rep.Interrupted {
		return fail("interrupted: %d calls counted, %d failed", rep.Calls, rep.Failed)
	}
	if rep.Failed > 0 {
		rate := float64(rep.Failed) / float64(rep.Calls)
		switch {
		case !f.errorRateSet:
			return fail("%d of %d calls failed", rep.Failed, rep.Calls)
		case rate > f.maxErrorRate:
			return fail("%d of %d calls failed: error rate %.4g above --max-error-rate %g", rep.Failed, rep.Calls, rate, f.maxErrorRate)
		}
	}
	if f.maxP99 > 0 && time.Duration(rep.Latency.P99) > f.maxP99 {
		return fail("p99 latency %s above --max-p99 %s", rep.Latency.P99, f.maxP99)
	}
	return nil
}
