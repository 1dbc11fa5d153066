package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
)

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
