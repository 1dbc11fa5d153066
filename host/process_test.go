package host

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/internal/testpeer"
)

// realProcesses skips a test that runs real servers where it cannot.
func realProcesses(t *testing.T) string {
	t.Helper()
	if testing.Short() || runtime.GOOS != "linux" {
		t.Skip("runs real server processes, found through /proc")
	}
	bin, err := testpeer.EverythingServer()
	require.NoError(t, err)
	return bin
}

// fast is a restart policy for real-process tests.
func fast(intensity int) Settings {
	return Settings{Era: conduit.EraLegacy, Restart: RestartPolicy{InitialBackoff: 20 * ms, MaxBackoff: 20 * ms, Intensity: intensity, Period: time.Minute}}
}

// childPID is the pid of our child process running bin.
func childPID(t testing.TB, bin string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	require.NoError(t, err)
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if exe, _ := os.Readlink(d + "/exe"); len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && exe == bin {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no child process runs %s", bin)
	return 0
}

// waitFor waits for each server to reach its state, failing after 30 s.
func waitFor(t *testing.T, events <-chan Event, want map[string]State) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-events:
			if want[ev.Server] == ev.State {
				delete(want, ev.Server)
			}
		case <-timeout:
			t.Fatalf("never reached: %v", want)
		}
	}
}

func newHost(t *testing.T, cfg Config, opts Options) (*Host, <-chan Event) {
	t.Helper()
	h, err := New(cfg, opts)
	require.NoError(t, err)
	events, cancel := h.Subscribe()
	t.Cleanup(func() {
		cancel()
		_ = h.Close()
	})
	return h, events
}

// A server that exits at once forever is spawned intensity times, then
// parked with its exit status and last stderr line; a command that does
// not exist is parked with the exec error.
func TestCrashLoopIsParkedAfterTheLimit(t *testing.T) {
	realProcesses(t)
	spawns := filepath.Join(t.TempDir(), "spawns")
	h, events := newHost(t, Config{Servers: map[string]Server{
		"loop":    {Command: "sh", Args: []string{"-c", "echo x >> " + spawns + "; echo 'cannot open the database' >&2; exit 3"}, Conduit: fast(3)},
		"missing": {Command: "/nonexistent/mcp-server", Conduit: fast(2)},
	}}, Options{})
	waitFor(t, events, map[string]State{"loop": StateParked, "missing": StateParked})
	b, err := os.ReadFile(spawns)
	require.NoError(t, err)
	assert.Equal(t, "x\nx\nx\n", string(b), "3 spawns: 1 start + 2 restarts")

	st := h.Status()
	assert.Equal(t, 2, st[0].Restarts)
	// The tail runs across restarts: one line from each spawn.
	assert.Equal(t, []string{"cannot open the database", "cannot open the database", "cannot open the database"}, st[0].Stderr)
	assert.ErrorContains(t, st[0].Err, "the server exited (exit status 3)")
	assert.Equal(t, 1, st[1].Restarts)
	assert.ErrorContains(t, st[1].Err, "fork/exec /nonexistent/mcp-server: no such file or directory")
}

// kill -9 of a server mid-call: the call fails at once, with KindTransport
// and the exit status; the server is back within its backoff, with its
// tools, under a new process. Its status carries the process id each time.
func TestKilledServerFailsItsCallAndComesBack(t *testing.T) {
	bin := realProcesses(t)
	sampling := make(chan struct{}, 1)
	h, events := newHost(t, Config{Servers: map[string]Server{"every": {Command: bin, Conduit: fast(5)}}}, Options{Client: conduit.Options{
		Handlers: conduit.Handlers{Sampling: func(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			sampling <- struct{}{}
			<-ctx.Done() // holds the call in flight
			return nil, ctx.Err()
		}},
	}})
	waitFor(t, events, map[string]State{"every": StateReady})
	tools := len(h.Tools())
	require.Positive(t, tools)
	pid := childPID(t, bin)
	assert.Equal(t, pid, h.Status()[0].PID, "the status carries the process id")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	failed := make(chan error, 1)
	go func() {
		_, err := h.CallTool(ctx, "every", "test_sampling", map[string]any{"prompt": "hi"})
		failed <- err
	}()
	<-sampling
	killed := time.Now()
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	err := <-failed
	assert.Less(t, time.Since(killed), 2*time.Second, "the call fails at once")
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind)
	assert.Contains(t, ce.Message, `server "every" exited (signal: killed); `)

	res, err := h.CallTool(ctx, "every", "test_simple_text", nil) // waits for the restart
	require.NoError(t, err)
	assert.NotEmpty(t, res.Content)
	assert.Len(t, h.Tools(), tools)
	assert.NotEqual(t, pid, childPID(t, bin))
	assert.Equal(t, childPID(t, bin), h.Status()[0].PID, "the new process's id")
	assert.Equal(t, 1, h.Status()[0].Restarts)
}

// A healthy server serves 1 000 calls without one error while its
// neighbour crash-loops.
func TestHealthyNeighbourOfACrashLoop(t *testing.T) {
	bin := realProcesses(t)
	spawns := filepath.Join(t.TempDir(), "spawns")
	loop := fast(100000)
	loop.Restart.InitialBackoff, loop.Restart.MaxBackoff = ms, ms
	h, events := newHost(t, Config{Servers: map[string]Server{
		"every": {Command: bin, Conduit: fast(5)},
		"loop":  {Command: "sh", Args: []string{"-c", "echo x >> " + spawns + "; exit 1"}, Conduit: loop},
	}}, Options{})
	waitFor(t, events, map[string]State{"every": StateReady})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spawned := func() int {
		b, _ := os.ReadFile(spawns)
		return strings.Count(string(b), "x")
	}
	// At least 1 000 calls, and on until the neighbour has crash-looped
	// meanwhile: the test waits for what it asserts, not a race between a
	// fast server and a slow spawn.
	var wg sync.WaitGroup
	var made, failed atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for ctx.Err() == nil && (made.Load() < 1000 || spawned() <= 3) {
				made.Add(1)
				if _, err := h.CallTool(NoWait(ctx), "every", "test_simple_text", nil); err != nil {
					if failed.Add(1) <= 5 {
						t.Errorf("worker %d: %v", w, err)
					}
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, ctx.Err(), "the neighbour never crash-looped 4 times in a minute")
	assert.Zero(t, failed.Load(), "calls failed")
	assert.Greater(t, spawned(), 3, "the neighbour crash-looped meanwhile")
	assert.GreaterOrEqual(t, made.Load(), int64(1000))
	assert.Equal(t, made.Load(), h.Status()[0].Calls)
	assert.Equal(t, 0, h.Status()[0].Restarts)
}

// Apply keeps an unchanged server's process, and starts the added one.
func TestApplyKeepsAnUnchangedProcess(t *testing.T) {
	bin := realProcesses(t)
	every := Server{Command: bin, Conduit: fast(5)}
	h, events := newHost(t, Config{Servers: map[string]Server{"every": every}}, Options{})
	waitFor(t, events, map[string]State{"every": StateReady})
	pid := childPID(t, bin)

	h.Apply(Config{Servers: map[string]Server{"every": every, "other": {Command: "sh", Args: []string{"-c", "exit 1"}, Conduit: fast(1)}}})
	waitFor(t, events, map[string]State{"other": StateParked})
	assert.Equal(t, pid, childPID(t, bin), "same process")
	st := h.Status()[0]
	assert.Equal(t, StateReady, st.State)
	assert.Equal(t, 0, st.Restarts)
	_, err := h.CallTool(context.Background(), "every", "test_simple_text", nil)
	assert.NoError(t, err)
}

// A stdio server gets its env (added to ours) and cwd.
func TestServerEnvAndCwd(t *testing.T) {
	realProcesses(t)
	dir := t.TempDir()
	t.Setenv("CONDUIT_HOST_INHERITED", "inherited")
	script := `echo "$GREETING [$CONDUIT_HOST_INHERITED] $(pwd)" >&2; exit 1`
	all := fast(1)
	all.InheritEnv = true
	h, events := newHost(t, Config{Servers: map[string]Server{
		"all":  {Command: "sh", Args: []string{"-c", script}, Env: map[string]string{"GREETING": "hello"}, Cwd: dir, Conduit: all},
		"some": {Command: "sh", Args: []string{"-c", script}, Env: map[string]string{"GREETING": "hello"}, Cwd: dir, Conduit: fast(1)},
	}}, Options{})
	waitFor(t, events, map[string]State{"all": StateParked, "some": StateParked})
	resolved, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, "hello [inherited] "+resolved, h.Status()[0].Stderr[0], "inheritEnv: the whole environment")
	assert.Equal(t, "hello [] "+resolved, h.Status()[1].Stderr[0], "by default, only what a program needs to run")
}
