package actors_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/transport"
)

// handshakeOnly plays a legacy server on conn just long enough for a client
// to connect: it refuses the server/discover probe, answers initialize at
// 2025-11-25 and returns once notifications/initialized has come. It reads
// in the caller's goroutine and writes pre-built replies, so once it
// returns the server side of the connection has no goroutine and costs
// almost nothing.
func handshakeOnly(conn transport.Conn) error {
	ctx := context.Background()
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var f struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal(msg.Data, &f); err != nil {
			return err
		}
		var reply string
		switch f.Method {
		case "server/discover":
			reply = `{"jsonrpc":"2.0","id":` + string(f.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`
		case "initialize":
			reply = `{"jsonrpc":"2.0","id":` + string(f.ID) + `,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"idle","version":"1"}}}`
		case "notifications/initialized":
			return nil
		default:
			continue
		}
		if err := conn.Write(ctx, []byte(reply)); err != nil {
			return err
		}
	}
}

// idleClient connects a client with opts to a handshakeOnly server over an
// in-memory pair; close closes both ends.
// idle lets a bubble's connections go idle: past the dispatcher workers'
// idle time (fake time: instant), then until every goroutine is blocked.
func idle() {
	synctest.Wait()
	time.Sleep(10 * time.Millisecond)
	synctest.Wait()
}

func idleClient(t testing.TB, opts conduit.Options) (c *conduit.Client, close func()) {
	t.Helper()
	c, serverSide := handshaken(t, opts)
	return c, func() {
		_ = c.Close()
		_ = serverSide.Close()
	}
}

// handshaken is a client connected over an in-memory pair whose server
// side answered the handshake and is returned, to send more.
func handshaken(t testing.TB, opts conduit.Options) (*conduit.Client, transport.Conn) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	served := make(chan error, 1)
	go func() { served <- handshakeOnly(serverSide) }()
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
	require.NoError(t, err)
	require.NoError(t, <-served)
	return c, serverSide
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

// warmRegistry puts a key in, and takes it out of, every map of sys's PID
// registry (concurrent maps of 32 shards each; 400 keys per map miss a
// shard about once per whole registry). A shard keeps its first bucket once
// used, so a fresh shared system's heap grows as its shards are first used,
// once per process: that is the system warming up, not a connection left
// behind.
func warmRegistry(sys *actor.ActorSystem) {
	for _, m := range sys.ProcessRegistry.LocalPIDs.LocalPIDs {
		for i := range 400 {
			k := "warm" + strconv.Itoa(i)
			m.Set(k, nil)
			m.Remove(k)
		}
	}
}

// cycles is how many clients TestConnectCloseLeavesNothing connects and
// closes one after the other: by default enough to see a leak of a few
// hundred bytes per cycle, few enough for CI's -race run (about 5 s);
// docs/benchmarks.md records a run of 10 000 by hand:
//
//	go test -race -count=1 ./actors_test/ -run TestConnectCloseLeavesNothing -v -args -cycles 10000
var cycles = flag.Int("cycles", 2000, "connect/close cycles of TestConnectCloseLeavesNothing")

// Closing a client leaves nothing of it in the shared actor system: after
// many connect/close cycles the goroutines are exactly as many as before,
// and so are the system's registry entries and event-stream subscriptions;
// the heap is back within 256 KB of where it was.
func TestConnectCloseLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := actors.DefaultSystem()
		cycle := func() {
			_, closeIt := idleClient(t, conduit.Options{})
			closeIt()
		}
		cycle() // what is made once per process
		warmRegistry(sys)
		synctest.Wait()
		goroutines, pids, subs := testpeer.BubbleGoroutines(t), registered(sys), sys.EventStream.Length()
		before := heapAfterGC()
		for range *cycles {
			cycle()
		}
		synctest.Wait()
		after := heapAfterGC()
		assert.Equal(t, goroutines, testpeer.BubbleGoroutines(t), "goroutines")
		assert.Equal(t, pids, registered(sys), "registry entries")
		assert.Equal(t, subs, sys.EventStream.Length(), "event-stream subscriptions")
		assert.Less(t, int64(after)-int64(before), int64(256<<10), "heap growth over %d cycles: %d → %d bytes", *cycles, before, after)
		t.Logf("%d cycles: heap %d → %d bytes, %d goroutines in the bubble", *cycles, before, after, goroutines)
	})
}

func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// An idle client over an in-memory pair keeps exactly one goroutine: the
// runtime's reader. Nothing is in flight, so there is no writer, no
// notification worker and no timer; and nothing is parked waiting for the
// end of the connection (the teardown and the client's session watcher
// start when it ends).
func TestIdleClientsKeepOneGoroutineEach(t *testing.T) {
	const n = 50
	synctest.Test(t, func(t *testing.T) {
		_, closeIt := idleClient(t, conduit.Options{}) // what is made once per process
		closeIt()
		idle()
		base := testpeer.BubbleGoroutines(t)
		closers := make([]func(), 0, n)
		for range n {
			_, closeIt := idleClient(t, conduit.Options{})
			closers = append(closers, closeIt)
		}
		idle()
		assert.Equal(t, n, testpeer.BubbleGoroutines(t)-base, "goroutines of %d idle clients", n)
		for _, closeIt := range closers {
			closeIt()
		}
		synctest.Wait()
		assert.Equal(t, base, testpeer.BubbleGoroutines(t), "goroutines after Close")
	})
}

// Options.System puts the client's actors in the given system, and Close
// takes them out again.
func TestOptionsSystemHostsTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := actors.NewSystem(nil)
		base := registered(sys)
		_, closeIt := idleClient(t, conduit.Options{System: sys})
		synctest.Wait()
		// The connection actor and the guardian of the top-level strategy
		// (made once per system): the call tracker is the connection's
		// state, and no mailbox is spawned before a notification needs it.
		assert.Equal(t, base+2, registered(sys), "registry entries while connected")
		closeIt()
		synctest.Wait()
		assert.Equal(t, base+1, registered(sys), "registry entries after Close: the guardian alone")
	})
}

// The notification mailbox is spawned by the first notification that has
// a handler to reach, not before, and goes at Close with the rest.
func TestMailboxIsSpawnedByTheFirstNotificationItServes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := actors.NewSystem(nil)
		base := registered(sys)
		var got []string
		opts := conduit.Options{System: sys, Handlers: conduit.Handlers{
			Notification: func(_ context.Context, _ conduit.NotificationContext, n *conduit.Notification) {
				got = append(got, n.Method)
			},
		}}
		c, serverSide := handshaken(t, opts)
		synctest.Wait()
		assert.Equal(t, base+2, registered(sys), "before any notification")
		// A log entry has no handler here: it spawns nothing.
		require.NoError(t, serverSide.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)))
		synctest.Wait()
		assert.Equal(t, base+2, registered(sys), "after a log entry nobody listens for")
		require.NoError(t, serverSide.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)))
		synctest.Wait()
		assert.Equal(t, base+3, registered(sys), "after a notification with a handler")
		assert.Equal(t, []string{"notifications/tools/list_changed"}, got)
		require.NoError(t, c.Close())
		_ = serverSide.Close()
		synctest.Wait()
		assert.Equal(t, base+1, registered(sys), "after Close: the guardian alone")
	})
}

// An idle client of a stdio server keeps two goroutines: the runtime's
// reader and the transport's stdout reader (a third forwards stderr when
// it is logged). Counted by the package that started them, once the
// writer and the dispatcher workers have had their moment to exit.
func TestIdleStdioClientKeepsTwoGoroutines(t *testing.T) {
	script := `read probe; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'; ` +
		`read init; echo '{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"idle","version":"1"}}}'; ` +
		`read initialized; cat >/dev/null`
	c, err := conduit.Connect(context.Background(), &transport.Command{Path: "sh", Args: []string{"-c", script}}, conduit.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "2025-11-25", c.ProtocolVersion())
	// Real time here: the connection's dispatcher workers exit after their
	// idle millisecond, the writer once its queue is empty.
	var ours []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var buf bytes.Buffer
		require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 2))
		ours = ours[:0]
		for g := range strings.SplitSeq(buf.String(), "\n\n") {
			if strings.Contains(g, "created by github.com/conduitmcp/conduit") {
				ours = append(ours, g)
			}
		}
		if len(ours) <= 2 || time.Now().After(deadline) {
			break
		}
	}
	assert.Len(t, ours, 2, "goroutines of an idle stdio client:\n%s", strings.Join(ours, "\n\n"))
}

// A request child stops itself once it has replied; its Terminated may
// reach the connection before its reply or after. Either way nothing is
// left: after 300 requests, 8 at a time, the registry holds the
// connection alone, every slot is free again (a ninth concurrent request
// is not refused as busy), and Close finds no child to stop.
func TestRequestChildrenLeaveNothingBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys := actors.NewSystem(nil)
		base := registered(sys)
		roots := rootsFunc(func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{}, nil
		})
		c, srv := connect(t, conduit.Options{Handler: roots, System: sys, InputRateLimit: rate.Inf}, "2025-11-25")
		for round := range 300 / 8 {
			for i := range 8 {
				srv.request(round*8+i, "roots/list", nil)
			}
			for range 8 {
				m := srv.next()
				require.Contains(t, m, "result", m)
			}
		}
		synctest.Wait()
		assert.Equal(t, base+2, registered(sys), "the connection and the guardian")
		for i := range 8 {
			srv.request(1000+i, "roots/list", nil)
		}
		for range 8 {
			m := srv.next()
			require.Contains(t, m, "result", "no slot left taken: %v", m)
		}
		assert.Zero(t, c.Stats().Busy)
		require.NoError(t, c.Close())
		synctest.Wait()
		assert.Equal(t, base+1, registered(sys), "after Close: the guardian alone")
	})
}
