package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startHelper runs the test binary as a stdio server in the given mode (see
// runHelper) and closes it when the test ends.
func startHelper(t *testing.T, mode string, cmd Command) *stdioConn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Path = exe
	// Under -race a child that exits 0 would otherwise sleep 1s first.
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0")
	conn, err := cmd.Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*stdioConn)
}

func mustRead(t *testing.T, c Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return string(msg.Data)
}

func TestStdioEcho(t *testing.T) {
	ctx := context.Background()
	c := startHelper(t, "echo", Command{})

	msgs := []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"a":"b"}`, `{"big":"` + strings.Repeat("z", 100<<10) + `"}`}
	for _, m := range msgs {
		if err := c.Write(ctx, []byte(m)); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	for _, want := range msgs {
		if got := mustRead(t, c); got != want {
			t.Fatalf("Read = %.40q…, want %.40q…", got, want)
		}
	}

	err := c.Write(ctx, []byte("{\"a\":1}\n{\"b\":2}"))
	if err == nil || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("Write with a newline = %v, want a newline error", err)
	}
	// The rejected Write sent nothing; the connection is still in step.
	if err := c.Write(ctx, []byte(`{"after":1}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, c); got != `{"after":1}` {
		t.Fatalf("Read = %q", got)
	}

	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if c.cmd.ProcessState == nil || !c.cmd.ProcessState.Success() {
		t.Fatalf("echo server state after Close = %v, want a clean exit on stdin EOF", c.cmd.ProcessState)
	}
	if _, err := c.Read(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close = %v, want ErrClosed", err)
	}
	if err := c.Write(ctx, []byte("{}")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v, want ErrClosed", err)
	}
}

func TestStdioConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	c := startHelper(t, "echo", Command{})

	const writers, each = 8, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Long enough that a torn write would show.
				msg := fmt.Sprintf(`{"w":%d,"i":%d,"pad":"%s"}`, w, i, strings.Repeat("p", 5000))
				if err := c.Write(ctx, []byte(msg)); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		})
	}
	next := make([]int, writers)
	for range writers * each {
		var w, i int
		got := mustRead(t, c)
		if _, err := fmt.Sscanf(got, `{"w":%d,"i":%d,`, &w, &i); err != nil || len(got) != len(fmt.Sprintf(`{"w":%d,"i":%d,"pad":""}`, w, i))+5000 {
			t.Fatalf("garbled message %.60q… (len %d)", got, len(got))
		}
		if i != next[w] {
			t.Fatalf("writer %d: got message %d, want %d", w, i, next[w])
		}
		next[w]++
	}
	wg.Wait()
}

func TestStdioReadContext(t *testing.T) {
	c := startHelper(t, "echo", Command{})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read = %v, want DeadlineExceeded", err)
	}
	if err := c.Write(context.Background(), []byte(`{"still":"ok"}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, c); got != `{"still":"ok"}` {
		t.Fatalf("Read = %q", got)
	}
}

func TestStdioCloseUnblocksRead(t *testing.T) {
	c := startHelper(t, "echo", Command{})

	readErr := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		readErr <- err
	}()
	time.Sleep(20 * time.Millisecond) // let Read block

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := c.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			// Every Close returns only once the process is reaped.
			select {
			case <-c.exited:
			default:
				t.Error("Close returned before the process was reaped")
			}
		})
	}
	wg.Wait()
	if err := <-readErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Read = %v, want ErrClosed", err)
	}
}

// An idle connection keeps one goroutine, the stdout reader: nothing waits
// for the process until its end matters (stdout ends, a write fails, or
// Close). That Close leaves none is goleak's to check.
func TestStdioIdleConnectionKeepsOneGoroutine(t *testing.T) {
	startHelper(t, "echo", Command{})
	if n := stdioGoroutines(t); n != 1 {
		t.Errorf("goroutines of an idle connection = %d, want 1", n)
	}
}

// stdioGoroutines counts the goroutines a stdio connection started (by
// their creator: one not yet running shows no frame of its own). One that
// has returned and is only exiting (an earlier test's reaper, whose Close
// returned once it closed exited) does not count.
func stdioGoroutines(t *testing.T) int {
	t.Helper()
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 2); err != nil {
		t.Fatal(err)
	}
	n := 0
	for g := range strings.SplitSeq(buf.String(), "\n\n") {
		if _, frames, _ := strings.Cut(g, "\n"); strings.HasPrefix(frames, "runtime.goexit1(") {
			continue
		}
		if strings.Contains(g, "created by github.com/conduitmcp/conduit/transport.(*Command).Connect") ||
			strings.Contains(g, "created by github.com/conduitmcp/conduit/transport.(*stdioConn)") {
			n++
		}
	}
	return n
}

// captureHandler records what reaches a slog.Logger.
type captureHandler struct {
	mu   sync.Mutex
	logs []string
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	s := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		s += " " + a.String()
		return true
	})
	h.mu.Lock()
	h.logs = append(h.logs, s)
	h.mu.Unlock()
	return nil
}

func TestStdioStderrForwarded(t *testing.T) {
	h := &captureHandler{}
	c := startHelper(t, "stderr", Command{Logger: slog.New(h)})
	// Close returns after the forwarder has seen stderr's end, so every
	// line is in by then.
	c.Close()

	want := []string{
		"INFO hello from stderr stream=stderr",
		"INFO second line stream=stderr",
		"INFO " + strings.Repeat("x", maxStderrLine) + " stream=stderr truncated=true",
		"INFO last words without newline stream=stderr",
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.logs) != len(want) {
		t.Fatalf("got %d log records, want %d: %.200q", len(h.logs), len(want), h.logs)
	}
	for i := range want {
		if h.logs[i] != want[i] {
			t.Errorf("record %d = %.80q…, want %.80q…", i, h.logs[i], want[i])
		}
	}
}

func TestStdioMessageTooLong(t *testing.T) {
	t.Run("small limit", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		c := startHelper(t, "longline", Command{MaxMessageBytes: 1024})
		ctx := context.Background()
		_, err := c.Read(ctx)
		runtime.ReadMemStats(&after)

		var tooLong *MessageTooLongError
		if !errors.As(err, &tooLong) || tooLong.Limit != 1024 {
			t.Fatalf("Read = %v, want *MessageTooLongError{1024}", err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("reading a 5 MiB line allocated %d bytes; it should be discarded, not buffered", got)
		}
		// The stream cannot resynchronise: the same error from now on.
		if _, err2 := c.Read(ctx); err2 != err {
			t.Fatalf("second Read = %v, want the same error %v", err2, err)
		}
	})
	t.Run("default limit", func(t *testing.T) {
		// 64 MiB by default: the 5 MiB line passes whole.
		c := startHelper(t, "longline", Command{})
		if got := mustRead(t, c); got != strings.Repeat("a", 5<<20) {
			t.Fatalf("Read = %d bytes %.20q…, want the 5 MiB line", len(got), got)
		}
		if got := mustRead(t, c); got != `{"after":true}` {
			t.Fatalf("Read after the long line = %q", got)
		}
	})
	t.Run("error", func(t *testing.T) {
		c := startHelper(t, "longline", Command{MaxMessageBytes: 4 << 20})
		_, err := c.Read(context.Background())
		want := MessageTooLongError{What: "stdio message", Limit: 4 << 20, Setting: "transport.Command.MaxMessageBytes"}
		var tooLong *MessageTooLongError
		if !errors.As(err, &tooLong) || *tooLong != want {
			t.Fatalf("Read = %#v, want %#v", err, want)
		}
		if want := "transport: stdio message exceeds the limit of 4 MiB; raise transport.Command.MaxMessageBytes"; err.Error() != want {
			t.Fatalf("Error() = %q, want %q", err.Error(), want)
		}
	})
}

// The 64 MiB default reserves nothing: a connection that reads short lines
// holds its 64 KiB read buffer, not the limit.
func TestStdioDefaultLimitAllocatesOnDemand(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c := startHelper(t, "echo", Command{})
	ctx := context.Background()
	for range 10 {
		if err := c.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"ping"}`)); err != nil {
			t.Fatal(err)
		}
		mustRead(t, c)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("a connection with the 64 MiB default allocated %d bytes for 10 short lines", got)
	}
}

func TestMessageTooLongErrorText(t *testing.T) {
	for _, tc := range []struct {
		err  MessageTooLongError
		want string
	}{
		{MessageTooLongError{"stdio message", 64 << 20, "transport.Command.MaxMessageBytes"}, "transport: stdio message exceeds the limit of 64 MiB; raise transport.Command.MaxMessageBytes"},
		{MessageTooLongError{"SSE event", 2 << 30, "transport.HTTP.MaxEventBytes"}, "transport: SSE event exceeds the limit of 2 GiB; raise transport.HTTP.MaxEventBytes"},
		{MessageTooLongError{"JSON response body", 512 << 10, "transport.HTTP.MaxBodyBytes"}, "transport: JSON response body exceeds the limit of 512 KiB; raise transport.HTTP.MaxBodyBytes"},
		{MessageTooLongError{"stdio message", 50_000_000, "transport.Command.MaxMessageBytes"}, "transport: stdio message exceeds the limit of 50000000 bytes; raise transport.Command.MaxMessageBytes"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestStdioServerExits(t *testing.T) {
	c := startHelper(t, "exit3", Command{})

	// Blank lines before the message are skipped.
	if got := mustRead(t, c); got != `{"jsonrpc":"2.0","method":"bye"}` {
		t.Fatalf("Read = %q", got)
	}
	_, err := c.Read(context.Background())
	if !errors.Is(err, io.EOF) {
		t.Fatalf("Read after exit = %v, want an error wrapping io.EOF", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("Read after exit = %q, want the exit status in it", err)
	}
	// Still EOF on the next Read.
	if _, err := c.Read(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("second Read = %v, want io.EOF", err)
	}
}

// A server that exits at once: Read and Write both report its exit status,
// not the EOF or broken pipe that revealed it.
func TestStdioServerExitStatus(t *testing.T) {
	c := startHelper(t, "exit3", Command{})
	c.reap() // the process is reaped once its end matters: here, at once
	<-c.exited

	err := c.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	var exit *ServerExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Write after exit = %v, want a *ServerExitError with status 3", err)
	}
	if want := "transport: the server exited (exit status 3)"; err.Error() != want {
		t.Errorf("Write after exit = %q, want %q", err, want)
	}
	if runtime.GOOS != "windows" && !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Write after exit = %v, want the broken pipe as its cause", err)
	}

	mustRead(t, c) // the message it printed before exiting
	_, err = c.Read(context.Background())
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !errors.Is(err, io.EOF) {
		t.Fatalf("Read after exit = %v, want a *ServerExitError with status 3 wrapping io.EOF", err)
	}
}

// With a Logger, the exit error carries the server's last stderr lines.
func TestStdioServerExitKeepsLastStderrLines(t *testing.T) {
	c := startHelper(t, "stderr-exit3", Command{Logger: slog.New(slog.DiscardHandler)})
	_, err := c.Read(context.Background())
	var exit *ServerExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("Read after exit = %v, want a *ServerExitError with status 3", err)
	}
	want := []string{"line 4", "line 5", "line 6", "line 7", strings.Repeat("y", exitStderrBytes)}
	if !slices.Equal(exit.Stderr, want) {
		t.Errorf("Stderr = %q, want %q", exit.Stderr, want)
	}
	if want := "transport: the server exited (exit status 3); its last stderr: line 4 | line 5 | line 6 | line 7 | " + strings.Repeat("y", 512); err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
}

func TestStdioCloseEscalates(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	t.Run("SIGTERM", func(t *testing.T) {
		c := startHelper(t, "deaf", Command{CloseTimeout: 100 * time.Millisecond})
		mustRead(t, c)
		c.Close()
		if got := c.cmd.ProcessState.String(); got != "signal: terminated" {
			t.Fatalf("server ended with %q, want SIGTERM", got)
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		c := startHelper(t, "ignore-stdin-eof", Command{CloseTimeout: 100 * time.Millisecond})
		mustRead(t, c) // SIGTERM is ignored from here on
		start := time.Now()
		c.Close()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Close took %v", d)
		}
		if got := c.cmd.ProcessState.String(); got != "signal: killed" {
			t.Fatalf("server ended with %q, want SIGKILL", got)
		}
	})
}

// A server behind a wrapper that neither forwards SIGTERM nor exits on it
// (here a shell whose background child inherits the ignored SIGTERM) is
// still shut down: Close signals the server's whole process group.
func TestStdioCloseKillsTheProcessGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	conn, err := (&Command{
		Path:         "sh",
		Args:         []string{"-c", `trap "" TERM; sleep 60 & echo $!; wait`},
		CloseTimeout: 100 * time.Millisecond,
	}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pid := mustRead(t, conn)
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	// Dead once reaped by init, or a zombie waiting for it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			if n, err := strconv.Atoi(pid); err == nil {
				if p, err := os.FindProcess(n); err == nil {
					p.Kill()
				}
			}
			t.Fatalf("the server's child %s outlived Close: %s", pid, stat)
		}
	}
}

func TestStdioWriteContext(t *testing.T) {
	c := startHelper(t, "deaf", Command{CloseTimeout: 100 * time.Millisecond})
	mustRead(t, c)

	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Write(canceled, []byte("{}")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a done ctx = %v, want Canceled", err)
	}

	// The server never reads, so a big message fills the pipe and blocks.
	big := []byte(`"` + strings.Repeat("b", 1<<20) + `"`)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := c.Write(ctx, big)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("blocked Write = %v, want DeadlineExceeded", err)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Skip("ctx ended before the write began (slow machine)")
	}
	// Half a message went out: the connection refuses to garble more.
	if err := c.Write(context.Background(), []byte("{}")); err == nil || !strings.Contains(err.Error(), "mid-message") {
		t.Fatalf("Write after a cut message = %v, want the sticky error", err)
	}
}

func TestStdioCloseUnblocksWrite(t *testing.T) {
	c := startHelper(t, "deaf", Command{CloseTimeout: 100 * time.Millisecond})
	mustRead(t, c)

	writeErr := make(chan error, 1)
	go func() {
		writeErr <- c.Write(context.Background(), []byte(`"`+strings.Repeat("b", 1<<20)+`"`))
	}()
	time.Sleep(20 * time.Millisecond) // let Write block on the full pipe
	c.Close()
	if err := <-writeErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked Write = %v, want ErrClosed", err)
	}
}

func TestStdioStartError(t *testing.T) {
	ctx := context.Background()
	_, err := (&Command{Path: "/nonexistent/conduit-test-server"}).Connect(ctx)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Connect = %v, want an error wrapping fs.ErrNotExist", err)
	}
	if _, err := (&Command{}).Connect(ctx); err == nil {
		t.Fatal("Connect without a Path succeeded")
	}
}

func TestReadLine(t *testing.T) {
	const limit = 20
	in := "short\n" +
		strings.Repeat("a", limit) + "\n" + // exactly at the limit
		"\n" +
		"tail without newline"
	// A buffer smaller than a line exercises the multi-chunk path.
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	for _, want := range []string{"short", strings.Repeat("a", limit), "", "tail without newline"} {
		got, _, err := readLine(r, limit, nil)
		if err != nil || string(got) != want {
			t.Fatalf("readLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, _, err := readLine(r, limit, nil); err != io.EOF {
		t.Fatalf("readLine at end = %v, want io.EOF", err)
	}

	r = bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", limit+1)+"\n"), 16)
	var tooLong *MessageTooLongError
	if _, _, err := readLine(r, limit, nil); !errors.As(err, &tooLong) || tooLong.Limit != limit {
		t.Fatalf("readLine over the limit = %v, want *MessageTooLongError{%d}", err, limit)
	}
}

// Pid is the server's own process id ($$ in its shell) while it runs, and
// 0 once it has exited or the connection is closed. The host reads it
// through the Conn, by an interface check.
func TestStdioPid(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	conn, err := (&Command{Path: "sh", Args: []string{"-c", "echo $$; exec cat >/dev/null"}}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p, ok := conn.(interface{ Pid() int })
	if !ok {
		t.Fatalf("%T has no Pid method", conn)
	}
	if got, want := fmt.Sprint(p.Pid()), mustRead(t, conn); got != want {
		t.Errorf("Pid() = %s, want %s (the shell's $$)", got, want)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if got := p.Pid(); got != 0 {
		t.Errorf("Pid() after Close = %d, want 0", got)
	}

	exited := startHelper(t, "exit3", Command{})
	exited.reap() // the process is reaped once its end matters: here, at once
	<-exited.exited
	if got := Conn(exited).(interface{ Pid() int }).Pid(); got != 0 {
		t.Errorf("Pid() after the server exited = %d, want 0", got)
	}
}
