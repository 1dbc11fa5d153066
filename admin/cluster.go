package admin

import "github.com/prometheus/client_golang/prometheus"

// ClusterStats are a cluster member's counters, read at each scrape
// (cluster.Member.Tunnels, Member.Orphaned, Servers.NotesDropped).
type ClusterStats struct {
	// TunnelsOpen and TunnelsServing are the legacy session exchanges
	// open now through this member and served on it.
	TunnelsOpen, TunnelsServing int64
	// Tunnels counts the exchanges by outcome: started, completed,
	// lost, cancelled, overflowed, gone, refused.
	Tunnels map[string]int64
	// Orphaned counts calls on this member's servers cancelled because
	// the member that asked left or died.
	Orphaned int64
	// NotesDropped counts progress notifications and log entries
	// dropped on their way to the calling member.
	NotesDropped int64
	// Requests counts the grain requests this member's gateway sent, by
	// outcome: started, completed, lost, timed_out, resent
	// (cluster.Servers).
	Requests map[string]int64
	// Cut counts requests still running on a grain here when a drain's
	// bound passed; Unattributed, input requests of the servers held
	// here that belonged to no call it could name (cluster.Member).
	Cut, Unattributed int64
}

type clusterCollector func() ClusterStats

var (
	tunnelsOpenDesc = prometheus.NewDesc("conduit_cluster_tunnels_open",
		"Legacy session exchanges open now, by side: through (this member relays to the session's holder), serving (this member holds the session).", []string{"side"}, nil)
	tunnelsDesc = prometheus.NewDesc("conduit_cluster_tunnels_total",
		"Legacy session exchanges through this member, by outcome: started (handed to the holder), completed (the holder answered), lost (the holder was lost in flight), cancelled (the client went first), overflowed (the client read too slowly), gone (the session's member is not in the cluster: 404), refused (over the exchange bound: 503).", []string{"outcome"}, nil)
	orphanedDesc = prometheus.NewDesc("conduit_cluster_calls_orphaned_total",
		"Calls on this member's servers cancelled because the member that asked left or died.", nil, nil)
	notesDroppedDesc = prometheus.NewDesc("conduit_cluster_notes_dropped_total",
		"Progress notifications and log entries dropped on their way to the calling member.", nil, nil)
	requestsDesc = prometheus.NewDesc("conduit_cluster_requests_total",
		"Requests this member's gateway sent to the members holding its servers, by outcome: started, completed (the server answered, a result or its error), lost (the holding member was lost in flight), timed_out, resent (sent again because it had not run: its grain had stopped before it reached it, or the holding member's drain ended without it).", []string{"outcome"}, nil)
	cutDesc = prometheus.NewDesc("conduit_cluster_requests_cut_total",
		"Requests still running on this member's servers when a drain's bound passed, stopped with their server.", nil, nil)
	unattributedDesc = prometheus.NewDesc("conduit_cluster_inputs_unattributed_total",
		"Input requests of this member's servers that belonged to no call it could name, refused -32601.", nil, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tunnelsOpenDesc
	ch <- tunnelsDesc
	ch <- orphanedDesc
	ch <- notesDroppedDesc
	ch <- requestsDesc
	ch <- cutDesc
	ch <- unattributedDesc
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	st := c()
	ch <- prometheus.MustNewConstMetric(tunnelsOpenDesc, prometheus.GaugeValue, float64(st.TunnelsOpen), "through")
	ch <- prometheus.MustNewConstMetric(tunnelsOpenDesc, prometheus.GaugeValue, float64(st.TunnelsServing), "serving")
	for outcome, n := range st.Tunnels {
		ch <- prometheus.MustNewConstMetric(tunnelsDesc, prometheus.CounterValue, float64(n), outcome)
	}
	ch <- prometheus.MustNewConstMetric(orphanedDesc, prometheus.CounterValue, float64(st.Orphaned))
	ch <- prometheus.MustNewConstMetric(notesDroppedDesc, prometheus.CounterValue, float64(st.NotesDropped))
	for outcome, n := range st.Requests {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), outcome)
	}
	ch <- prometheus.MustNewConstMetric(cutDesc, prometheus.CounterValue, float64(st.Cut))
	ch <- prometheus.MustNewConstMetric(unattributedDesc, prometheus.CounterValue, float64(st.Unattributed))
}
