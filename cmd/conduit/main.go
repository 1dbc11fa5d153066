// Command conduit is a command-line MCP client built on Conduit: it
// connects to a server (a subprocess speaking stdio, or a Streamable HTTP
// endpoint), calls a tool (or lists tools, resources and prompts, reads a
// resource, gets a prompt), answers the server's requests for input (the
// person at the terminal, or a scripted answers file), and prints the
// result. conduit demo runs the same client against an embedded server,
// package demoserver.
//
// Its flag names, the answers-file format and its exit statuses are a
// contract that outside scripts rely on: they are extended, never renamed.
// 0 success, 1 the call failed, 2 usage error, 3 could not connect.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses (the contract).
const (
	exitOK      = 0 // success
	exitFailed  = 1 // the call failed: JSON-RPC error, timeout, input handler error, isError result, interrupted
	exitUsage   = 2 // bad flags or arguments, unreadable or invalid answers file, a server --config does not run (conduit.KindUsage)
	exitConnect = 3 // the server could not be started, or the handshake failed
)

// streams are the process's standard streams, replaceable in tests.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, restore the default behaviour so a second
	// Ctrl-C kills the process even if shutting the server down hangs.
	go func() { <-ctx.Done(); stop() }()
	code := run(ctx, os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}
