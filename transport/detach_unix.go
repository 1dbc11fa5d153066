//go:build unix

package transport

import (
	"os"
	"os/exec"
	"syscall"
)

// detach starts the server in its own process group, so a Ctrl-C at the
// terminal reaches only the client: the client then cancels the call in
// flight (notifications/cancelled) and shuts the server down in order,
// instead of the server dying under it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalServer sends sig to the server's process group, as a Ctrl-C would
// have had detach not taken the group off the terminal: a wrapper that
// starts the real server (a shell, a package runner) may neither forward
// the signal nor take its child down when it dies. A server that left the
// group is signalled alone.
func signalServer(p *os.Process, sig syscall.Signal) error {
	if syscall.Kill(-p.Pid, sig) == nil {
		return nil
	}
	return p.Signal(sig)
}
