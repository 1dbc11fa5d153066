package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/admin"
	"github.com/conduitmcp/conduit/host"
)

// adminOptions are --admin and --admin-token (conduit host, conduit
// gateway).
type adminOptions struct {
	addr, token string
}

func (a *app) adminFlags(fs *pflag.FlagSet) {
	fs.StringVar(&a.opts.admin.addr, "admin", "", "serve /metrics (Prometheus), /healthz, /readyz and a live status page at http://`ADDR`/ (host:port; loopback only without --admin-token)")
	fs.StringVar(&a.opts.admin.token, "admin-token", "", "require this bearer `TOKEN` on every admin path (default $CONDUIT_ADMIN_TOKEN); needed to serve it beyond loopback")
}

// adminMetrics checks --admin, before anything starts, and returns the
// registry its host's clients feed; nil without --admin.
func (a *app) adminMetrics() (*admin.Metrics, error) {
	o := &a.opts.admin
	if o.addr == "" {
		return nil, nil
	}
	o.token = cmp.Or(o.token, os.Getenv("CONDUIT_ADMIN_TOKEN"))
	if err := admin.CheckListen(o.addr, o.token); err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return admin.NewMetrics(), nil
}

// serverOptionsOf is the host.Options hook of m (nil without --admin).
func serverOptionsOf(m *admin.Metrics) func(string, conduit.Options) conduit.Options {
	if m == nil {
		return nil
	}
	return m.ServerOptions
}

// serveAdmin serves h's admin paths on --admin until stop, which ends
// the event streams first; nothing without --admin.
func (a *app) serveAdmin(h admin.Source, m *admin.Metrics, opts admin.Options) (stop func(), err error) {
	if m == nil {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", a.opts.admin.addr)
	if err != nil {
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("admin listener: %w", err)}
	}
	opts.Token = a.opts.admin.token
	opts.Event = func(ev host.Event) any { return jsonEvent(ev) }
	srv := admin.New(h, m, opts)
	web := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = web.Serve(ln)
	}()
	fmt.Fprintf(a.stderr, "%s: admin at http://%s/ (/metrics, /healthz, /readyz, /events)\n", opts.Title, ln.Addr())
	return func() {
		srv.Close() // ends the event streams, which Shutdown would wait for
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = web.Shutdown(ctx)
		_ = web.Close()
		<-served
	}, nil
}
