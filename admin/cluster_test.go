package admin

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit/host"
)

// A cluster member's counters, read at each scrape: each under its name
// and label, the values of the scrape's moment.
func TestClusterMetrics(t *testing.T) {
	st := ClusterStats{TunnelsOpen: 2, TunnelsServing: 1, Orphaned: 3, NotesDropped: 4,
		Tunnels:  map[string]int64{"started": 9, "completed": 5, "lost": 1, "cancelled": 1, "overflowed": 0, "gone": 1, "refused": 1},
		Requests: map[string]int64{"started": 20, "completed": 16, "lost": 2, "timed_out": 1, "resent": 3},
		Cut:      5, Unattributed: 6}
	f := start(t, map[string]host.Server{}, Options{ClusterStats: func() ClusterStats { return st }})
	fams := scrape(t, f.web.URL)
	assert.Equal(t, 2.0, value(t, fams, "conduit_cluster_tunnels_open", "side=through"))
	assert.Equal(t, 1.0, value(t, fams, "conduit_cluster_tunnels_open", "side=serving"))
	for outcome, n := range st.Tunnels {
		assert.Equal(t, float64(n), value(t, fams, "conduit_cluster_tunnels_total", "outcome="+outcome), outcome)
	}
	assert.Equal(t, 3.0, value(t, fams, "conduit_cluster_calls_orphaned_total", ""))
	assert.Equal(t, 4.0, value(t, fams, "conduit_cluster_notes_dropped_total", ""))
	for outcome, n := range st.Requests {
		assert.Equal(t, float64(n), value(t, fams, "conduit_cluster_requests_total", "outcome="+outcome), outcome)
	}
	assert.Equal(t, 5.0, value(t, fams, "conduit_cluster_requests_cut_total", ""))
	assert.Equal(t, 6.0, value(t, fams, "conduit_cluster_inputs_unattributed_total", ""))

	st.Orphaned, st.Tunnels = 7, map[string]int64{"started": 10}
	fams = scrape(t, f.web.URL)
	assert.Equal(t, 7.0, value(t, fams, "conduit_cluster_calls_orphaned_total", ""))
	assert.Equal(t, 10.0, value(t, fams, "conduit_cluster_tunnels_total", "outcome=started"))

	// Without ClusterStats (no --cluster), none of them.
	g := start(t, map[string]host.Server{}, Options{})
	for name := range scrape(t, g.web.URL) {
		assert.NotContains(t, name, "conduit_cluster_")
	}
}
