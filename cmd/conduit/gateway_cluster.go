//go:build cluster

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/conduitmcp/conduit/admin"
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
	secret := []byte(os.Getenv("CONDUIT_CLUSTER_SECRET"))
	if cl.secretFile != "" {
		data, err := os.ReadFile(cl.secretFile)
		if err != nil {
			return false, &exitError{code: exitUsage, err: fmt.Errorf("--cluster-secret-file: %w", err)}
		}
		secret = bytes.TrimSpace(data)
	}
	m, err := cluster.Join(cfg, cluster.Options{Name: cl.name, Listen: cl.listen, HealthPort: cl.health, Seeds: seeds, Refresh: cl.refresh,
		Drain: cl.drain, Secret: secret, Events: cl.printEvent, Host: ho, Logger: logger})
	if err != nil {
		return false, &exitError{code: exitUsage, err: err}
	}
	cl.st = clusterState{member: m, servers: m.Servers()}
	opts.Upstream = func(_ host.Config, ho host.Options) (gateway.Upstream, error) {
		cl.st.servers.HandleInput(ho.Client.Handlers) // the gateway's relay
		return cl.st.servers, nil
	}
	opts.Members = cl.st.servers
	return true, nil
}

// serve lets the other members reach g: the retries of the modern calls
// it holds.
func (cl *clusterFlags) serve(g *gateway.Gateway) {
	if cl.st.servers != nil {
		cl.st.servers.HandleResume(g.Resume)
	}
}

// adminSource is what --admin serves: the member's view of the cluster's
// servers (their status from the keep-alive; /metrics counts the calls of
// the servers this member holds), or g's host without --cluster.
func (cl *clusterFlags) adminSource(g *gateway.Gateway) admin.Source {
	if cl.st.servers != nil {
		return cl.st.servers
	}
	return g.Host()
}

// adminStats reads the member's counters for --admin's /metrics
// (conduit_cluster_*), or nil without --cluster.
func (cl *clusterFlags) adminStats() func() admin.ClusterStats {
	if cl.st.member == nil {
		return nil
	}
	return func() admin.ClusterStats {
		m := cl.st.member
		t := m.Tunnels()
		st := admin.ClusterStats{TunnelsOpen: t.Open, TunnelsServing: t.Serving, Orphaned: m.Orphaned.Load(),
			Tunnels: map[string]int64{"started": t.Started, "completed": t.Completed, "lost": t.Lost, "cancelled": t.Cancelled,
				"overflowed": t.Overflowed, "gone": t.Gone, "refused": t.Refused},
			Cut: m.Cut.Load(), Unattributed: m.Unattributed.Load()}
		if s := cl.st.servers; s != nil {
			st.NotesDropped = s.NotesDropped.Load()
			st.Requests = map[string]int64{"started": s.Started.Load(), "completed": s.Completed.Load(), "lost": s.Lost.Load(),
				"timed_out": s.TimedOut.Load(), "resent": s.Resent.Load()}
		}
		return st
	}
}

// startDrain begins the member's drain (cluster.Member.Drain, bounded by
// --cluster-drain) and returns what waits for its end.
func (cl *clusterFlags) startDrain() func() {
	if cl.st.member == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), cl.drain)
		defer cancel()
		if left := cl.st.member.Drain(ctx); left > 0 {
			fmt.Fprintf(cl.out, "conduit gateway: the drain bound (%s) passed with %d requests in flight on this member's servers: they fail\n", cl.drain, left)
		}
	}()
	return func() { <-done }
}

// memberEvent is a membership event as --json prints it.
type memberEvent struct {
	Time     time.Time `json:"time"`
	Cluster  string    `json:"cluster"`
	Event    string    `json:"event"`
	Member   string    `json:"member"`
	MemberID string    `json:"member_id,omitempty"`
	Members  int       `json:"members"`
	Why      string    `json:"why,omitempty"`
}

// printEvent prints a membership event on stderr (stdout may be the MCP
// channel): a JSON line with --json, else a line in words.
func (cl *clusterFlags) printEvent(ev cluster.Event) {
	if cl.out == nil {
		return
	}
	if cl.json {
		b, _ := json.Marshal(memberEvent{Time: ev.Time.UTC(), Cluster: cl.name, Event: string(ev.Kind), Member: ev.Member, MemberID: ev.ID, Members: ev.Members, Why: ev.Why})
		_, _ = cl.out.Write(append(b, '\n'))
		return
	}
	line := fmt.Sprintf("conduit gateway: %s member %s %s", ev.Time.Format("15:04:05.000"), ev.Member, ev.Kind)
	if ev.Why != "" {
		line += " (" + ev.Why + ")"
	}
	_, _ = fmt.Fprintf(cl.out, "%s: %s\n", line, pluralize(ev.Members, "member"))
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
	return fmt.Sprintf(", member %s of cluster %s (%s)", cl.st.member.Address(), cl.name, pluralize(cl.st.servers.Members(), "member"))
}
