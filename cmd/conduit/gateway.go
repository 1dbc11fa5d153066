package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/host"
)

func (a *app) gatewayCommand() *cobra.Command {
	var listen, token string
	var cl clusterFlags
	var limits gateway.SessionLimits
	var inputRate float64
	var variants int
	var variantIdle time.Duration
	c := &cobra.Command{
		Use:   "gateway --config FILE [--listen ADDR] [flags]",
		Short: "Serve the servers of a configuration file as one MCP server",
		Long: `Run every MCP server of the configuration FILE under supervision, as
conduit host does, and serve them as one MCP server: over Streamable HTTP at
http://ADDR/mcp with --listen, otherwise over stdin/stdout (so a desktop
client can launch it as one server); both eras either way, 2026-07-28
(server/discover, per-request _meta) and 2025-11-25/2025-06-18 (initialize),
chosen by what the client sends. Tools and prompts carry the catalog's
names, SERVER__NAME; "conduit": {"prefix": false} on a server exposes its
names as they are. An input request of a server (sampling, elicitation,
roots) is relayed to the client whose call caused it, after Conduit's guards.

Without a bearer token (--token or CONDUIT_GATEWAY_TOKEN) the gateway listens
on loopback only. docs/gateway.md says what is relayed and what is not yet.

With --cluster NAME the gateway is one member of a protoactor cluster: each
server runs on exactly one member (a virtual actor placed by rendezvous
hashing), and every member serves all of them (docs/cluster.md).`,
		Example: `  conduit gateway --config mcp.json --listen 127.0.0.1:8080
  conduit gateway --config mcp.json
  CONDUIT_GATEWAY_TOKEN=secret conduit gateway --config mcp.json --listen 0.0.0.0:8080
  conduit gateway --config mcp.json --listen 127.0.0.1:8081 --cluster gw \
    --cluster-listen 127.0.0.1:7081 --cluster-health 6081 \
    --cluster-seeds 127.0.0.1:6081,127.0.0.1:6082,127.0.0.1:6083`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if inputRate < 0 {
				limits.InputRateLimit = rate.Inf
			} else {
				limits.InputRateLimit = rate.Limit(inputRate)
			}
			if variants < 0 {
				return usagef("--server-variants must be 0 or more")
			}
			if variantIdle <= 0 {
				return usagef("--server-variant-idle must be more than 0")
			}
			ho := host.Options{MaxVariants: cmp.Or(variants, -1), VariantIdle: variantIdle} // host.Options: 0 is its default, negative none
			return a.runGateway(cmd.Context(), listen, cmp.Or(token, os.Getenv("CONDUIT_GATEWAY_TOKEN")), cl, limits, ho)
		},
	}
	c.Flags().SortFlags = false
	c.Flags().StringVar(&a.opts.config, "config", "", "serve the servers of the configuration `FILE` (mcpServers or VS Code servers)")
	c.Flags().StringVar(&listen, "listen", "", "serve Streamable HTTP at http://`ADDR`/mcp (host:port) instead of stdio")
	c.Flags().StringVar(&token, "token", "", "require this bearer `TOKEN` of every HTTP request (default $CONDUIT_GATEWAY_TOKEN); needed to listen beyond loopback")
	c.Flags().IntVar(&limits.MaxCalls, "session-calls", gateway.DefaultSessionCalls, "calls one downstream session may have in flight at once; past it -32000")
	c.Flags().Float64Var(&inputRate, "session-input-rate", float64(guards.DefaultInputRate), "input requests per second relayed to one downstream session (its budget; negative: unlimited)")
	c.Flags().IntVar(&limits.InputBurst, "session-input-burst", guards.DefaultInputBurst, "bursts of the session input budget")
	c.Flags().DurationVar(&limits.IdleTimeout, "session-idle", gateway.DefaultSessionIdle, "close a legacy HTTP session with no call and no request for this long (negative: never)")
	c.Flags().IntVar(&variants, "server-variants", host.DefaultMaxVariants, "connections a legacy server may run for its callers' other capability sets, beside its main one (a process each for stdio; 0: none)")
	c.Flags().DurationVar(&variantIdle, "server-variant-idle", host.DefaultVariantIdle, "close such a connection once it has had no call for this long")
	a.maxMessageFlag(c.Flags())
	c.Flags().BoolVar(&a.opts.json, "json", false, `machine output on stderr: logs as JSON objects, and with --cluster each membership event as {"time","cluster","event","member",…} per line`)
	a.adminFlags(c.Flags())
	cl.register(c)
	return c
}

// gatewaySettle bounds how long conduit gateway waits for its servers
// before it serves; one still starting joins the catalog when ready.
const gatewaySettle = 10 * time.Second

// runGateway serves the configuration's servers; ho carries the variant
// settings of the flags.
func (a *app) runGateway(ctx context.Context, listen, token string, cl clusterFlags, limits gateway.SessionLimits, ho host.Options) error {
	if a.opts.config == "" {
		return usagef("missing --config FILE")
	}
	if listen != "" {
		if err := gateway.CheckListen(listen, token); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	metrics, err := a.adminMetrics()
	if err != nil {
		return err
	}
	logger := newLogger(a.stderr, a.opts.verbose, a.opts.json)
	cfg, err := a.readConfig(logger)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(gcFloor())
	ho.MaxMessageBytes = int(a.opts.maxMessageBytes)
	ho.Client = conduit.Options{TracerProvider: a.tracerProvider()}
	ho.ServerOptions = serverOptionsOf(metrics)
	gopts := gateway.Options{Logger: logger, Host: ho, Sessions: limits}
	cl.out, cl.json = a.stderr, a.opts.json
	joined, err := cl.join(cfg, ho, logger, &gopts)
	if err != nil {
		return err
	}
	defer cl.leave()
	g, err := gateway.New(cfg, gopts)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer g.Close()
	cl.serve(g)
	if h := g.Host(); h != nil { // a cluster member's servers are grains: no person signs in for them
		defer a.signInServers(ctx, h)() // at a terminal (--listen): those that need it
	}
	stopAdmin, err := a.serveAdmin(cl.adminSource(g), metrics, admin.Options{Title: "conduit gateway", Sessions: func() int {
		n := 0
		for range g.Server().Sessions() {
			n++
		}
		return n
	}, SessionStats: func() (map[string]int64, map[string]int64) {
		st := g.SessionStats()
		return st.ClosedBy(), st.RefusedBy()
	}, ClusterStats: cl.adminStats()})
	if err != nil {
		return err
	}
	defer stopAdmin()
	// A client that connects at once sees every server that could start:
	// wait for each to be ready (or parked, or stopped), a while at most.
	wait, cancel := context.WithTimeout(ctx, gatewaySettle)
	if joined {
		err = cl.settle(wait)
	} else {
		events, unsubscribe := g.Host().Subscribe()
		err = settle(wait, g.Host(), events)
		unsubscribe()
	}
	cancel()
	if ctx.Err() != nil {
		return err
	}
	g.Sync()
	if listen == "" {
		err := g.ServeStdio(ctx)
		cl.startDrain()()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = nil // SIGTERM or SIGINT: a clean stop, as over HTTP
		}
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("listen on %s: %w", listen, err)}
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.Handler(gateway.HTTPOptions{Token: token}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(a.stderr, "conduit gateway: %d servers at http://%s/mcp%s\n", len(cfg.Servers), ln.Addr(), cl.describe())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		// A member drains (its servers move to the others) while its
		// downstream requests in flight finish.
		drained := cl.startDrain()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = srv.Shutdown(shut)
		<-served
		drained()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// gatewayGCFloor is the heap the gateway's garbage collector lets grow
// before it collects, whatever little is live.
const gatewayGCFloor = 32 << 20

// gcFloor is a pointer-free allocation of gatewayGCFloor bytes that the
// gateway keeps live and never touches (its pages are never resident): it
// counts in the live heap the collector's target is a multiple of. A relayed
// call leaves about 250 KB of garbage in the gateway (the go-sdk server's
// JSON decoder takes a fresh 32 KB buffer per message it reads, five per
// call), while its live heap is a few MB: with the default GOGC the
// collector ran every 15 or so calls and cost a third of the gateway's CPU
// under load (BenchmarkThroughput in gateway/, docs/benchmarks.md). With
// the floor it runs about every 130 calls; the price is up to
// gatewayGCFloor more resident garbage between collections, and a collector
// target that grows by gatewayGCFloor, not by a multiple, as sessions are
// added. GOGC set in the environment is the user's choice: no floor then.
func gcFloor() []byte {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	return make([]byte, gatewayGCFloor)
}
