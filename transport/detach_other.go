//go:build !unix

package transport

import (
	"os"
	"os/exec"
	"syscall"
)

func detach(*exec.Cmd) {}

// signalServer sends sig to the server process.
func signalServer(p *os.Process, sig syscall.Signal) error {
	return p.Signal(sig)
}
