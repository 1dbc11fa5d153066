package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/conduitmcp/conduit/internal/testpeer"
)

// binDir holds the binaries the end-to-end tests build, once per test
// binary.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(hostileServerEnv) == "1" {
		// Re-executed as the hostile server (hostile_e2e_test.go).
		os.Exit(hostileServer(os.Stdin, os.Stdout))
	}
	if os.Getenv(clusterServerEnv) == "1" {
		os.Exit(clusterServer(os.Stdin, os.Stdout)) // cluster_e2e_test.go
	}
	if os.Getenv(clusterAskServerEnv) == "1" {
		os.Exit(clusterAskServer(os.Stdin, os.Stdout)) // cluster_gate_e2e_test.go
	}
	if os.Getenv(rawTextServerEnv) == "1" {
		// Re-executed as the raw-text server (rawtext_e2e_test.go).
		os.Exit(rawTextServer(os.Stdin, os.Stdout))
	}
	if mode := os.Getenv(scriptServerEnv); mode != "" {
		// Re-executed as a scripted server (scripted_server_test.go).
		os.Exit(scriptServer(mode, os.Stdin, os.Stdout))
	}
	dir, err := os.MkdirTemp("", "conduit-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		// In-process runs of run() start actors, transports and handler
		// goroutines: all must be gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// binaries builds the CLI and the go-sdk everything-server (once) and
// returns their paths.
func binaries(t *testing.T) (cli, server string) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: builds binaries")
	}
	buildOnce.Do(func() {
		for _, b := range [][]string{
			{"-o", filepath.Join(binDir, "conduit"), "."},
		} {
			out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	server, err := testpeer.EverythingServer()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(binDir, "conduit"), server
}

// result is one finished run of the CLI.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.code, r.stdout, r.stderr)
}

// runCLI runs the built CLI with args.
func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	cli, _ := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args = pinLegacy(args)
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

// runInProcess runs run() in this process, without a terminal.
func runInProcess(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, pinLegacy(args), streams{in: bytes.NewReader(nil), out: &stdout, err: &stderr})
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// writeFile writes content to name in a new temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pinLegacy adds --era legacy after the command name unless the test chose
// an era: most end-to-end tests exercise the everything-server's legacy
// flows (server requests), and it would otherwise negotiate 2026-07-28.
func pinLegacy(args []string) []string {
	if len(args) == 0 || !slices.Contains(args, "--") || slices.Contains(args, "--era") || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--era=") }) {
		return args
	}
	return append([]string{args[0], "--era", "legacy"}, args[1:]...)
}
