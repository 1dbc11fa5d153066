//go:build unix

package transport

import (
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
