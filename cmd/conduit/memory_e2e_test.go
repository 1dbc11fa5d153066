//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Memory ceilings, end to end: the built CLI (a normal build, never -race,
// so that its peak RSS is the one a user sees) against a hostile server,
// with the peak resident set of the conduit process read from the kernel
// once it exits. Each scenario asserts the ceiling of issue 18 and the
// exact error. The figures are in docs/benchmarks.md ("Memory under
// hostile servers"); print them with -v.
//
// A stdio scenario's server is this test binary run again with
// CONDUIT_MEMORY_SERVER=name (init hands over to memoryServers[name]
// before TestMain); its arguments follow the server command. An HTTP
// scenario's server runs in this process, so it is not measured.

// memoryServerEnv names the scripted server of memoryServers the test
// binary becomes.
const memoryServerEnv = "CONDUIT_MEMORY_SERVER"

// memoryServers are the scripted stdio servers of the scenarios. Each is a
// legacy (2025-11-25) server: memoryServer answers the handshake and ping,
// and hands every tools/call to the scenario's function with the server's
// arguments. Add a scenario here and a test that runs it with measure.
var memoryServers = map[string]memoryCall{
	// bigResult N: tools/call answers one text block of N bytes "x",
	// written as it is generated (the server never holds it).
	"bigResult": func(args []string, id json.RawMessage, _ *bufio.Scanner, out *bufio.Writer) bool {
		n, _ := strconv.Atoi(args[0])
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":`, id)
		writeBigResult(out, n)
		out.WriteString("}\n")
		return true
	},
	// bigLines N: tools/call answers one text block of N bytes in lines of
	// 79 "x" and a newline (escaped "\n" in the JSON, as real tool output
	// has), written as it is generated.
	"bigLines": func(args []string, id json.RawMessage, _ *bufio.Scanner, out *bufio.Writer) bool {
		n, _ := strconv.Atoi(args[0])
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
		line := strings.Repeat("x", 79) + `\n`
		for ; n >= 80; n -= 80 {
			out.WriteString(line)
		}
		out.WriteString(strings.Repeat("x", n))
		out.WriteString(`"}]}}` + "\n")
		return true
	},
	// logFlood N SIZE: tools/call sends N log entries (notifications/message)
	// of SIZE bytes of "x" each, written as fast as the pipe takes them,
	// then answers "done".
	"logFlood": func(args []string, id json.RawMessage, _ *bufio.Scanner, out *bufio.Writer) bool {
		n, _ := strconv.Atoi(args[0])
		size, _ := strconv.Atoi(args[1])
		chunk := strings.Repeat("x", 64<<10)
		for range n {
			out.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"flood","data":"`)
			for left := size; left > 0; left -= len(chunk) {
				out.WriteString(chunk[:min(left, len(chunk))])
			}
			out.WriteString(`"}}` + "\n")
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`+"\n", id)
		return true
	},
	// deafPinger N: on tools/call the server stops reading its stdin and
	// sends N pings; then it reads (and drops) what the client wrote, and
	// answers the call "done" once its stdin ends or all N answers came.
	"deafPinger": func(args []string, id json.RawMessage, in *bufio.Scanner, out *bufio.Writer) bool {
		n, _ := strconv.Atoi(args[0])
		for i := range n {
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i+1)
		}
		if out.Flush() != nil {
			return false
		}
		for answered := 0; answered < n && in.Scan(); answered++ {
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`+"\n", id)
		return true
	},
}

// memoryCall answers the tools/call id on out, reading more of the
// client's messages from in if it needs; it reports false to stop the
// server.
type memoryCall func(args []string, id json.RawMessage, in *bufio.Scanner, out *bufio.Writer) bool

func init() {
	if name := os.Getenv(memoryServerEnv); name != "" {
		os.Exit(memoryServer(memoryServers[name], os.Args[1:], os.Stdin, os.Stdout))
	}
}

// memoryServer runs a scripted legacy server on r/w until r ends.
func memoryServer(call memoryCall, args []string, r io.Reader, w io.Writer) int {
	if call == nil {
		fmt.Fprintf(os.Stderr, "memory server: unknown scenario %q\n", os.Getenv(memoryServerEnv))
		return 2
	}
	in := bufio.NewScanner(r)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriterSize(w, 64<<10)
	for in.Scan() {
		var m hostileMsg
		if json.Unmarshal(in.Bytes(), &m) != nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "initialize":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"memory","version":"1"}}}`+"\n", m.ID)
		case "tools/call":
			if !call(args, m.ID, in, out) {
				return 0
			}
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", m.ID)
		}
		if out.Flush() != nil {
			return 0 // the client went away
		}
	}
	return 0
}

// memoryRun is one measured run of the CLI.
type memoryRun struct {
	code    int
	stderr  string
	peakRSS int64 // bytes: the conduit process's own
}

// stdioServer returns the server part of the CLI's arguments and the
// environment that make the server memoryServers[name] with args.
func stdioServer(t *testing.T, name string, args ...string) (env, server []string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{memoryServerEnv + "=" + name}, append([]string{"--", self}, args...)
}

// measure runs the built CLI with args, extra environment env, stdout to
// stdout, and returns its exit status, stderr and peak RSS: the VmHWM of
// /proc/PID/status, the high-water mark of the conduit process's own
// memory, read every 2 ms until it exits (it only grows, and the last
// reading is within 2 ms of the exit, after the work and during the
// teardown). Not ru_maxrss from wait4: Linux gives a process started with
// vfork, as os/exec does, the peak of its parent's memory at exec time
// (and, as the peak of its reaped children, the scripted server's: the
// test binary, large under -race).
func measure(t *testing.T, env []string, stdout io.Writer, args ...string) memoryRun {
	t.Helper()
	cli, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), env...)
	var errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errBuf
	require.NoError(t, cmd.Start())
	var peak atomic.Int64
	done := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if hwm := readHWM(status); hwm > peak.Load() {
				peak.Store(hwm)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	<-polled
	var ee *exec.ExitError
	r := memoryRun{stderr: errBuf.String(), peakRSS: peak.Load()}
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	t.Logf("conduit %v: exit %d, peak RSS %.1f MB", args[:min(len(args), 4)], r.code, float64(r.peakRSS)/1e6)
	return r
}

// readHWM returns the VmHWM of a /proc/PID/status file in bytes, or 0.
func readHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	_, rest, ok := bytes.Cut(b, []byte("\nVmHWM:"))
	if !ok {
		return 0 // exited: its memory is gone
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(line), []byte("kB")))), 10, 64)
	if err != nil {
		return 0
	}
	return kb << 10
}

// assertCeiling fails if r's peak RSS is over limit bytes.
func assertCeiling(t *testing.T, r memoryRun, limit int64) {
	t.Helper()
	require.NotZero(t, r.peakRSS, "no peak RSS")
	assert.LessOrEqual(t, r.peakRSS, limit, "peak RSS %.1f MB over the ceiling of %.1f MB", float64(r.peakRSS)/1e6, float64(limit)/1e6)
}

// Item 3: one 50 MB message over stdio peaks at no more than 2.5 times
// itself, the CLI's own RSS (about 25 MB, most of it the binary's code)
// included; over the same call with a 10-byte message it costs about
// itself: the line is read once, and its text shares the line's bytes.
func TestMemoryBigMessageStdio(t *testing.T) {
	const n = 50_000_000
	call := func(n int) (memoryRun, *xs) {
		env, server := stdioServer(t, "bigResult", strconv.Itoa(n))
		var out xs
		r := measure(t, env, &out, append([]string{"call", "--era", "legacy", "big"}, server...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		checkXs(t, &out, n)
		return r, &out
	}
	base, _ := call(10)
	r, _ := call(n)
	t.Logf("the message cost %.1f MB, %.2f times itself", float64(r.peakRSS-base.peakRSS)/1e6, float64(r.peakRSS-base.peakRSS)/n)
	assertCeiling(t, r, n*5/2)
	assertCeiling(t, r, base.peakRSS+n*3/2)
}

// Item 3, as real output comes: the text has escapes (a newline every 80
// bytes), which the decoder unescapes into the string it makes: the
// message and its text, once each, over the CLI's own RSS.
func TestMemoryBigEscapedMessageStdio(t *testing.T) {
	const n = 50_000_000
	call := func(n int) memoryRun {
		env, server := stdioServer(t, "bigLines", strconv.Itoa(n))
		var out byteCount
		r := measure(t, env, &out, append([]string{"call", "--era", "legacy", "big"}, server...)...)
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Empty(t, r.stderr)
		assert.Equal(t, n+1, int(out), "bytes on stdout")
		return r
	}
	base := call(80)
	r := call(n)
	t.Logf("the message cost %.1f MB, %.2f times itself", float64(r.peakRSS-base.peakRSS)/1e6, float64(r.peakRSS-base.peakRSS)/n)
	assertCeiling(t, r, base.peakRSS+n*5/2)
}

// Item 3 over HTTP: a 50 MB result as one SSE event, and as a JSON body.
func TestMemoryBigMessageHTTP(t *testing.T) {
	const n = 50_000_000
	srv := bigHTTPServer(t)
	call := func(query string, n int) memoryRun {
		var out xs
		r := measure(t, nil, &out, "call", "--era", "legacy", "--url", fmt.Sprintf("%s/mcp?%s&n=%d", srv.URL, query, n), "big")
		require.Equal(t, exitOK, r.code, r.stderr)
		checkXs(t, &out, n)
		return r
	}
	for _, query := range []string{"sse=1", "sse=0"} {
		t.Run(query, func(t *testing.T) {
			base := call(query, 10)
			r := call(query, n)
			t.Logf("the message cost %.1f MB, %.2f times itself", float64(r.peakRSS-base.peakRSS)/1e6, float64(r.peakRSS-base.peakRSS)/n)
			assertCeiling(t, r, n*5/2)
		})
	}
}

// byteCount counts what is written to it.
type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

// refusedCeiling is what refusing a message over the 64 MiB default may
// hold at its peak: the limit and a little (16 MiB) over base, the same
// call with a small message. Measured over the process's own RSS at rest,
// which grows with the code linked in, so the check is of the message's
// cost: held twice, it is 64 MiB over.
func refusedCeiling(base memoryRun) int64 { return base.peakRSS + 64<<20 + 16<<20 }

// Item 4: a 70 MB message, over the 64 MiB default, is refused holding no
// more than the limit and a little.
func TestMemoryRefusedMessageStdio(t *testing.T) {
	run := func(n string, out io.Writer) memoryRun {
		env, server := stdioServer(t, "bigResult", n)
		return measure(t, env, out, append([]string{"call", "--era", "legacy", "big"}, server...)...)
	}
	base := run("10", io.Discard)
	require.Equal(t, exitOK, base.code, base.stderr)
	var out xs
	r := run("70000000", &out)
	assert.Equal(t, exitFailed, r.code)
	assert.Equal(t, "conduit: tools/call: transport: connection to the server lost: transport: stdio message exceeds the limit of 64 MiB; raise it with --max-message-bytes\n", r.stderr)
	assert.Zero(t, out.n)
	assertCeiling(t, r, refusedCeiling(base))
}

// Item 4: a 100 MB SSE event, and a 100 MB JSON body, are refused
// likewise.
func TestMemoryRefusedHTTP(t *testing.T) {
	srv := bigHTTPServer(t)
	for _, tc := range []struct{ query, what string }{
		{"sse=1&n=100000000", "SSE event"},
		{"n=100000000", "JSON response body"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			small := strings.Replace(tc.query, "n=100000000", "n=10", 1)
			base := measure(t, nil, io.Discard, "call", "--era", "legacy", "--url", srv.URL+"/mcp?"+small, "big")
			require.Equal(t, exitOK, base.code, base.stderr)
			var out xs
			r := measure(t, nil, &out, "call", "--era", "legacy", "--url", srv.URL+"/mcp?"+tc.query, "big")
			assert.Equal(t, exitFailed, r.code)
			assert.Equal(t, "conduit: tools/call: transport: the request failed: transport: "+tc.what+" exceeds the limit of 64 MiB; raise it with --max-message-bytes\n", r.stderr)
			assert.Zero(t, out.n)
			assertCeiling(t, r, refusedCeiling(base))
		})
	}
}

// Item 2: a server that stops reading while it sends 1 000 000 pings
// fills the write queue to its bound (16 MiB), and the call fails with it.
func TestMemoryDeafServerStdio(t *testing.T) {
	env, server := stdioServer(t, "deafPinger", "1000000")
	var out bytes.Buffer
	r := measure(t, env, &out, append([]string{"call", "--era", "legacy", "deaf"}, server...)...)
	assert.Equal(t, exitFailed, r.code)
	// How many answers the pipe took before the queue filled varies; each
	// counts 64 bytes more than its 42, so 16 MiB holds about 6 MiB of them.
	assert.Regexp(t, `^conduit: tools/call: transport: the server stopped reading its input: 6 MiB unsent in 1[0-9]{5} messages, over the limit of 16 MiB\n$`, r.stderr)
	assert.Empty(t, out.String())
	assertCeiling(t, r, 100e6)

	// The flag sets the bound.
	r = measure(t, env, &out, append([]string{"call", "--era", "legacy", "--max-write-queue-bytes", "1MiB", "deaf"}, server...)...)
	assert.Equal(t, exitFailed, r.code)
	assert.Regexp(t, `^conduit: tools/call: transport: the server stopped reading its input: [0-9]+ KiB unsent in [0-9]+ messages, over the limit of 1 MiB\n$`, r.stderr)
}

// Item 1: a log flood of 900 MB (300 entries of 3 MB, written as fast as
// the pipe takes them) holds no more than 300 MB: the reader stops reading
// past its budget, and entries past the rate limit or the queue's bounds
// are dropped and counted, never all buffered.
func TestMemoryLogFloodStdio(t *testing.T) {
	env, server := stdioServer(t, "logFlood", "300", "3000000")
	var out bytes.Buffer
	r := measure(t, env, &out, append([]string{"call", "--era", "legacy", "flood"}, server...)...)
	require.Equal(t, exitOK, r.code, r.stderr[max(0, len(r.stderr)-500):])
	assert.Equal(t, "done\n", out.String())
	// Every entry is shown (cut, sanitised) or counted as dropped: nothing
	// is lost in silence.
	shown, dropped := 0, 0
	for line := range strings.Lines(r.stderr) {
		var n int
		if strings.HasPrefix(line, "[info] flood: xxx") {
			shown++
		} else if _, err := fmt.Sscanf(line, "conduit: dropped %d ", &n); err == nil {
			dropped += n
		}
	}
	assert.Equal(t, 300, shown+dropped, "shown %d, dropped %d", shown, dropped)
	assertCeiling(t, r, 300e6)
}
