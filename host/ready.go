package host

import (
	"maps"
	"slices"
)

// NotReady is a server that keeps the host from being ready, and why.
type NotReady struct {
	Server string `json:"server"`
	State  State  `json:"state"`
	// Reason says what it is doing ("restarting in 1s (attempt 2)",
	// "parked after 4 restarts") and its last failure, when it has one.
	Reason string `json:"reason"`
}

// Readiness returns the servers that keep the host from being ready, by
// name: every server neither optional ("optional": true) nor disabled
// that is not ready. The host is ready when it returns none; once it is
// closed, no server is ready.
func (h *Host) Readiness() []NotReady {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []NotReady
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		e := h.servers[name]
		if e.status.State == StateReady && !h.closed {
			continue
		}
		if (e.cfg.Conduit.Optional || e.cfg.Conduit.Disabled) && !h.closed {
			continue
		}
		why := describe(e.status)
		if e.status.Err != nil {
			why += ": " + e.status.Err.Error()
		}
		out = append(out, NotReady{Server: name, State: e.status.State, Reason: why})
	}
	return out
}
