package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/conduitmcp/conduit/cluster"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
)

// clusterFlags are conduit gateway's --cluster flags (docs/cluster.md).
type clusterFlags struct {
	name, listen, seeds string
	health              int
	refresh             time.Duration
	servers             *cluster.Servers
}

func (cl *clusterFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&cl.name, "cluster", "", "join the cluster `NAME` as one of its members: each server runs on one member, every member serves them all")
	f.StringVar(&cl.listen, "cluster-listen", "", "this member's cluster address `HOST:PORT` (gRPC, reached by the other members)")
	f.IntVar(&cl.health, "cluster-health", 0, "`PORT` of this member's health endpoint, polled by the others (HTTP on every interface)")
	f.StringVar(&cl.seeds, "cluster-seeds", "", "health endpoints `HOST:PORT,...` of every member, this one included")
	f.DurationVar(&cl.refresh, "cluster-refresh", time.Second, "how often members poll each other and refresh the catalog")
}

// join makes this process a member when --cluster is given, and sets
// opts to serve the cluster's servers.
func (cl *clusterFlags) join(cfg host.Config, ho host.Options, logger *slog.Logger, opts *gateway.Options) (*cluster.Member, error) {
	if cl.name == "" {
		if cl.listen != "" || cl.seeds != "" || cl.health != 0 {
			return nil, usagef("--cluster-listen, --cluster-health and --cluster-seeds need --cluster NAME")
		}
		return nil, nil
	}
	var seeds []string
	for s := range strings.SplitSeq(cl.seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	m, err := cluster.Join(cfg, cluster.Options{Name: cl.name, Listen: cl.listen, HealthPort: cl.health, Seeds: seeds, Refresh: cl.refresh, Host: ho, Logger: logger})
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	cl.servers = m.Servers()
	opts.Upstream = func(host.Config, host.Options) (gateway.Upstream, error) { return cl.servers, nil }
	return m, nil
}

// settle waits for every seed to be a member and every server ready.
func (cl *clusterFlags) settle(ctx context.Context, g *gateway.Gateway) error {
	return cl.servers.Settle(ctx, len(strings.Split(cl.seeds, ",")))
}

// describe is what the ready line adds for a member.
func (cl *clusterFlags) describe(m *cluster.Member, g *gateway.Gateway) string {
	if m == nil {
		return ""
	}
	return fmt.Sprintf(", member %s of cluster %s (%d members)", m.Address(), cl.name, cl.servers.Members())
}
