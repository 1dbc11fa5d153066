package cluster

import (
	"errors"
	"time"

	"github.com/conduitmcp/conduit/host"
)

// subscriberBuffer is how many status events a subscriber may leave
// unread; past it the newest are dropped, counted in EventsDropped.
const subscriberBuffer = 256

// Subscribe returns every server's status changes as the keep-alive sees
// them (one event per server for its current status first), and a function
// that ends the subscription, the admin listener's source as a host's
// events are. A subscriber that does not keep up loses the newest events,
// counted in EventsDropped. The channel is closed by cancel or Close.
func (s *Servers) Subscribe() (<-chan host.Event, func()) {
	ch := make(chan host.Event, subscriberBuffer)
	now := time.Now()
	s.mu.Lock()
	if s.subs == nil { // closed
		close(ch)
		s.mu.Unlock()
		return ch, func() {}
	}
	s.subs[ch] = struct{}{}
	for _, name := range s.names {
		s.publishTo(ch, host.Event{Time: now, Status: s.statusLocked(name)})
	}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[ch]; ok {
			delete(s.subs, ch)
			close(ch)
		}
	}
}

// publish sends ev to every subscriber. Called with mu held.
func (s *Servers) publish(ev host.Event) {
	for ch := range s.subs {
		s.publishTo(ch, ev)
	}
}

func (s *Servers) publishTo(ch chan host.Event, ev host.Event) {
	select {
	case ch <- ev:
	default:
		s.EventsDropped.Add(1)
	}
}

// Readiness lists the servers not ready at their last keep-alive, and
// every server while this member drains (a load balancer polling /readyz
// then sends it no more).
func (s *Servers) Readiness() []host.NotReady {
	var out []host.NotReady
	draining := s.m.draining.Load()
	for _, st := range s.Status() {
		switch {
		case draining:
			out = append(out, host.NotReady{Server: st.Server, State: st.State, Reason: "this member drains before it leaves the cluster"})
		case st.State != host.StateReady:
			why := string(st.State)
			if st.Err != nil {
				why += ": " + st.Err.Error()
			}
			out = append(out, host.NotReady{Server: st.Server, State: st.State, Reason: why})
		}
	}
	return out
}

// statusLocked is server name's status at its last keep-alive; a server
// whose grain never answered is starting. Called with mu held.
func (s *Servers) statusLocked(name string) host.Status {
	r, ok := s.tools[name]
	if !ok {
		return host.Status{Server: name, State: host.StateStarting}
	}
	st := host.Status{Server: name, State: r.Status.State, Since: r.Status.Since, PID: r.Status.PID, Restarts: r.Status.Restarts,
		Attempt: r.Status.Attempt, Tools: r.Status.Tools, Calls: r.Status.Calls}
	if r.Status.Err != "" {
		st.Err = errors.New(r.Status.Err)
	}
	return st
}
