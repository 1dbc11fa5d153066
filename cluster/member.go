// Package cluster runs a gateway's servers over several processes, the
// members of one protoactor-go cluster: each upstream server is a virtual
// actor (a grain of kind "mcp-server" keyed by the server's name) that the
// cluster activates on exactly one member, found by rendezvous hashing over
// the members (identitylookup/disthash); the member list comes from
// protoactor's automanaged provider (each member polls the others' health
// endpoints). Any member's gateway reaches any server through cluster
// requests (Servers, a gateway.Upstream). docs/cluster.md says what crosses
// members, what is lost when one dies and what survives.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/labstack/echo"
	"google.golang.org/grpc"

	"github.com/conduitmcp/conduit/host"
)

// Options configure a member.
type Options struct {
	// Name is the cluster's name: members of other names are ignored.
	Name string
	// Listen is the member's remote address, HOST:PORT, where the other
	// members reach its grains (gRPC). HOST is also the address it
	// advertises: not 0.0.0.0.
	Listen string
	// HealthPort is the port of the automanaged provider's health
	// endpoint (HTTP, on every interface: a limit of the provider).
	HealthPort int
	// Seeds are the health endpoints (HOST:PORT) of every member, this
	// one included: the member list is those that answer.
	Seeds []string
	// Refresh is how often the provider polls the seeds and the members'
	// gateways refresh the catalog from the server grains (default 1s).
	Refresh time.Duration
	// Secret is the cluster's shared secret (MinSecret bytes at least),
	// the same on every member: the requestStates of modern calls are
	// sealed under a key derived from it, so that any member opens any
	// member's (docs/cluster.md).
	Secret []byte
	// Drain bounds how long a server's requests in flight may go on once
	// its grain stops here (it moved, or this member drains before it
	// leaves): past it, its server stops and they fail (default 30s).
	Drain time.Duration
	// Events, when set, is told of the cluster's membership as this member
	// sees it (joined, left, lost, draining); nil logs them.
	Events func(Event)
	// Host are the options of the servers this member holds.
	Host host.Options
	// Logger receives the member's logs (joins, leaves, losses); nil
	// discards. protoactor's own logs reach it only at debug level.
	Logger *slog.Logger
}

// Member is one process of the cluster: it holds the grains the cluster
// places on it, and its Servers reach every grain.
type Member struct {
	cfg    host.Config
	opts   Options
	logger *slog.Logger
	system *actor.ActorSystem
	c      *pcluster.Cluster

	servers  atomic.Pointer[Servers] // its gateway's view, once made
	tunnels  *tunnels                // the legacy session exchanges through and on it (sessions.go)
	draining atomic.Bool             // Drain began
	// leaving: the other members have heard of the drain (or had a second
	// to), so the health endpoint answers 503. Not before: a member that
	// dropped this one at its poll before the notice came would fail the
	// requests in flight here instead of waiting for their answers.
	leaving  atomic.Bool
	drainLog drainLog     // the grain requests that reached it since Drain began
	busy     atomic.Int64 // grain requests in flight on this member
	// Cut counts requests in flight on a grain that stopped here which
	// were still running when Drain's bound passed: their server stopped.
	Cut atomic.Int64
	// Unattributed counts input requests of the servers it holds that
	// belonged to no call it could name (refused -32601).
	Unattributed atomic.Int64
	// Orphaned counts calls on the servers it holds that were cancelled
	// because the member that made them was lost.
	Orphaned atomic.Int64

	mu       sync.Mutex
	hosts    map[string]*host.Host   // the servers this member holds, by name
	grains   map[string]*serverGrain // their activations, by name (register)
	closed   bool
	retiring sync.WaitGroup // hosts of stopped grains, until closed (Add under mu, before closed)
}

// Join starts a member of the cluster opts.Name serving the servers of cfg
// (every member must have the same cfg) and returns once the provider runs.
func Join(cfg host.Config, opts Options) (m *Member, err error) {
	if opts.Name == "" {
		return nil, errors.New("cluster: no cluster name")
	}
	hostName, portText, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("cluster: listen address %q: %w", opts.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port <= 0 || hostName == "" || hostName == "0.0.0.0" || hostName == "::" {
		return nil, fmt.Errorf("cluster: listen address %q: want HOST:PORT with a host the others can reach and a port", opts.Listen)
	}
	if opts.HealthPort <= 0 {
		return nil, errors.New("cluster: no health port")
	}
	if len(opts.Seeds) == 0 {
		return nil, errors.New("cluster: no seeds")
	}
	if len(opts.Secret) < MinSecret {
		return nil, fmt.Errorf("cluster: no shared secret of %d bytes at least (--cluster-secret-file FILE or $CONDUIT_CLUSTER_SECRET, the same on every member): it seals the modern calls' requestStates that any member may receive", MinSecret)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.Drain <= 0 {
		opts.Drain = 30 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m = &Member{cfg: cfg, opts: opts, logger: logger, hosts: map[string]*host.Host{}}
	m.tunnels = newTunnels(m)
	protoLogs := slog.New(slog.DiscardHandler)
	if logger.Enabled(context.Background(), slog.LevelDebug) {
		protoLogs = logger.With("lib", "protoactor")
	}
	m.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return protoLogs }))
	kind := pcluster.NewKind(Kind, actor.PropsFromProducer(func() actor.Actor { return &serverGrain{m: m} }))
	// The provider's health endpoint, served by an echo server of ours
	// only so that it prints nothing: the provider's own writes a banner
	// to stdout, the stdio transport's channel.
	health := echo.New()
	health.HideBanner, health.HidePort = true, true
	health.Logger.SetOutput(io.Discard)
	node := automanaged.NewNode(opts.Name, m.system.ID, hostName, port, opts.HealthPort, []string{Kind})
	health.GET("/_health", func(c echo.Context) error {
		if m.leaving.Load() {
			// Draining, and the others know it: every member, this one
			// too, drops it at its next poll and places its grains
			// elsewhere.
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"draining": m.system.ID})
		}
		return c.JSON(http.StatusOK, node)
	})
	provider := automanaged.NewWithTesting(opts.Refresh, opts.HealthPort, health, opts.Seeds...)
	// A session exchange's request carries its body (MaxTunnelBody) whole;
	// gRPC's default bound of a received message is that size.
	rc := remote.Configure(hostName, port, remote.WithServerOptions(grpc.MaxRecvMsgSize(4*MaxTunnelBody)))
	cc := pcluster.Configure(opts.Name, provider, disthash.New(), rc, pcluster.WithKinds(kind))
	m.c = pcluster.New(m.system, cc)
	defer func() {
		// protoactor panics when it cannot listen or start its provider.
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("cluster: member did not start: %v", r)
		}
	}()
	m.c.StartMember()
	if _, err := m.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &relayActor{m: m} }), relayName); err != nil {
		m.c.Shutdown(false)
		return nil, fmt.Errorf("cluster: relay actor: %w", err)
	}
	if _, err := m.system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return &streamsActor{t: m.tunnels} }), streamsName); err != nil {
		m.c.Shutdown(false)
		return nil, fmt.Errorf("cluster: session streams actor: %w", err)
	}
	return m, nil
}

// Address is the member's remote address, HOST:PORT.
func (m *Member) Address() string { return m.system.Address() }

// ID is the member's id in the cluster (its actor system's).
func (m *Member) ID() string { return m.system.ID }

// Held lists the servers this member holds now.
func (m *Member) Held() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name := range m.hosts {
		out = append(out, name)
	}
	return out
}

// activate starts the supervisor of server name on this member: a host of
// that one server. A name the configuration lacks gets nil.
func (m *Member) activate(name string) *host.Host {
	s, ok := m.cfg.Servers[name]
	if !ok {
		m.logger.Warn("cluster: a grain was activated for a server not in this member's configuration", "server", name)
		return nil
	}
	ho := m.opts.Host
	m.inputHandlers(&ho.Client.Handlers)
	h, err := host.New(host.Config{Servers: map[string]host.Server{name: s}}, ho)
	if err != nil {
		m.logger.Error("cluster: server grain did not start", "server", name, "err", err)
		return nil
	}
	m.mu.Lock()
	old, closed := m.hosts[name], m.closed
	if !closed {
		m.hosts[name] = h
	}
	m.mu.Unlock()
	if old != nil {
		go old.Close()
	}
	if closed {
		go h.Close()
		return nil
	}
	m.logger.Info("cluster: server activated on this member", "server", name, "member", m.Address())
	return h
}

// deactivate stops h, the supervisor of server name, when its grain stops
// (it moved to another member, or this member stops), once the grain's
// requests in flight (busy) have ended, Options.Drain at most.
func (m *Member) deactivate(name string, h *host.Host, busy *atomic.Int64) {
	if h == nil {
		return
	}
	m.mu.Lock()
	mine := m.hosts[name] == h
	if mine {
		delete(m.hosts, name)
		m.retiring.Add(1)
	}
	m.mu.Unlock()
	if !mine { // replaced (closed then) or closed by Close
		return
	}
	m.logger.Info("cluster: server deactivated on this member", "server", name, "member", m.Address(), "in_flight", busy.Load())
	go func() {
		defer m.retiring.Done()
		if left := waitIdle(context.Background(), busy, m.opts.Drain); left > 0 {
			m.Cut.Add(left)
			m.logger.Warn("cluster: a moved server's requests in flight outlived the drain bound; its server stops", "server", name, "requests", left, "bound", m.opts.Drain)
		}
		_ = h.Close()
	}()
}

// waitIdle waits until busy is 0, or bound passes or ctx ends, and returns
// what is left of it.
func waitIdle(ctx context.Context, busy *atomic.Int64, bound time.Duration) int64 {
	if busy.Load() <= 0 {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for busy.Load() > 0 {
		select {
		case <-ctx.Done():
			return busy.Load()
		case <-tick.C:
		}
	}
	return 0
}

// othersStay reports whether a member other than this one is in the
// topology and has not said it drains: when none is, no one takes the
// grains over, and the provider (which publishes no empty topology) never
// drops this member, so the drain waits only for the requests in flight.
func (m *Member) othersStay() bool {
	s := m.servers.Load()
	for _, mb := range m.c.MemberList.Members().Members() {
		if mb.Id == m.ID() {
			continue
		}
		if s == nil {
			return true
		}
		s.mu.Lock()
		until, drains := s.draining[mb.Address()]
		s.mu.Unlock()
		if !drains || time.Now().After(until) {
			return true
		}
	}
	return false
}

// Drain hands this member's grains over before it leaves: it tells the
// other members that it drains (so that they wait for its answers, rather
// than fail them, when the provider drops it), then stops answering the
// provider's health checks (so that every member, this one too, places its
// grains elsewhere from its next poll on: a grain that stops here finishes
// its requests in flight, Options.Drain at most), and waits until no
// request is in flight on its grains, or ctx ends. It returns how many
// were still in flight then. Close leaves the cluster after it.
func (m *Member) Drain(ctx context.Context) int64 {
	if m.draining.Swap(true) {
		return m.busy.Load()
	}
	m.drainLog.begin() // before any member hears of the drain
	defer m.drained()
	until := time.Now().Add(m.opts.Drain + 4*m.opts.Refresh + 5*time.Second)
	if s := m.servers.Load(); s != nil {
		// Its own gateway's requests to its grains go on too when its
		// own topology drops it.
		s.mu.Lock()
		s.draining[m.Address()] = until
		s.mu.Unlock()
	}
	m.event(Event{Kind: EventDraining, Member: m.Address(), ID: m.ID(), Members: m.c.MemberList.Members().Len()})
	data, _ := json.Marshal(drainingNotice{Member: m.Address(), UntilMS: until.UnixMilli()})
	m.tellOthers(typeDraining, func(string) []byte { return data })
	m.leaving.Store(true)
	// Wait for the topology without this member (its own poll sees the
	// 503 as the others' do), then a refresh more for the others'.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for m.c.MemberList.ContainsMemberID(m.ID()) && m.othersStay() {
		select {
		case <-ctx.Done():
			return m.busy.Load()
		case <-tick.C:
		}
	}
	if m.othersStay() {
		select {
		case <-ctx.Done():
			return m.busy.Load()
		case <-time.After(m.opts.Refresh):
		}
	}
	return waitIdle(ctx, &m.busy, m.opts.Drain)
}

// drained tells every member, this one too, that the drain ended, and
// which of its requests reached the grains here meanwhile
// (drainedNotice): from now on, none runs here.
func (m *Member) drained() {
	seen := m.drainLog.end()
	if s := m.servers.Load(); s != nil {
		s.drained(drainedNotice{Member: m.Address(), Seen: seen[m.Address()]})
	}
	m.tellOthers(typeDrained, func(addr string) []byte {
		data, _ := json.Marshal(drainedNotice{Member: m.Address(), Seen: seen[addr]})
		return data
	})
}

// tellOthers sends a notice (data, made for each member's address) to the
// relay of every other member of the topology, and waits for their acks, a
// second at most.
func (m *Member) tellOthers(typeName string, data func(addr string) []byte) {
	var futures []*actor.Future
	for _, mb := range m.c.MemberList.Members().Members() {
		if mb.Id == m.ID() {
			continue
		}
		futures = append(futures, m.system.Root.RequestFuture(actor.NewPID(mb.Address(), relayName),
			&pcluster.GrainRequest{MessageTypeName: typeName, MessageData: data(mb.Address())}, time.Second))
	}
	for _, f := range futures {
		_, _ = f.Result() // an ack, or a member that is gone
	}
}

// drainLog records the grain requests that reach a member once its drain
// began, by sender, and refuses them once it ended. Safe for concurrent
// use.
type drainLog struct {
	mu    sync.Mutex
	seen  map[string][]string // request IDs by their sender's address; nil until begin
	ended bool
}

func (d *drainLog) begin() {
	d.mu.Lock()
	d.seen = map[string][]string{}
	d.mu.Unlock()
}

// admit records a request that reached a grain (request.ID), and says
// whether it may run: not once the drain ended.
func (d *drainLog) admit(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return false
	}
	if i := strings.LastIndexByte(id, '/'); d.seen != nil && i > 0 {
		d.seen[id[:i]] = append(d.seen[id[:i]], id)
	}
	return true
}

// end refuses the requests from now on, and returns those recorded.
func (d *drainLog) end() map[string][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	return d.seen
}

// Close leaves the cluster gracefully (the provider stops announcing this
// member, so the others place its grains elsewhere when next addressed)
// and stops the servers it held, those of grains that stopped before
// included (each once its requests in flight ended, Options.Drain at
// most). Drain first hands them over.
func (m *Member) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	hosts := m.hosts
	m.hosts = map[string]*host.Host{}
	m.mu.Unlock()
	m.c.Shutdown(true)
	var errs []error
	for _, h := range hosts {
		errs = append(errs, h.Close())
	}
	m.retiring.Wait() // the servers of grains that stopped before, bounded by Drain
	return errors.Join(errs...)
}
