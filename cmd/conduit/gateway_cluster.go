//go:build cluster

package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/conduitmcp/conduit/cluster"
	"github.com/conduitmcp/conduit/gateway"
	"github.com/conduitmcp/conduit/host"
)

// clusterState is a member's, once joined.
type clusterState struct {
	member  *cluster.Member
	servers *cluster.Servers
}

// join makes this process a member when --cluster is given, and sets
// opts to serve the cluster's servers.
func (cl *clusterFlags) join(cfg host.Config, ho host.Options, logger *slog.Logger, opts *gateway.Options) (joined bool, err error) {
	if err := cl.check(); err != nil || cl.name == "" {
		return false, err
	}
	var seeds []string
	for s := range strings.SplitSeq(cl.seeds, ",") {
		if s = strings.TrimSpace(s); s != "" {
			seeds = append(seeds, s)
		}
	}
	m, err := cluster.Join(cfg, cluster.Options{Name: cl.name, Listen: cl.listen, HealthPort: cl.health, Seeds: seeds, Refresh: cl.refresh, Host: ho, Logger: logger})
	if err != nil {
		return false, &exitError{code: exitUsage, err: err}
	}
	cl.st = clusterState{member: m, servers: m.Servers()}
	opts.Upstream = func(host.Config, host.Options) (gateway.Upstream, error) { return cl.st.servers, nil }
	return true, nil
}

// leave stops the member, once its gateway is closed.
func (cl *clusterFlags) leave() {
	if cl.st.member != nil {
		_ = cl.st.member.Close()
	}
}

// settle waits for every seed to be a member and every server ready.
func (cl *clusterFlags) settle(ctx context.Context) error {
	return cl.st.servers.Settle(ctx, len(strings.Split(cl.seeds, ",")))
}

// describe is what the ready line adds for a member.
func (cl *clusterFlags) describe() string {
	if cl.st.member == nil {
		return ""
	}
	return fmt.Sprintf(", member %s of cluster %s (%d members)", cl.st.member.Address(), cl.name, cl.st.servers.Members())
}
