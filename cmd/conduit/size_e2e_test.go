package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/transport"
)

// End-to-end: messages of 50 MB pass by default, over stdio and HTTP, and
// 70 MB ones fail with the 64 MiB limit and the flag that raises it. The
// servers generate the message as they write it, and the test counts what
// the CLI prints instead of keeping it, so the test process never holds
// one.

// xs checks, without keeping it, that what it is written is n bytes "x"
// and a newline.
type xs struct {
	n   int
	bad bool
}

func (w *xs) Write(p []byte) (int, error) {
	for _, c := range p {
		if c != 'x' && !(c == '\n' && !w.bad) {
			w.bad = true
		}
	}
	w.n += len(p)
	return len(p), nil
}

// checkXs fails unless w saw exactly n bytes "x" and a newline.
func checkXs(t *testing.T, w *xs, n int) {
	t.Helper()
	assert.Equal(t, n+1, w.n, "bytes on stdout")
	assert.False(t, w.bad, "stdout holds something else than x")
}

// runCLIEnv runs the built CLI with args, extra environment and stdout.
func runCLIEnv(t *testing.T, env []string, stdout io.Writer, args ...string) (code int, stderr string) {
	t.Helper()
	cli, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Env = append(os.Environ(), env...)
	var errBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errBuf
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return code, errBuf.String()
}

// scripted returns the environment and server arguments of a scripted
// stdio server in mode.
func scripted(t *testing.T, mode string) (env []string, server []string) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{scriptServerEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}, []string{"--", self}
}

func TestE2EMessageSizeStdio(t *testing.T) {
	const (
		passes = 50_000_000
		fails  = 70_000_000
	)
	t.Run("50 MB passes by default", func(t *testing.T) {
		env, server := scripted(t, fmt.Sprint("big:", passes))
		var out xs
		code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "big"}, server...)...)
		require.Equal(t, exitOK, code, stderr)
		assert.Empty(t, stderr)
		checkXs(t, &out, passes)
	})
	t.Run("70 MB fails with the limit and the flag", func(t *testing.T) {
		env, server := scripted(t, fmt.Sprint("big:", fails))
		var out xs
		code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "big"}, server...)...)
		assert.Equal(t, exitFailed, code)
		assert.Equal(t, "conduit: tools/call: transport: connection to the server lost: transport: stdio message exceeds the limit of 64 MiB; raise it with --max-message-bytes\n", stderr)
		assert.Zero(t, out.n)

		code, stderr = runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "--json", "big"}, server...)...)
		assert.Equal(t, exitFailed, code)
		assert.JSONEq(t, `{"error": "tools/call: transport: connection to the server lost: transport: stdio message exceeds the limit of 64 MiB; raise it with --max-message-bytes", "exit": 1, "kind": "transport"}`, stderr)
	})
	t.Run("over the limit in the handshake: could not connect", func(t *testing.T) {
		env, server := scripted(t, "big:1")
		code, stderr := runCLIEnv(t, env, io.Discard, append([]string{"tools", "--era", "legacy", "--max-message-bytes", "64"}, server...)...)
		assert.Equal(t, exitConnect, code)
		assert.Equal(t, "conduit: could not connect: initialize: transport: connection to the server lost: transport: stdio message exceeds the limit of 64 bytes; raise it with --max-message-bytes\n", stderr)
	})
	t.Run("70 MB passes with --max-message-bytes 100MB", func(t *testing.T) {
		env, server := scripted(t, fmt.Sprint("big:", fails))
		var out xs
		code, stderr := runCLIEnv(t, env, &out, append([]string{"call", "--era", "legacy", "--max-message-bytes", "100MB", "big"}, server...)...)
		require.Equal(t, exitOK, code, stderr)
		checkXs(t, &out, fails)
	})
}

// bigHTTPServer is a legacy Streamable HTTP endpoint whose tools/call
// answers with a text block of the size in the query (n=…), as a JSON body,
// or as one SSE event with sse=1.
func bigHTTPServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m hostileMsg
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var n int
		fmt.Sscan(r.URL.Query().Get("n"), &n)
		sse := r.URL.Query().Get("sse") == "1"
		if sse {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: ")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, m.ID)
		switch m.Method {
		case "initialize":
			io.WriteString(w, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"big","version":"1"}}`)
		case "tools/call":
			if writeBigResult(w, n) != nil {
				return // the client gave up on the body
			}
		default:
			io.WriteString(w, `{}`)
		}
		io.WriteString(w, "}")
		if sse {
			io.WriteString(w, "\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestE2EMessageSizeHTTP(t *testing.T) {
	srv := bigHTTPServer(t)
	call := func(query string, flags ...string) (int, string, *xs) {
		var out xs
		args := append([]string{"call", "--era", "legacy", "--url", srv.URL + "/mcp?" + query}, flags...)
		code, stderr := runCLIEnv(t, nil, &out, append(args, "big")...)
		return code, stderr, &out
	}
	t.Run("50 MB body passes by default", func(t *testing.T) {
		code, stderr, out := call("n=50000000")
		require.Equal(t, exitOK, code, stderr)
		assert.Empty(t, stderr)
		checkXs(t, out, 50_000_000)
	})
	t.Run("70 MB body fails with the limit and the flag", func(t *testing.T) {
		code, stderr, out := call("n=70000000")
		assert.Equal(t, exitFailed, code)
		assert.Equal(t, "conduit: tools/call: transport: the request failed: transport: JSON response body exceeds the limit of 64 MiB; raise it with --max-message-bytes\n", stderr)
		assert.Zero(t, out.n)
	})
	t.Run("the flag sets the SSE event limit", func(t *testing.T) {
		code, stderr, _ := call("n=2000000&sse=1", "--max-message-bytes", "1MiB")
		assert.Equal(t, exitFailed, code)
		assert.Equal(t, "conduit: tools/call: transport: the request failed: transport: SSE event exceeds the limit of 1 MiB; raise it with --max-message-bytes\n", stderr)
		code, stderr, out := call("n=2000000&sse=1", "--max-message-bytes", "3MiB")
		require.Equal(t, exitOK, code, stderr)
		checkXs(t, out, 2_000_000)
	})
}

func TestMaxMessageBytesFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"1024", 1024}, {"64MiB", 64 << 20}, {"64mib", 64 << 20}, {"512 KiB", 512 << 10}, {"1GiB", 1 << 30},
		{"100MB", 100_000_000}, {"5kb", 5000}, {"2GB", 0}, {"0", 0}, {"-1", 0}, {"1.5MiB", 0}, {"MiB", 0}, {"64TiB", 0}, {"", 0},
	} {
		var s messageSize
		err := s.Set(tc.in)
		if tc.want == 0 {
			assert.EqualError(t, err, "want a positive number of bytes up to 1GiB, such as 67108864 or 64MiB", "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, int(s), "%q", tc.in)
	}
	r := runInProcess(t, "tools", "--max-message-bytes", "lots", "--", "server")
	assert.Equal(t, exitUsage, r.code)
	assert.True(t, strings.HasPrefix(r.stderr, `conduit: invalid argument "lots" for "--max-message-bytes" flag: want a positive number`), r.stderr)
}

func TestSizeHint(t *testing.T) {
	tooLong := &transport.MessageTooLongError{What: "SSE event", Limit: 1 << 20, Setting: "transport.HTTP.MaxEventBytes"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		// The library's field becomes the flag.
		{callFailed(context.Background(), fmt.Errorf("tools/call: %w", tooLong)),
			"tools/call: transport: SSE event exceeds the limit of 1 MiB; raise it with --max-message-bytes"},
		// Words of our own keep theirs, and get the flag.
		{&exitError{code: exitFailed, msg: "the call failed", err: tooLong},
			"the call failed; raise it with --max-message-bytes"},
		// Other errors are left alone.
		{callFailed(context.Background(), errors.New("boom")), "boom"},
	} {
		got := sizeHint(tc.err)
		assert.Equal(t, tc.want, got.Error())
		assert.Equal(t, exitFailed, exitCode(got))
		assert.Equal(t, errors.Is(tc.err, tooLong), errors.Is(got, tooLong), "the cause is kept")
	}
}
