package main

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/conduitmcp/conduit/sanitize"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// The client advertises a capability exactly when its handler implements
// the matching interface, so the CLI's handler is one of eight struct types:
// each embeds the notifier (logs and notifications, always) and a pointer
// to the concrete part of each kind the answers file has. Embedding an
// interface-typed field would not do: it would always satisfy the interface.

type handlerS struct {
	*notifier
	messages.SamplingHandler
}

type handlerE struct {
	*notifier
	*elicitor
}

type handlerR struct {
	*notifier
	*rootsLister
}

type handlerSE struct {
	*notifier
	messages.SamplingHandler
	*elicitor
}

type handlerSR struct {
	*notifier
	messages.SamplingHandler
	*rootsLister
}

type handlerER struct {
	*notifier
	*elicitor
	*rootsLister
}

type handlerSER struct {
	*notifier
	messages.SamplingHandler
	*elicitor
	*rootsLister
}

// compose returns a handler implementing the notification and log
// interfaces and exactly the input kinds whose part is not nil.
func compose(n *notifier, s messages.SamplingHandler, e *elicitor, r *rootsLister) any {
	switch {
	case s != nil && e != nil && r != nil:
		return &handlerSER{n, s, e, r}
	case s != nil && e != nil:
		return &handlerSE{n, s, e}
	case s != nil && r != nil:
		return &handlerSR{n, s, r}
	case e != nil && r != nil:
		return &handlerER{n, e, r}
	case s != nil:
		return &handlerS{n, s}
	case e != nil:
		return &handlerE{n, e}
	case r != nil:
		return &handlerR{n, r}
	}
	return n
}

// newHandler builds the handler for the scripted answers a (nil without
// --answers) and the roots of --roots. Roots are offered when either names
// any (or the file has a "roots" key, even empty).
func newHandler(n *notifier, a *answers, flagRoots []conduit.Root, cmd samplingCommand) any {
	var s messages.SamplingHandler
	var e *elicitor
	var r *rootsLister
	if a == nil {
		a = &answers{}
	}
	if a.Sampling != nil {
		s = &sampler{answer: a.Sampling}
	}
	if cmd.command != "" { // --sampling-command answers sampling instead
		s = &commandSampler{cmd: cmd}
	}
	if a.Elicitation != nil {
		e = &elicitor{answer: a.Elicitation}
	}
	if flagRoots != nil || a.Roots != nil {
		r = &rootsLister{roots: mergeRoots(flagRoots, a.Roots)}
	}
	return compose(n, s, e, r)
}

// sampler answers sampling/createMessage from the answers file.
type sampler struct{ answer *samplingAnswer }

// HandleSampling waits the scripted delay, then answers or refuses.
func (s *sampler) HandleSampling(ctx context.Context, _ *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	if err := sleep(ctx, s.answer.Delay); err != nil {
		return nil, err
	}
	if s.answer.Error != nil {
		rpc := *s.answer.Error
		return nil, &rpc
	}
	res := *s.answer.Result
	res.Content.Blocks = slices.Clone(res.Content.Blocks)
	return &res, nil
}

// elicitor answers elicitation/create from the answers file.
type elicitor struct{ answer *elicitationAnswer }

// ElicitationModes declares the file's modes.
func (e *elicitor) ElicitationModes() []string { return slices.Clone(e.answer.Modes) }

// HandleElicitation waits the scripted delay, then answers or refuses. The
// content goes with a form-mode accept only: a URL-mode accept has none.
func (e *elicitor) HandleElicitation(ctx context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	if err := sleep(ctx, e.answer.Delay); err != nil {
		return nil, err
	}
	if e.answer.Error != nil {
		rpc := *e.answer.Error
		return nil, &rpc
	}
	res := &conduit.ElicitResult{Action: e.answer.Action}
	if res.Action == "accept" && req.Mode != "url" && e.answer.Content != nil {
		res.Content = maps.Clone(e.answer.Content)
	}
	return res, nil
}

// rootsLister answers roots/list.
type rootsLister struct{ roots []conduit.Root }

// ListRoots returns the roots of --roots and the answers file.
func (r *rootsLister) ListRoots(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	return &conduit.ListRootsResult{Roots: slices.Clone(r.roots)}, nil
}

// sleep waits d, or returns ctx's error if it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notifier prints the server's log entries on stderr and logs its other
// notifications.
type notifier struct {
	w      io.Writer // serialised; one Write per line
	json   bool
	logger *slog.Logger
}

// logLine is the --json form of a server log entry.
type logLine struct {
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Data   any    `json:"data"`
}

// HandleLog prints one sanitised log entry: a JSON object with --json,
// else "[level] logger: data".
func (n *notifier) HandleLog(_ context.Context, _ conduit.NotificationContext, e *conduit.LoggingMessage) {
	var line []byte
	if n.json {
		b, err := json.Marshal(logLine{Level: e.Level, Logger: e.Logger, Data: e.Data})
		if err != nil {
			n.logger.Warn("server log entry could not be encoded", "err", err)
			return
		}
		line = append(b, '\n')
	} else {
		data, ok := e.Data.(string)
		if !ok {
			b, err := json.Marshal(e.Data)
			if err != nil {
				n.logger.Warn("server log entry could not be encoded", "err", err)
				return
			}
			data = string(b)
		}
		if e.Logger != "" {
			line = fmt.Appendf(nil, "[%s] %s: %s\n", e.Level, e.Logger, data)
		} else {
			line = fmt.Appendf(nil, "[%s] %s\n", e.Level, data)
		}
	}
	_, _ = n.w.Write(line)
}

// HandleNotification shows progress as a bar on stderr (a JSON line with
// --json) and logs every other notification (shown with -v).
func (n *notifier) HandleNotification(_ context.Context, _ conduit.NotificationContext, note *conduit.Notification) {
	if note.Method == messages.MethodProgress {
		if line, ok := progressLine(note.Params, n.json); ok {
			_, _ = n.w.Write(line)
			return
		}
	}
	n.logger.Info("server notification", "method", note.Method)
	n.logger.Debug("server notification params", "method", note.Method, "params", string(note.Params))
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// progressLine renders notifications/progress: a bar when the total is
// known, the count otherwise, and the server's message sanitised.
func progressLine(params json.RawMessage, asJSON bool) ([]byte, bool) {
	var p struct {
		Progress *float64 `json:"progress"`
		Total    *float64 `json:"total"`
		Message  string   `json:"message"`
	}
	if json.Unmarshal(params, &p) != nil || p.Progress == nil {
		return nil, false
	}
	msg := sanitize.Text(p.Message, 200)
	if asJSON {
		b, err := json.Marshal(map[string]any{"progress": *p.Progress, "total": p.Total, "message": msg})
		return append(b, '\n'), err == nil
	}
	const width = 20
	if p.Total == nil || *p.Total <= 0 {
		return fmt.Appendf(nil, "progress %g %s\n", *p.Progress, msg), true
	}
	frac := min(max(*p.Progress / *p.Total, 0), 1)
	filled := int(frac*width + 0.5)
	return fmt.Appendf(nil, "progress [%s%s] %3.0f%% %s\n", strings.Repeat("#", filled), strings.Repeat("-", width-filled), frac*100, msg), true
}
