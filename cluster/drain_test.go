package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/host"
)

// A draining member records the grain requests that reach it once its
// drain began, by sender, and refuses every one once it ended.
func TestClusterDrainLogRecordsThenRefuses(t *testing.T) {
	var d drainLog
	assert.True(t, d.admit("10.0.0.1:7000/1"), "before the drain")
	d.begin()
	assert.True(t, d.admit("10.0.0.1:7000/2"))
	assert.True(t, d.admit("10.0.0.2:7000/9"))
	assert.True(t, d.admit("10.0.0.1:7000/3"))
	assert.True(t, d.admit(""), "an old member's request has no id")
	seen := d.end()
	assert.Equal(t, map[string][]string{
		"10.0.0.1:7000": {"10.0.0.1:7000/2", "10.0.0.1:7000/3"},
		"10.0.0.2:7000": {"10.0.0.2:7000/9"},
	}, seen)
	assert.False(t, d.admit("10.0.0.1:7000/4"), "after the drain")
	assert.False(t, d.admit(""))
}

// When a member's drain ends, a request in flight to it that was sent
// after its draining notice and that it does not list never ran: it is
// marked to be sent again. Every other one fails now, naming the member.
func TestClusterDrainedNoticeEndsWhatIsInFlight(t *testing.T) {
	s, _ := tunnelServers("10.0.0.9:7000")
	add := func(id string, after bool) *pending {
		p := &pending{lost: make(chan lostMember, 1), id: id, after: after}
		if s.inflight["10.0.0.9:7000"] == nil {
			s.inflight["10.0.0.9:7000"] = map[*pending]struct{}{}
		}
		s.inflight["10.0.0.9:7000"][p] = struct{}{}
		return p
	}
	neverRan := add("nonhost/1", true)
	ran := add("nonhost/2", true)
	before := add("nonhost/3", false)
	relay := add("", true)
	other := &pending{lost: make(chan lostMember, 1), id: "nonhost/5", after: true}
	s.inflight["10.0.0.8:7000"] = map[*pending]struct{}{other: {}}

	resp := s.onDrained([]byte(`{"member":"10.0.0.9:7000","seen":["nonhost/2","nonhost/4"]}`))
	assert.Equal(t, typeResult, resp.MessageTypeName)

	lost := lostMember{member: "10.0.0.9:7000 (id-10.0.0.9:7000)", why: "its drain ended before it answered"}
	assert.Equal(t, lostMember{member: lost.member, why: lost.why, notRun: true}, <-neverRan.lost)
	for _, p := range []*pending{ran, before, relay} {
		assert.Equal(t, lost, <-p.lost)
	}
	assert.Empty(t, s.inflight["10.0.0.9:7000"])
	assert.Len(t, other.lost, 0, "a request to another member")
	assert.Equal(t, typeError, s.onDrained([]byte(`{"seen":[]}`)).MessageTypeName, "a notice without its member")
}

// swallow is an actor that never answers; answer, one that answers each
// request with what it is given.
type swallow struct{}

func (swallow) Receive(actor.Context) {}

type answer struct{ resp *pcluster.GrainResponse }

func (a answer) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*pcluster.GrainRequest); ok {
		ctx.Respond(a.resp)
	}
}

// A request that was lost on its way (its grain never answers) ends when
// the member's drain ends without it: send says it did not run, so that
// request sends it again. One that reached a grain after the drain ended
// is answered NotRun, which says the same. One the member lists fails.
func TestClusterSendEndsAtTheDrainedNotice(t *testing.T) {
	s, _ := tunnelServers()
	defer s.m.system.Shutdown()
	root := s.m.system.Root
	addr := s.m.Address()
	s.draining[addr] = time.Now().Add(time.Minute)
	lostErr := func(l lostMember) error { return errors.New(l.member + ": " + l.why) }

	silent := root.Spawn(actor.PropsFromProducer(func() actor.Actor { return swallow{} }))
	for _, tc := range []struct {
		seen []string
		want string
	}{
		{nil, errNotDelivered.Error()},
		{[]string{addr + "/7"}, addr + ": its drain ended before it answered"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := s.send(context.Background(), silent, addr+"/7", typeCallTool, []byte(`{}`), "CallTool", lostErr)
			done <- err
		}()
		require.Eventually(t, func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return len(s.inflight[addr]) == 1
		}, 5*time.Second, time.Millisecond)
		s.drained(drainedNotice{Member: addr, Seen: tc.seen})
		assert.EqualError(t, <-done, tc.want)
	}

	refuses := root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return answer{&pcluster.GrainResponse{MessageTypeName: typeNotRun, MessageData: []byte("null")}}
	}))
	_, err := s.send(context.Background(), refuses, addr+"/8", typeCallTool, []byte(`{}`), "CallTool", lostErr)
	assert.ErrorIs(t, err, errNotDelivered)
	assert.Equal(t, int64(1), s.Lost.Load(), "the listed one only")
}

// A grain runs a request that reaches it during its member's drain (and
// records it), and refuses, NotRun, one that reaches it once the drain
// ended.
func TestClusterGrainRefusesOnceDrained(t *testing.T) {
	h, err := host.New(host.Config{Servers: map[string]host.Server{}}, host.Options{})
	require.NoError(t, err)
	defer h.Close()
	s, _ := tunnelServers()
	defer s.m.system.Shutdown()
	g := &serverGrain{m: s.m, id: "s", h: h}
	g.m.drainLog.begin()
	resp := g.serve(h, &pcluster.GrainRequest{MessageTypeName: typeTools, MessageData: []byte(`{"id":"10.0.0.1:7000/5"}`)})
	assert.Equal(t, typeResult, resp.MessageTypeName, string(resp.MessageData))
	assert.Equal(t, map[string][]string{"10.0.0.1:7000": {"10.0.0.1:7000/5"}}, g.m.drainLog.end())
	resp = g.serve(h, &pcluster.GrainRequest{MessageTypeName: typeTools, MessageData: []byte(`{"id":"10.0.0.1:7000/6"}`)})
	assert.Equal(t, typeNotRun, resp.MessageTypeName)
}
