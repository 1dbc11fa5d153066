package restart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// fakeServer records what its supervisor does. Connect blocks while hold is
// set (ignoring its ctx, as a stuck dial may), until release is closed.
type fakeServer struct {
	mu       sync.Mutex
	log      []string
	reports  []Report
	connects int
	closes   int
	panicOn  State // Report panics once on this state
	hold     chan struct{}
	t0       time.Time
}

func (f *fakeServer) Connect(ctx context.Context) (ServerSession, error) {
	f.mu.Lock()
	f.connects++
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return &fakeSession{f: f}, nil
}

func (f *fakeServer) Report(r Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, r)
	f.log = append(f.log, time.Since(f.t0).String()+" "+string(r.State))
	if r.State == f.panicOn {
		f.panicOn = ""
		panic("boom")
	}
}

func (f *fakeServer) snapshot() (log []string, connects, closes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...), f.connects, f.closes
}

type fakeSession struct{ f *fakeServer }

func (s *fakeSession) Serve(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (s *fakeSession) Close() error {
	s.f.mu.Lock()
	s.f.log = append(s.f.log, time.Since(s.f.t0).String()+" closed")
	s.f.closes++
	s.f.mu.Unlock()
	return nil
}

func spec(name string) ServerSpec {
	return ServerSpec{
		Name: name, Policy: Policy{InitialBackoff: 500 * ms, MaxBackoff: 30 * time.Second,
			Intensity: 5, Period: time.Minute, ResetAfter: time.Minute, Revive: -1},
		Jitter: func() float64 { return 0.5 },
	}
}

// A panic in one server's supervisor actor is logged, counted as that
// server's failure and restarted with backoff: its session is closed, and
// it starts again 500 ms later. The other server is not touched.
func TestServerSupervisorPanicRestartsOnlyThatServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		tree := NewTree(slog.New(slog.NewTextHandler(&logs, nil)))
		a := &fakeServer{panicOn: Ready, t0: time.Now()}
		b := &fakeServer{t0: time.Now()}
		tree.Start(a, spec("a"))
		tree.Start(b, spec("b"))
		time.Sleep(time.Second)
		synctest.Wait()

		log, connects, closes := a.snapshot()
		// The old session is closed (by its goroutine, beside the actor)
		// before the next start.
		require.Len(t, log, 5)
		assert.Equal(t, "0s ready", log[0])
		assert.ElementsMatch(t, []string{"0s closed", "0s restarting"}, log[1:3])
		assert.Equal(t, []string{"500ms starting", "500ms ready"}, log[3:])
		assert.Equal(t, 2, connects)
		assert.Equal(t, 1, closes)
		a.mu.Lock()
		r := a.reports[1]
		a.mu.Unlock()
		assert.Equal(t, 1, r.Attempt)
		assert.Equal(t, a.t0.Add(500*ms), r.NextRetry)
		assert.EqualError(t, r.Err, "server supervisor panicked: boom")
		assert.Contains(t, logs.String(), `msg="server supervisor panicked; restarting its server" server=a panic=boom`)

		log, connects, closes = b.snapshot()
		assert.Equal(t, []string{"0s ready"}, log)
		assert.Equal(t, 1, connects)
		assert.Equal(t, 0, closes)

		tree.Close()
	})
}

// Close stops every server supervisor: each closes its session, and Done
// is closed for each. (TestMain's goleak finds any goroutine left.)
func TestTreeCloseStopsEveryServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(nil)
		var fakes []*fakeServer
		var sups []*Supervised
		for _, name := range []string{"a", "b", "c"} {
			f := &fakeServer{t0: time.Now()}
			fakes = append(fakes, f)
			sups = append(sups, tree.Start(f, spec(name)))
		}
		synctest.Wait()
		tree.Close()
		for i, f := range fakes {
			log, connects, closes := f.snapshot()
			assert.Equal(t, []string{"0s ready", "0s closed"}, log)
			assert.Equal(t, 1, connects)
			assert.Equal(t, 1, closes)
			select {
			case <-sups[i].Done():
			default:
				t.Errorf("server %d not done", i)
			}
		}
	})
}

// A connect that returns after its server's supervisor stopped is ignored:
// no ready report, its session is closed, and Done waits for it.
func TestLateConnectAfterStopIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(nil)
		defer tree.Close()
		f := &fakeServer{hold: make(chan struct{}), t0: time.Now()}
		s := tree.Start(f, spec("a"))
		synctest.Wait()
		s.Stop()
		synctest.Wait()
		select {
		case <-s.Done():
			t.Fatal("done while its connect still runs")
		default:
		}
		close(f.hold)
		synctest.Wait()
		<-s.Done()
		log, connects, closes := f.snapshot()
		assert.Equal(t, []string{"0s closed"}, log)
		assert.Equal(t, 1, connects)
		assert.Equal(t, 1, closes)
	})
}

// A server whose session ends is restarted with backoff; after Intensity
// starts within Period it is parked. The numbers are supervisor.Restarts'.
func TestServerEndedRestartsThenParks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(nil)
		defer tree.Close()
		f := &failingServer{t0: time.Now()}
		sp := spec("a")
		sp.Policy.Intensity = 3
		tree.Start(f, sp)
		time.Sleep(time.Minute)
		synctest.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Equal(t, []string{"0s restarting", "500ms starting", "500ms restarting", "1.5s starting", "1.5s parked"}, f.log)
		require.Len(t, f.reports, 5)
		assert.Equal(t, Report{State: Parked, Restarts: 2, Attempt: 3, Err: errDial}, f.reports[4])
	})
}

var errDial = errors.New("dial failed")

type failingServer struct {
	mu      sync.Mutex
	log     []string
	reports []Report
	t0      time.Time
}

func (f *failingServer) Connect(context.Context) (ServerSession, error) { return nil, errDial }

func (f *failingServer) Report(r Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports = append(f.reports, r)
	f.log = append(f.log, time.Since(f.t0).String()+" "+string(r.State))
}

// A supervisor stopped while its first start still waits for the one it
// replaces (ServerSpec.After) is not done before that one is: Done is what
// a third supervisor of the same server waits for, and two processes of
// one server must never overlap.
func TestDoneWaitsForTheReplacedSupervisor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(nil)
		defer tree.Close()
		old := &fakeServer{hold: make(chan struct{}), t0: time.Now()}
		a := tree.Start(old, spec("a"))
		synctest.Wait()
		a.Stop() // its connect is stuck: a is not done

		sp := spec("a")
		sp.After = a.Done()
		b := tree.Start(&fakeServer{t0: time.Now()}, sp)
		synctest.Wait()
		b.Stop() // before a is done: b never started
		synctest.Wait()
		early := false
		select {
		case <-b.Done():
			early = true
		default:
		}
		close(old.hold)
		synctest.Wait()
		<-a.Done()
		<-b.Done()
		assert.False(t, early, "b done while the supervisor it replaced still runs")
	})
}

type signInErr struct{}

func (signInErr) Error() string     { return "the server needs sign-in: run `conduit login` for it" }
func (signInErr) NeedsSignIn() bool { return true }

// signInServer needs a sign-in until signedIn is set.
type signInServer struct {
	failingServer
	signedIn bool
}

func (f *signInServer) Connect(context.Context) (ServerSession, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.signedIn {
		return nil, fmt.Errorf("connect: %w", signInErr{})
	}
	return &fakeSession{f: &fakeServer{t0: f.t0}}, nil
}

// A server that needs sign-in waits in a state of its own, tried every
// SignInRetry without using its restart budget (never parked), and starts
// once signed in, without a restart of the tree.
func TestServerThatNeedsSignInWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tree := NewTree(nil)
		defer tree.Close()
		f := &signInServer{failingServer: failingServer{t0: time.Now()}}
		sp := spec("a")
		sp.Policy.Intensity = 2
		tree.Start(f, sp)
		time.Sleep(time.Minute)
		synctest.Wait()
		f.mu.Lock()
		assert.Equal(t, []string{"0s needs sign-in", "15s starting", "15s needs sign-in", "30s starting", "30s needs sign-in",
			"45s starting", "45s needs sign-in", "1m0s starting", "1m0s needs sign-in"}, f.log)
		assert.Equal(t, NeedsSignIn, f.reports[0].State)
		assert.Contains(t, f.reports[0].Err.Error(), "conduit login")
		f.signedIn = true
		f.mu.Unlock()
		time.Sleep(SignInRetry)
		synctest.Wait()
		f.mu.Lock()
		defer f.mu.Unlock()
		assert.Equal(t, "1m15s ready", f.log[len(f.log)-1])
	})
}
