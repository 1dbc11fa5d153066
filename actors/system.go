package actors

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	cmap "github.com/orcaman/concurrent-map"
)

// DefaultSystem returns the process's shared actor system, made on first
// use: every Runtime started without Config.System runs on it. A system
// costs hundreds of kilobytes even with its registry compacted (see
// NewSystem), so one per connection would make a host with many servers
// pay for each. It starts
// no goroutine of its own; a connection's actors, PIDs and goroutines are
// all gone once its Runtime is Done. Its own logs go, with a Warn floor, to
// slog.Default() as it is at that first use: no connection's logger may
// stand for the whole process.
func DefaultSystem() *actor.ActorSystem {
	defaultSystem.once.Do(func() { defaultSystem.sys = NewSystem(slog.Default()) })
	return defaultSystem.sys
}

var defaultSystem struct {
	once sync.Once
	sys  *actor.ActorSystem
}

// topLevel supervises every connection actor. One value for the process:
// protoactor keeps a guardian per strategy value, in a registry entry
// never removed, so a strategy made per connection would leave one behind
// in a shared system at every connect.
var topLevel actor.SupervisorStrategy = endOnFailure{}

// endOnFailure is the strategy of the connection actors: one that panicked
// in its own Receive is resumed (its state kept, the message it failed on
// dropped) and told, and ends its connection as any internal failure does.
// (Stopped, or restarted as the library's default would, nothing would end
// its Runtime: its calls would wait, and Close would wait for it forever.)
type endOnFailure struct{}

func (endOnFailure) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	sup.ResumeChildren(child)
	sys.Root.Send(child, &actorFailed{reason: reason})
}

// NewSystem returns an actor system whose own logging goes to logger with a
// Warn floor: the library's Info chatter (system started, dead letters,
// recovered panics) stays out, and nothing reaches stdout, which is the
// stdio transport's channel. Its PID registry is compacted
// (compactRegistry).
func NewSystem(logger *slog.Logger) *actor.ActorSystem {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := warnFloor{logger.Handler()}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(h).With("component", "protoactor")
	}), actor.WithDeadLetterThrottleInterval(deadLetterThrottle))
	compactRegistry(sys)
	return sys
}

// deadLetterThrottle is the period of protoactor's throttle of its
// dead-letter log lines. The first dead letter of a period starts a
// goroutine that lives the whole period (1 s by default), so that a test's
// leak check could find one still waiting; the lines are Info, which
// warnFloor drops anyway, so a short period costs nothing.
const deadLetterThrottle = 10 * time.Millisecond

// registryMaps is how many concurrent maps (of 32 shards each) a
// compacted PID registry spreads its PIDs over: 512 locks, plenty for the
// connection actors and their mailboxes (request children are in no
// registry: decision 79).
const registryMaps = 16

// compactRegistry gives sys's PID registry registryMaps concurrent maps
// instead of protoactor's 1 024 (32 768 Go maps, each keeping its first
// bucket once a PID has passed through it): that registry took 3 MB at
// once and about 13 MB after the first tens of thousands of spawns, all of
// it pointers the collector marked at every cycle, a third of the
// collector's work on a busy connection. The registry hashes an id modulo
// the number of maps, so it works with any; the few processes the system
// registered while it was made move over. It runs before the system is
// used by anyone.
func compactRegistry(sys *actor.ActorSystem) {
	sm := sys.ProcessRegistry.LocalPIDs
	old := sm.LocalPIDs
	sm.LocalPIDs = make([]cmap.ConcurrentMap, registryMaps)
	for i := range sm.LocalPIDs {
		sm.LocalPIDs[i] = cmap.New()
	}
	for _, m := range old {
		m.IterCb(func(id string, p any) { sm.GetBucket(id).Set(id, p) })
	}
}

type warnFloor struct{ slog.Handler }

func (w warnFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnFloor) WithAttrs(a []slog.Attr) slog.Handler { return warnFloor{w.Handler.WithAttrs(a)} }
func (w warnFloor) WithGroup(n string) slog.Handler      { return warnFloor{w.Handler.WithGroup(n)} }
