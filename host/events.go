package host

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// Subscribe returns every state change of every server, in the order they
// happened, starting with one event per server for its current state; and
// a function that ends the subscription. The channel is closed after
// cancel, or after the events of Close. Events queue without bound until
// read: read until the channel is closed, or cancel. Close returns only
// once every subscriber has received its final events (each server's
// stopped) or cancelled, so a cancel right after Close loses none of them;
// a subscriber that neither reads nor cancels keeps Close waiting.
func (h *Host) Subscribe() (<-chan Event, func()) {
	s := &subscriber{wake: make(chan struct{}, 1), stop: make(chan struct{}), finish: make(chan struct{}), done: make(chan struct{}), out: make(chan Event)}
	h.mu.Lock()
	now := time.Now()
	for _, name := range slices.Sorted(maps.Keys(h.servers)) {
		s.push(Event{Time: now, Status: h.snapshot(h.servers[name])})
	}
	if h.closed {
		s.end()
	} else {
		h.subs[s] = struct{}{}
	}
	h.mu.Unlock()
	go s.forward()
	var once sync.Once
	return s.out, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
			close(s.stop)
		})
	}
}

// emit queues an event for every subscriber: st is a snapshot, with the
// live counters. Called with mu held.
func (h *Host) emit(st Status) {
	ev := Event{Time: st.Since, Status: st}
	for s := range h.subs {
		s.push(ev)
	}
}

// emitTools publishes a refresh of e's tools that changed the catalog.
// Called with mu held.
func (h *Host) emitTools(e *entry) {
	ev := Event{Time: time.Now(), ToolsChanged: true, Status: h.snapshot(e)}
	for s := range h.subs {
		s.push(ev)
	}
}

// subscriber is one Subscribe: a queue that never blocks the publisher,
// drained into out by its own goroutine.
type subscriber struct {
	mu     sync.Mutex
	queue  []Event
	wake   chan struct{} // one slot: something was queued
	stop   chan struct{} // closed by cancel: drop the rest
	finish chan struct{} // closed by end: deliver the rest, then close out
	done   chan struct{} // closed when forward returns: all delivered, or cancelled
	out    chan Event
}

func (s *subscriber) push(ev Event) {
	s.mu.Lock()
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end delivers what is queued, then closes the channel.
func (s *subscriber) end() { close(s.finish) }

func (s *subscriber) forward() {
	defer close(s.done)
	defer close(s.out)
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case s.out <- ev:
			case <-s.stop:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-s.finish:
			s.mu.Lock()
			empty := len(s.queue) == 0
			s.mu.Unlock()
			if empty {
				return
			}
		case <-s.stop:
			return
		}
	}
}
