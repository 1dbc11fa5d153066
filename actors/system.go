package actors

import (
	"context"
	"log/slog"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/conduitmcp/conduit/supervisor"
)

// DefaultSystem returns the process's shared actor system, made on first
// use: every Runtime started without Config.System runs on it. A system
// costs megabytes (its PID registry alone is 1 024 maps), so one per
// connection would make a host with many servers pay gigabytes. It starts
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
var topLevel = supervisor.Stopping()

// NewSystem returns an actor system whose own logging goes to logger with a
// Warn floor: the library's Info chatter (system started, dead letters,
// recovered panics) stays out, and nothing reaches stdout, which is the
// stdio transport's channel.
func NewSystem(logger *slog.Logger) *actor.ActorSystem {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := warnFloor{logger.Handler()}
	return actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(h).With("component", "protoactor")
	}))
}

type warnFloor struct{ slog.Handler }

func (w warnFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnFloor) WithAttrs(a []slog.Attr) slog.Handler { return warnFloor{w.Handler.WithAttrs(a)} }
func (w warnFloor) WithGroup(n string) slog.Handler      { return warnFloor{w.Handler.WithGroup(n)} }
