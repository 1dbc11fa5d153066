package load

import (
	"bufio"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/transport"
)

// processes notes the server processes a *transport.Command starts (the
// Pid of each connection), to read their peak RSS (Linux:
// /proc/PID/status VmHWM).
type processes struct {
	transport transport.Transport
	cmd       *transport.Command
	mu        sync.Mutex // guards pids
	pids      []int
}

func watchProcesses(t transport.Transport, logger *slog.Logger) *processes {
	p := &processes{transport: t}
	cmd, ok := t.(*transport.Command)
	if !ok || !procChildren() {
		return p
	}
	c := *cmd
	if c.Logger == nil && logger != nil && logger.Enabled(context.Background(), slog.LevelInfo) {
		// What conduit.Connect does for a bare *transport.Command (the
		// server's stderr to the client's logger), which it no longer sees
		// once wrapped.
		c.Logger = logger
	}
	p.cmd, p.transport = &c, p
	return p
}

// Connect starts a server and notes its PID.
func (p *processes) Connect(ctx context.Context) (transport.Conn, error) {
	conn, err := p.cmd.Connect(ctx)
	if err != nil {
		return nil, err
	}
	if c, ok := conn.(interface{ Pid() int }); ok && c.Pid() != 0 {
		p.mu.Lock()
		p.pids = append(p.pids, c.Pid())
		p.mu.Unlock()
	}
	return conn, nil
}

// peaks reads the peak RSS of every server still running and of its
// descendants: a server started through a launcher (go tool, npx, a shell)
// is the launcher's child.
func (p *processes) peaks() []ServerProcess {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []ServerProcess
	seen := map[int]bool{}
	var visit func(pid int)
	visit = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		if rss, ok := peakRSS(pid); ok {
			out = append(out, ServerProcess{PID: pid, Name: comm(pid), PeakRSSBytes: rss})
		}
		for child := range childrenOf(strconv.Itoa(pid)) {
			visit(child)
		}
	}
	for _, pid := range p.pids {
		visit(pid)
	}
	return out
}

// comm is the process's command name.
func comm(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	return strings.TrimSpace(string(b))
}

// procChildren reports whether /proc lists a process's children.
func procChildren() bool {
	m, _ := filepath.Glob("/proc/self/task/*/children")
	return len(m) > 0
}

// childrenOf are the PIDs of the children of the process pid ("self" for
// this one).
func childrenOf(pid string) map[int]bool {
	out := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "children"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(w); err == nil {
				out[pid] = true
			}
		}
	}
	return out
}

// peakRSS reads VmHWM from /proc/PID/status, in bytes.
func peakRSS(pid int) (int64, bool) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb * 1024, err == nil
	}
	return 0, false
}
