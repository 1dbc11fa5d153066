package cluster

import (
	"encoding/json"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
)

// EventKind is what happened to a member of the cluster.
type EventKind string

// The membership events a member reports (Options.Events).
const (
	// EventJoined: the provider lists the member (this one too, at start).
	EventJoined EventKind = "joined"
	// EventLeft: the provider no longer lists it (it left, or stopped
	// answering its health checks).
	EventLeft EventKind = "left"
	// EventLost: the connection to it dropped while it was a member.
	EventLost EventKind = "lost"
	// EventDraining: it drains before it leaves (Member.Drain): its
	// grains move to the others, its requests in flight go on.
	EventDraining EventKind = "draining"
)

// Event is a change of the cluster's membership as one member sees it:
// protoactor's topology (from the provider), the remote's lost
// connections, and the members' drain notices.
type Event struct {
	Time time.Time
	Kind EventKind
	// Member is the member's remote address, ID its id in the cluster
	// (empty when only the address is known).
	Member, ID string
	// Members is how many members the cluster has after the event, as
	// this member sees it.
	Members int
	// Why says how a loss was seen.
	Why string
}

// event reports ev to Options.Events, or logs it.
func (m *Member) event(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	if m.opts.Events != nil {
		m.opts.Events(ev)
		return
	}
	switch ev.Kind {
	case EventJoined:
		m.logger.Info("cluster: member joined", "member", ev.Member, "id", ev.ID, "members", ev.Members)
	default:
		m.logger.Warn("cluster: member "+string(ev.Kind), "member", ev.Member, "id", ev.ID, "members", ev.Members, "why", ev.Why)
	}
}

// onDraining records a member's drain notice: the requests in flight to it
// are failed, if it is lost, only once the notice's time has passed.
func (s *Servers) onDraining(data []byte) *pcluster.GrainResponse {
	var n drainingNotice
	if err := json.Unmarshal(data, &n); err != nil || n.Member == "" {
		return encodeError(errUndecodable("draining notice", err))
	}
	s.mu.Lock()
	s.draining[n.Member] = time.UnixMilli(n.UntilMS)
	id, members := s.members[n.Member], len(s.members)
	s.mu.Unlock()
	s.m.event(Event{Kind: EventDraining, Member: n.Member, ID: id, Members: members})
	return &pcluster.GrainResponse{MessageTypeName: typeResult, MessageData: []byte("null")}
}

// onDrained ends the requests still in flight to a member whose drain
// ended: those sent after its draining notice that it did not list never
// ran, and are sent again; the others fail now, not at the notice's time.
func (s *Servers) onDrained(data []byte) *pcluster.GrainResponse {
	var n drainedNotice
	if err := json.Unmarshal(data, &n); err != nil || n.Member == "" {
		return encodeError(errUndecodable("drained notice", err))
	}
	s.drained(n)
	return &pcluster.GrainResponse{MessageTypeName: typeResult, MessageData: []byte("null")}
}

func (s *Servers) drained(n drainedNotice) {
	seen := make(map[string]bool, len(n.Seen))
	for _, id := range n.Seen {
		seen[id] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	name := n.Member
	if id := s.members[n.Member]; id != "" {
		name += " (" + id + ")"
	}
	for p := range s.inflight[n.Member] {
		lost := lostMember{member: name, why: "its drain ended before it answered"}
		if p.after && p.id != "" && !seen[p.id] {
			lost.notRun = true
		}
		select {
		case p.lost <- lost:
		default:
		}
		delete(s.inflight[n.Member], p)
	}
}
