package actors_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// lockedBuffer is a bytes.Buffer a slog handler may write from any goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the JSON records written so far.
func (l *lockedBuffer) records(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range bytes.Lines(l.b.Bytes()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(line, &m), "%s", line)
		out = append(out, m)
	}
	return out
}

func TestStdioStderrInOptionsLoggerNamesTheServer(t *testing.T) {
	for _, tc := range []struct{ id, want string }{{"alpha", "alpha"}, {"", ""}} {
		var buf lockedBuffer
		logger := slog.New(slog.NewJSONHandler(&buf, nil))
		_, err := conduit.Connect(connectCtx(t), &transport.Command{Path: "sh", Args: []string{"-c", "echo boom >&2; exit 3"}},
			conduit.Options{ServerID: tc.id, Logger: logger})
		require.Error(t, err)
		var stderr []map[string]any
		for _, r := range buf.records(t) {
			if r["stream"] == "stderr" {
				stderr = append(stderr, r)
			}
		}
		require.Len(t, stderr, 1, "server %q", tc.id)
		assert.Equal(t, "boom", stderr[0]["msg"])
		if tc.want == "" {
			assert.NotContains(t, stderr[0], "server", "no ServerID, no attribute")
		} else {
			assert.Equal(t, tc.want, stderr[0]["server"])
		}
	}
}
