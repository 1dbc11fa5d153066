package cluster

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaks after the tests. Not after benchmarks: they
// run members in this process, and a protoactor actor system leaves
// goroutines behind after its cluster shut down (its event stream, the
// remote's endpoint managers).
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
