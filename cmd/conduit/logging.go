package main

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/conduitmcp/conduit/sanitize"
)

// newLogger returns the logger for Conduit's own diagnostics on w:
// warnings and errors by default, Info with -v, Debug with -vv. With --json
// each record is a JSON object; otherwise a line for a person to read.
func newLogger(w io.Writer, verbose int, jsonOut bool) *slog.Logger {
	level := slog.LevelWarn
	switch {
	case verbose >= 2:
		level = slog.LevelDebug
	case verbose == 1:
		level = slog.LevelInfo
	}
	if jsonOut {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(&humanHandler{w: w, level: level})
}

// humanHandler writes "conduit: warning: message key=value …", or
// "server: line" for a line of the server's stderr, the message through
// sanitize.Text. No time: a person reads it as it happens.
type humanHandler struct {
	w      io.Writer // one Write per record
	level  slog.Level
	attrs  []slog.Attr
	prefix string // the open groups, "a.b."
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	stderr := false
	r.Attrs(func(a slog.Attr) bool {
		if h.prefix == "" && a.Key == "stream" && a.Value.String() == "stderr" {
			stderr = true // the transport's mark on a server stderr line
			return true
		}
		a.Key = h.prefix + a.Key
		attrs = append(attrs, a)
		return true
	})
	var b strings.Builder
	if stderr {
		b.WriteString("server: ")
	} else {
		b.WriteString("conduit: ")
		b.WriteString(levelName(r.Level))
		b.WriteString(": ")
	}
	// A server's stderr line, or a message quoting what a server sent: one
	// line, without escape sequences. Attribute values are quoted below
	// when they hold anything unprintable.
	b.WriteString(sanitize.Text(r.Message, 0))
	for _, a := range attrs {
		writeAttr(&b, "", a)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(h.w, b.String())
	return err
}

func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if v.Kind() == slog.KindGroup {
		for _, g := range v.Group() {
			writeAttr(b, prefix+a.Key+".", g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix + a.Key)
	b.WriteByte('=')
	s := v.String()
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == '"' || r == '=' || !unicode.IsPrint(r) }) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "debug"
}

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = slices.Clone(h.attrs)
	for _, a := range as {
		a.Key = h.prefix + a.Key
		c.attrs = append(c.attrs, a)
	}
	return &c
}

func (h *humanHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.prefix = h.prefix + name + "."
	return &c
}

// stderrTail keeps the server's last stderr lines, to show them when the
// server fails while they were hidden (without -v).
type stderrTail struct {
	mu    sync.Mutex
	lines []string
}

const tailLines = 20

func (t *stderrTail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == tailLines {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:tailLines-1]
	}
	t.lines = append(t.lines, line)
}

func (t *stderrTail) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.lines...)
}

// tailHandler is the server-stderr logger's handler: it keeps every line in
// the tail and passes it on to next when next's level lets it through.
type tailHandler struct {
	next slog.Handler
	tail *stderrTail
}

func (h tailHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h tailHandler) Handle(ctx context.Context, r slog.Record) error {
	h.tail.add(r.Message)
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h tailHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return tailHandler{next: h.next.WithAttrs(as), tail: h.tail}
}

func (h tailHandler) WithGroup(name string) slog.Handler {
	return tailHandler{next: h.next.WithGroup(name), tail: h.tail}
}
