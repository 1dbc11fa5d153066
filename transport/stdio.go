package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

const (
	// defaultMaxMessageBytes is the default limit of one incoming message
	// over stdio and of an SSE event or a JSON body over HTTP. Buffers grow
	// with the message: the limit costs nothing until a message needs it.
	defaultMaxMessageBytes = 64 << 20
	defaultCloseTimeout    = 2 * time.Second

	// maxStderrLine caps one forwarded stderr line; the rest is dropped so a
	// server cannot make us hold an arbitrarily long log line.
	maxStderrLine = 8 << 10
	// exitStderrLines and exitStderrBytes bound the server's last stderr
	// lines kept for a ServerExitError, and each of them.
	exitStderrLines = 5
	exitStderrBytes = 512
	// exitGrace is how long Read, having hit EOF on stdout, and Write,
	// having hit a broken stdin, wait for the process to exit so that the
	// error can carry the exit status.
	exitGrace = 100 * time.Millisecond
	// stderrGrace is how long Close, once the server is reaped, lets the
	// stderr forwarder drain before cutting it off: a grandchild may still
	// hold the pipe open.
	stderrGrace = 100 * time.Millisecond
)

// Command is a Transport that runs an MCP server as a subprocess and talks to
// it over stdio: one JSON-RPC message per line, newline-delimited, on the
// server's stdin and stdout. Each Connect starts a new process; its Conn
// reports the process id with a Pid() int method.
type Command struct {
	// Path is the program to run; a name without a slash is looked up in PATH.
	Path string
	// Args are the program's arguments, not including its name.
	Args []string
	// Env is the server's environment, as for exec.Cmd: nil inherits ours.
	Env []string
	// Dir is the server's working directory; "" means ours.
	Dir string
	// MaxMessageBytes caps one incoming message; 0 means 64 MiB. A longer
	// line fails the connection with *MessageTooLongError. Memory is taken
	// as a message arrives: a line over 1 MiB gets a buffer of this
	// capacity, address space whose pages become resident as bytes arrive
	// (see grow), so a line is held about once and a refused one costs
	// about the limit.
	MaxMessageBytes int
	// Logger receives the server's stderr, one Info record per line with the
	// attribute stream=stderr (lines over 8 KiB are cut, and marked
	// truncated=true). Add identifying attributes with Logger.With. Nil
	// discards stderr. With a Logger, the last lines are also kept for the
	// ServerExitError of a server that exits.
	Logger *slog.Logger
	// CloseTimeout is how long Close waits for the server to exit after
	// closing its stdin, and again after SIGTERM, before SIGKILL; 0 means 2s.
	CloseTimeout time.Duration
}

// Connect starts the server. ctx is only checked before starting: the
// process lives until the returned Conn is closed (or exits by itself).
func (c *Command) Connect(ctx context.Context) (Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Path == "" {
		return nil, errors.New("transport: stdio command has no Path")
	}
	limit := c.MaxMessageBytes
	if limit <= 0 {
		limit = defaultMaxMessageBytes
	}
	closeTimeout := c.CloseTimeout
	if closeTimeout <= 0 {
		closeTimeout = defaultCloseTimeout
	}

	var opened []*os.File
	fail := func(err error) (Conn, error) {
		for _, f := range opened {
			f.Close()
		}
		return nil, fmt.Errorf("transport: start %s: %w", c.Path, err)
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			opened = append(opened, r, w)
		}
		return r, w, err
	}

	// We make the pipes ourselves rather than asking exec.Cmd for them: with
	// *os.File ends os/exec starts no copying goroutines, and our ends take
	// deadlines and can be closed under a blocked Read or Write.
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env, cmd.Dir = c.Env, c.Dir
	detach(cmd)
	stdinR, stdinW, err := pipe()
	if err != nil {
		return fail(err)
	}
	stdoutR, stdoutW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	var stderrR, stderrW *os.File
	if c.Logger != nil {
		if stderrR, stderrW, err = pipe(); err != nil {
			return fail(err)
		}
		cmd.Stderr = stderrW
	} // else os/exec connects stderr to the null device.
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	// The child holds its own copies; ours would keep the pipes open after
	// it exits, and we would never see EOF.
	stdinR.Close()
	stdoutW.Close()
	if stderrW != nil {
		stderrW.Close()
	}

	conn := &stdioConn{
		cmd:          cmd,
		stdin:        stdinW,
		stdout:       stdoutR,
		stderr:       stderrR,
		closeTimeout: closeTimeout,
		wmu:          make(chan struct{}, 1),
		msgs:         make(chan []byte),
		readDone:     make(chan struct{}),
		logDone:      make(chan struct{}),
		exited:       make(chan struct{}),
		done:         make(chan struct{}),
	}
	go conn.readLoop(limit)
	if stderrR != nil {
		go conn.logLoop(c.Logger)
	} else {
		close(conn.logDone)
	}
	return conn, nil
}

// stdioConn is a running server process.
//
// Concurrency: one goroutine reads stdout and hands lines to Read over an
// unbuffered channel, so Read can honour ctx and Close without touching the
// pipe. Writes are serialised by wmu, a one-slot channel used as a mutex so
// that waiting for it honours ctx and Close. Another goroutine forwards
// stderr when it is logged. The process is reaped by a goroutine started
// only when its end matters (stdout ended, a write failed, or Close), so
// an idle connection does not keep one: a server that exits closes its
// stdout, which starts it. Close stops all of them before it returns.
type stdioConn struct {
	cmd          *exec.Cmd
	stdin        *os.File
	stdout       *os.File
	stderr       *os.File // nil when stderr is discarded
	closeTimeout time.Duration

	wmu  chan struct{} // write lock
	werr error         // sticky write failure; guarded by wmu

	msgs     chan []byte   // lines from readLoop; closed when it stops
	readErr  error         // why readLoop stopped; written before msgs closes
	readDone chan struct{} // closed when readLoop returns
	logDone  chan struct{} // closed when logLoop returns, or at once

	exited    chan struct{} // closed once the process is reaped
	reapOnce  sync.Once
	done      chan struct{} // closed when Close begins
	closeOnce sync.Once

	tailMu sync.Mutex
	tail   []string // the last stderr lines, for ServerExitError
}

// Read returns the next non-blank line from the server's stdout.
func (c *stdioConn) Read(ctx context.Context) (Message, error) {
	if c.isClosed() {
		return Message{}, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	select {
	case line, ok := <-c.msgs:
		if !ok {
			if c.isClosed() {
				return Message{}, ErrClosed
			}
			return Message{}, c.readErr
		}
		return Message{Data: line}, nil
	case <-ctx.Done():
		return Message{}, ctx.Err()
	case <-c.done:
		return Message{}, ErrClosed
	}
}

// Write sends data and a newline. It is safe for concurrent use; each
// message goes out whole.
func (c *stdioConn) Write(ctx context.Context, data []byte) error {
	if bytes.IndexByte(data, '\n') >= 0 {
		return errors.New("transport: stdio message contains a newline")
	}
	if c.isClosed() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.wmu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return ErrClosed
	}
	defer func() { <-c.wmu }()
	if c.werr != nil {
		return c.werr
	}

	// One buffer, one write: the line reaches the pipe in a single call.
	buf := make([]byte, 0, len(data)+1)
	buf = append(append(buf, data...), '\n')
	n, err := c.write(ctx, buf)
	switch {
	case err == nil:
		return nil
	case c.isClosed():
		return ErrClosed
	case !errors.Is(err, os.ErrDeadlineExceeded):
		// A broken pipe is usually the server exiting: say how it ended.
		if exit := c.exitError(err); exit != nil {
			c.werr = exit
			return exit
		}
	}
	switch {
	case n > 0:
		// Part of a line is on the wire; anything sent after it would be
		// glued to it and garble both.
		c.werr = fmt.Errorf("transport: stdio write cut mid-message: %w", err)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("%w: %w", ctxErr, c.werr)
		}
		return c.werr
	case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf("transport: stdio write: %w", err)
	}
}

// write writes buf to stdin, giving up when ctx ends. That is best effort:
// where pipes take no deadline (Windows) only Close interrupts a write to a
// server that has stopped reading.
func (c *stdioConn) write(ctx context.Context, buf []byte) (int, error) {
	if ctx.Done() == nil {
		return c.stdin.Write(buf)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.stdin.SetWriteDeadline(time.Now())
		close(fired)
	})
	n, err := c.stdin.Write(buf)
	if !stop() {
		// The deadline was (or is being) set; clear it for the next Write.
		<-fired
		c.stdin.SetWriteDeadline(time.Time{})
	}
	return n, err
}

// Close shuts the server down the way the MCP spec asks: close its stdin,
// wait CloseTimeout, SIGTERM, wait CloseTimeout, SIGKILL. The signals go to
// the server's process group (Unix), which takes down a server started by
// a wrapper that would not pass them on. It returns once the process is
// reaped and every goroutine of the Conn has ended. Every call returns nil,
// after that shutdown is complete.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(c.shutdown)
	return nil
}

func (c *stdioConn) shutdown() {
	close(c.done)
	// Also unblocks a Write stuck on a full pipe.
	c.stdin.Close()
	c.reap()
	if !waitFor(c.exited, c.closeTimeout) {
		// Signal fails where there is no SIGTERM (Windows): kill at once.
		if signalServer(c.cmd.Process, syscall.SIGTERM) != nil || !waitFor(c.exited, c.closeTimeout) {
			signalServer(c.cmd.Process, syscall.SIGKILL)
			<-c.exited
		}
	}
	// readLoop drains stdout until now, so that a chatty server cannot block
	// on a full pipe instead of noticing the closed stdin.
	c.stdout.Close()
	<-c.readDone
	if c.stderr != nil {
		waitFor(c.logDone, stderrGrace) // keep the server's last words
		c.stderr.Close()
		<-c.logDone
	}
}

// Pid is the server's process id while it runs, and 0 once it has exited
// (been reaped) or the connection is closed. A supervisor reads it through
// an interface{ Pid() int } check on the Conn, to show or signal the
// process. Safe for concurrent use.
func (c *stdioConn) Pid() int {
	select {
	case <-c.exited:
		return 0
	default:
		return c.cmd.Process.Pid
	}
}

func (c *stdioConn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// readLoop feeds Read until stdout fails, then drains stdout until Close.
// It reads stdout in bursts (parkedReader): between messages it holds a
// small buffer, not the 64 KB one it reads a burst through.
func (c *stdioConn) readLoop(limit int) {
	defer close(c.readDone)
	p := newParkedReader(c.stdout, &stdoutReaders)
	c.readErr = c.deliver(p, limit)
	close(c.msgs)
	p.release()
	io.Copy(io.Discard, c.stdout) // ends at EOF or when Close closes stdout
}

func (c *stdioConn) deliver(p *parkedReader, limit int) error {
	var spare []byte // the big buffer lines over 1 MiB are read into (keep)
	for {
		r, err := p.reader()
		var line, next []byte
		if err == nil {
			line, next, err = readLine(r, limit, spare)
			spare = next
			p.rest()
		}
		switch {
		case errors.Is(err, io.EOF):
			return c.eofError()
		case err != nil:
			var tooLong *MessageTooLongError
			if errors.As(err, &tooLong) {
				return err
			}
			return fmt.Errorf("transport: stdio read: %w", err)
		case len(bytes.TrimSpace(line)) == 0:
			continue
		}
		select {
		case c.msgs <- line:
		case <-c.done:
			return ErrClosed
		}
	}
}

// eofError describes the end of stdout, with the exit status if the process
// exits soon after (as it usually does: exiting is what closes stdout).
func (c *stdioConn) eofError() error {
	if exit := c.exitError(io.EOF); exit != nil {
		return exit
	}
	return fmt.Errorf("transport: server closed stdout: %w", io.EOF)
}

// exitError returns a *ServerExitError caused by err if the process exits
// within exitGrace, else nil. It lets the stderr forwarder drain (bounded)
// first, so that the server's last words are in it.
func (c *stdioConn) exitError(err error) error {
	c.reap()
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		return nil
	case <-c.done:
		return nil
	}
	waitFor(c.logDone, stderrGrace)
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	return &ServerExitError{State: c.cmd.ProcessState, Stderr: slices.Clone(c.tail), Err: err}
}

// reap starts, once, the goroutine that waits for the process to exit and
// then closes exited.
func (c *stdioConn) reap() {
	c.reapOnce.Do(func() {
		go func() {
			c.cmd.Wait() // the outcome is kept in cmd.ProcessState
			close(c.exited)
		}()
	})
}

// keep adds a stderr line to the tail kept for ServerExitError.
func (c *stdioConn) keep(line []byte) {
	if len(line) > exitStderrBytes {
		line = line[:exitStderrBytes]
	}
	c.tailMu.Lock()
	defer c.tailMu.Unlock()
	if len(c.tail) == exitStderrLines {
		c.tail = append(c.tail[:0], c.tail[1:]...)
	}
	c.tail = append(c.tail, string(line))
}

// readLine returns the next line without its '\n' (a final line without one
// counts). It holds at most limit bytes of a line: past that it stops with
// *MessageTooLongError rather than buffering the rest. A line is copied
// once out of r's buffer, into one that grows as grow says, or into spare,
// the big buffer a line before it left (keep); the big buffer to pass to
// the next call is returned with the line.
func readLine(r *bufio.Reader, limit int, spare []byte) (line, next []byte, err error) {
	line = spare[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if len(line)+len(chunk) > limit {
			return nil, spare, &MessageTooLongError{What: "stdio message", Limit: limit, Setting: "transport.Command.MaxMessageBytes"}
		}
		if len(line) == 0 && err == nil {
			return append([]byte(nil), chunk...), spare, nil // the whole line in one read: its exact size
		}
		line = append(grow(line, len(chunk), limit), chunk...)
		switch {
		case err == nil:
			line, next = keepLine(line, limit)
			return line, next, nil
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && len(line) > 0:
			line, next = keepLine(line, limit)
			return line, next, nil // the next call reports EOF
		default:
			return nil, spare, err
		}
	}
}

// keepLine is keep for a stdio line read into a buffer under limit, with
// the rule of the SSE parser's detach: the buffer kept is cut to four
// times the line copied out of it when it is larger (the collector counts
// its whole capacity live), and any later line that fits in that fitted
// buffer (one over 1 MiB and under the limit's capacity) is copied out of
// it, so that it is not handed over and the next line grown to the limit
// again.
func keepLine(b []byte, limit int) (msg, buf []byte) {
	if cap(b) > bigMessage && cap(b) < limit {
		return append(make([]byte, 0, len(b)), b...), b[:0]
	}
	msg, buf = keep(b)
	if fit := 4*len(msg) + 4<<10; buf != nil && cap(buf) > 2*fit {
		buf = make([]byte, 0, fit)
	}
	return msg, buf
}

// logLoop forwards stderr to logger line by line until the pipe ends.
func (c *stdioConn) logLoop(logger *slog.Logger) {
	defer close(c.logDone)
	p := newParkedReader(c.stderr, &stderrReaders) // no 8 KB buffer between lines
	defer p.release()
	for {
		r, err := p.reader()
		var line []byte
		var truncated bool
		if err == nil {
			line, truncated, err = readCapped(r, maxStderrLine)
			p.rest()
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 {
			c.keep(line)
			attrs := []slog.Attr{slog.String("stream", "stderr")}
			if truncated {
				attrs = append(attrs, slog.Bool("truncated", true))
			}
			logger.LogAttrs(context.Background(), slog.LevelInfo, string(line), attrs...)
		}
		if err != nil {
			return
		}
	}
}

// readCapped reads one line, without its '\n', keeping at most limit bytes of
// it and discarding the rest.
func readCapped(r *bufio.Reader, limit int) (line []byte, truncated bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		chunk = bytes.TrimSuffix(chunk, []byte("\n"))
		if room := limit - len(line); len(chunk) > room {
			chunk, truncated = chunk[:room], true
		}
		line = append(line, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, truncated, err
		}
	}
}

// waitFor reports whether ch closed within d.
func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}
