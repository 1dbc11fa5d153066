package host

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit"
)

// stderrLines is how many of a server's last stderr lines are kept.
const stderrLines = 5

// stderrTail keeps a server's last stderr lines, across its restarts. A
// nil tail keeps nothing. It is safe for concurrent use.
type stderrTail struct {
	mu   sync.Mutex
	kept []string
}

func (t *stderrTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.kept) == stderrLines {
		t.kept = slices.Delete(t.kept, 0, 1)
	}
	t.kept = append(t.kept, line)
}

func (t *stderrTail) lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.kept)
}

// tailHandler is the slog.Handler of a stdio server's stderr
// (transport.Command.Logger): it keeps every line in tail and passes on
// those next takes.
type tailHandler struct {
	next slog.Handler
	tail *stderrTail
}

func (h *tailHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *tailHandler) Handle(ctx context.Context, r slog.Record) error {
	h.tail.add(r.Message)
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *tailHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &tailHandler{next: h.next.WithAttrs(attrs), tail: h.tail}
}

func (h *tailHandler) WithGroup(name string) slog.Handler {
	return &tailHandler{next: h.next.WithGroup(name), tail: h.tail}
}

// rootsOf turns root entries into roots: a URI as is, a directory as an
// absolute file:// URI.
func rootsOf(entries []string) ([]conduit.Root, error) {
	roots := make([]conduit.Root, 0, len(entries))
	for _, e := range entries {
		if u, err := url.Parse(e); err == nil && u.Scheme != "" && strings.Contains(e, "://") {
			roots = append(roots, conduit.Root{URI: e})
			continue
		}
		abs, err := filepath.Abs(e)
		if err != nil {
			return nil, fmt.Errorf("root %q: %w", e, err)
		}
		roots = append(roots, conduit.Root{URI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), Name: filepath.Base(abs)})
	}
	return roots, nil
}

// hasCapability reports whether the server's capabilities name key.
func hasCapability(caps json.RawMessage, key string) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(caps, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}
