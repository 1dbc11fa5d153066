package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as a stdio server instead of running
// tests; its value picks the behaviour (see runHelper).
const helperEnv = "GO_TRANSPORT_HELPER"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// runHelper is the server side of the stdio tests and returns its exit code.
func runHelper(mode string) int {
	switch mode {
	case "echo":
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fmt.Fprintf(os.Stdout, "%s\n", sc.Bytes()) // one write per line
		}
		return 0
	case "stderr":
		fmt.Fprint(os.Stderr, "hello from stderr\n\nsecond line\r\n")
		fmt.Fprintln(os.Stderr, strings.Repeat("x", 20000))
		fmt.Fprint(os.Stderr, "last words without newline")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "longline":
		w := bufio.NewWriter(os.Stdout)
		w.Write(bytes.Repeat([]byte("a"), 5<<20))
		w.WriteString("\n{\"after\":true}\n")
		w.Flush()
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "stderr-exit3":
		for i := 1; i <= 7; i++ {
			fmt.Fprintf(os.Stderr, "line %d\n", i)
		}
		fmt.Fprintln(os.Stderr, strings.Repeat("y", 600))
		return 3
	case "exit3":
		fmt.Print("\n   \n{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}\n")
		return 3
	case "deaf": // never reads stdin, dies on SIGTERM
		fmt.Println(`{"ready":true}`)
		for {
			time.Sleep(time.Hour)
		}
	case "ignore-stdin-eof":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println(`{"ready":true}`) // only now is SIGTERM ignored
		io.Copy(io.Discard, os.Stdin)
		for {
			time.Sleep(time.Hour)
		}
	}
	fmt.Fprintf(os.Stderr, "unknown %s %q\n", helperEnv, mode)
	return 2
}
