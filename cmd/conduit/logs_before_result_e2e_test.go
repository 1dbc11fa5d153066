package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/internal/testpeer"
)

// conduit call shows the log entries a server sent before the result, in
// both eras over HTTP: the result used to overtake them and the close on
// return discarded them (16 of 60 modern runs, 3 of 60 legacy).
func TestE2ELogsSentBeforeTheResultAreShown(t *testing.T) {
	url := testpeer.LogsThenResult(t)
	for _, era := range []string{"modern", "legacy"} {
		t.Run(era, func(t *testing.T) {
			for i := range 60 {
				r := runInProcess(t, "call", "--url", url, "--era", era, "t")
				require.Equal(t, exitOK, r.code, "run %d: %s", i, r)
				require.Equal(t, "done\n", r.stdout, "run %d", i)
				require.Equal(t, "[info] entry 1\n[info] entry 2\n[info] entry 3\n", r.stderr, "run %d", i)
			}
		})
	}
}
