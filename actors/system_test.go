package actors

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestProtoactorLogsGoToOurLoggerWithAWarnFloor(t *testing.T) {
	var buf bytes.Buffer
	sys := NewSystem(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	sys.Logger().Info("actor system chatter")
	sys.Logger().Warn("something worth seeing")
	out := buf.String()
	assert.NotContains(t, out, "chatter")
	assert.Contains(t, out, `msg="something worth seeing"`)
	assert.Contains(t, out, "component=protoactor")
}

// A system of ours keeps its PIDs in registryMaps concurrent maps, not
// protoactor's 1 024, and every process the system registered while it was
// made is still found after the move.
func TestNewSystemCompactsItsRegistry(t *testing.T) {
	sys := actor.NewActorSystem()
	var ids []string
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		ids = append(ids, m.Keys()...)
	}
	require.Len(t, sys.ProcessRegistry.LocalPIDs.LocalPIDs, 1024)
	require.NotEmpty(t, ids, "a new system registers its own processes")
	compactRegistry(sys)
	require.Len(t, sys.ProcessRegistry.LocalPIDs.LocalPIDs, registryMaps)
	assert.Equal(t, len(ids), registered(sys))
	for _, id := range ids {
		_, ok := sys.ProcessRegistry.GetLocal(id)
		assert.True(t, ok, "process %q moved over", id)
	}
	assert.Len(t, NewSystem(nil).ProcessRegistry.LocalPIDs.LocalPIDs, registryMaps)
}

// registered counts the processes in sys's registry: every live actor,
// future and guardian has an entry.
func registered(sys *actor.ActorSystem) int {
	n := 0
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		n += m.Count()
	}
	return n
}

// A connection leaves nothing in a system it shares: no registry entry (a
// guardian per connection stayed behind before), no event-stream
// subscription, no goroutine.
func TestRuntimesLeaveNothingInASharedSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem(nil)
		cycle := func() {
			client, server := transport.NewMemoryPair()
			defer server.Close()
			rt := Start(Config{Conn: client, System: sys, Handlers: messages.Handlers{Log: func(context.Context, messages.NotificationContext, *messages.LoggingMessage) {}}})
			require.NoError(t, server.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)))
			synctest.Wait()
			require.NoError(t, rt.Close())
		}
		cycle() // the first one makes what is made once per system
		synctest.Wait()
		pids, subs, goroutines := registered(sys), sys.EventStream.Length(), testpeer.BubbleGoroutines(t)
		for range 50 {
			cycle()
		}
		synctest.Wait()
		assert.Equal(t, pids, registered(sys), "registry entries")
		assert.Equal(t, subs, sys.EventStream.Length(), "event-stream subscriptions")
		assert.Equal(t, goroutines, testpeer.BubbleGoroutines(t), "goroutines")
	})
}

// Every Runtime started without a system runs on the one DefaultSystem.
func TestStartWithoutASystemUsesTheDefaultOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, _ := transport.NewMemoryPair()
		b, _ := transport.NewMemoryPair()
		ra, rb := Start(Config{Conn: a}), Start(Config{Conn: b})
		assert.Same(t, DefaultSystem(), ra.cfg.System)
		assert.Same(t, DefaultSystem(), rb.cfg.System)
		require.NoError(t, ra.Close())
		require.NoError(t, rb.Close())
	})
}

// AfterDone's callback runs once the runtime is done, with no goroutine
// waiting for that meanwhile; registered after the end, it runs at once.
func TestAfterDoneRunsOnceTheRuntimeIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, server := transport.NewMemoryPair()
		rt := Start(Config{Conn: client})
		synctest.Wait()
		base := testpeer.BubbleGoroutines(t)
		called := make(chan bool, 2)
		rt.AfterDone(func() {
			select {
			case <-rt.Done():
				called <- true
			default:
				called <- false
			}
		})
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "goroutines while waiting")
		assert.Empty(t, called)
		require.NoError(t, server.Close()) // the connection ends by itself
		assert.True(t, <-called, "called after Done")
		rt.AfterDone(func() { called <- true })
		assert.True(t, <-called, "called when already done")
		require.Error(t, rt.Err())
	})
}

// A log rate that is not positive means the default, 50/s, as a budget
// that is not positive does for input (a negative one dropped every log
// entry); rate.Inf lifts the limit.
func TestStartGivesADefaultToANonPositiveLogRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct{ in, want rate.Limit }{{0, 50}, {-1, 50}, {5, 5}, {rate.Inf, rate.Inf}} {
			client, _ := transport.NewMemoryPair()
			rt := Start(Config{Conn: client, LogRate: c.in})
			assert.Equal(t, c.want, rt.cfg.LogRate, "LogRate %v", c.in)
			require.NoError(t, rt.Close())
		}
	})
}

// A dead letter starts protoactor's log throttle, a goroutine that lives
// one throttle period: ours is short, so it has gone long before a leak
// check gives up (with protoactor's 1 s, goleak once found one after the
// gateway's tests). In a bubble, the throttle waits on the bubble's clock:
// on the wall clock its 10 ms could pass before the check that it started
// (it failed so under -race on a loaded machine).
func TestNewSystemDeadLetterThrottleIsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := NewSystem(nil)
		defer sys.Shutdown()
		throttling := func() bool {
			buf := make([]byte, 1<<20)
			return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "NewThrottle")
		}
		require.False(t, throttling())
		sys.Root.Send(actor.NewPID(sys.Address(), "nobody"), "lost")
		synctest.Wait()
		require.True(t, throttling(), "the dead letter started the throttle")
		time.Sleep(deadLetterThrottle - time.Nanosecond)
		synctest.Wait()
		require.True(t, throttling(), "the throttle lives its period")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		require.False(t, throttling(), "the throttle ended with its period")
		assert.LessOrEqual(t, deadLetterThrottle, 50*time.Millisecond)
	})
}
