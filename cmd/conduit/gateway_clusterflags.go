package main

import (
	"io"
	"time"

	"github.com/spf13/cobra"
)

// clusterCommand is the conduit built with the cluster tag, which a
// conduit built without it runs for --cluster, looked for beside its
// executable, then on PATH.
const clusterCommand = "conduit-cluster"

// clusterFlags are conduit gateway's --cluster flags (docs/cluster.md).
// The member itself (package cluster: protoactor's remote, gRPC) is built
// only with the "cluster" build tag (gateway_cluster.go): linked into every
// conduit process, its package initialisation made each 2–3 MB larger,
// over issue 18's memory ceilings. Without the tag, --cluster runs the
// conduit-cluster command instead (gateway_nocluster.go).
type clusterFlags struct {
	name, listen, seeds string
	secretFile          string
	health              int
	refresh, drain      time.Duration
	// out and json are where and how membership events are printed.
	out  io.Writer
	json bool
	//lint:ignore U1000 the member's state, in the build with the cluster tag
	st clusterState
}

func (cl *clusterFlags) register(c *cobra.Command) {
	f := c.Flags()
	f.StringVar(&cl.name, "cluster", "", "join the cluster `NAME` as one of its members: each server runs on one member, every member serves them all")
	f.StringVar(&cl.listen, "cluster-listen", "", "this member's cluster address `HOST:PORT` (gRPC, reached by the other members)")
	f.IntVar(&cl.health, "cluster-health", 0, "`PORT` of this member's health endpoint, polled by the others (HTTP on every interface)")
	f.StringVar(&cl.seeds, "cluster-seeds", "", "health endpoints `HOST:PORT,...` of every member, this one included")
	f.DurationVar(&cl.refresh, "cluster-refresh", time.Second, "how often members poll each other and refresh the catalog")
	f.DurationVar(&cl.drain, "cluster-drain", 30*time.Second, "on SIGTERM or SIGINT, how long this member lets the requests in flight on its servers finish while they move to the others")
	f.StringVar(&cl.secretFile, "cluster-secret-file", "", "read the cluster's shared secret (16 bytes at least, the same on every member) from `FILE` (default $CONDUIT_CLUSTER_SECRET)")
}

// check refuses cluster flags without --cluster.
func (cl *clusterFlags) check() error {
	if cl.name == "" && (cl.listen != "" || cl.seeds != "" || cl.health != 0 || cl.secretFile != "") {
		return usagef("--cluster-listen, --cluster-health, --cluster-seeds and --cluster-secret-file need --cluster NAME")
	}
	return nil
}
