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

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// newHandlers builds the handler set for the scripted answers a (nil
// without --answers) and the roots of --roots: the notifier's hooks, and
// exactly the input kinds the file (or --sampling-command) gives. Roots are
// offered when either names any (or the file has a "roots" key, even empty).
func newHandlers(n *notifier, a *answers, flagRoots []conduit.Root, cmd samplingCommand) conduit.Handlers {
	h := n.handlers()
	if a == nil {
		a = &answers{}
	}
	// A kind is declared when the file or one server's entry gives it; each
	// request is answered from the asking server's answers (forServer).
	if a.anyScope(func(s *answers) bool { return s.Sampling != nil }) {
		h.Sampling = (&sampler{answers: a}).HandleSampling
	}
	if cmd.command != "" { // --sampling-command answers sampling instead
		h.Sampling = (&commandSampler{cmd: cmd}).HandleSampling
	}
	if a.anyScope(func(s *answers) bool { return s.Elicitation != nil }) {
		h.Elicitation = (&elicitor{answers: a}).HandleElicitation
		modes := map[string]bool{}
		for _, s := range append([]*answers{a}, slices.Collect(maps.Values(a.Servers))...) {
			if s.Elicitation != nil {
				for _, m := range s.Elicitation.Modes {
					modes[m] = true
				}
			}
		}
		h.ElicitationModes = slices.Sorted(maps.Keys(modes))
	}
	if flagRoots != nil || a.anyScope(func(s *answers) bool { return s.Roots != nil }) {
		h.Roots = (&rootsLister{flag: flagRoots, answers: a}).ListRoots
	}
	return h
}

// noAnswer refuses a kind of input the answers file gives some servers
// but not the asking one.
func noAnswer(kind, server string) error {
	return &conduit.RPCError{Code: messages.CodeMethodNotFound, Message: fmt.Sprintf("Method not found: the answers file gives no %s answer for server %q", kind, server)}
}

// sampler answers sampling/createMessage from the answers file.
type sampler struct{ answers *answers }

// HandleSampling waits the scripted delay, then answers or refuses.
func (s *sampler) HandleSampling(ctx context.Context, req *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	answer := s.answers.forServer(req.ServerID).Sampling
	if answer == nil {
		return nil, noAnswer("sampling", req.ServerID)
	}
	if err := answer.Delays.Wait(ctx); err != nil {
		return nil, err
	}
	if answer.Error != nil {
		rpc := *answer.Error
		return nil, &rpc
	}
	res := *answer.Result
	res.Content.Blocks = slices.Clone(res.Content.Blocks)
	return &res, nil
}

// elicitor answers elicitation/create from the answers file.
type elicitor struct{ answers *answers }

// HandleElicitation waits the scripted delay, then answers or refuses. The
// content goes with a form-mode accept only: a URL-mode accept has none.
func (e *elicitor) HandleElicitation(ctx context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	answer := e.answers.forServer(req.ServerID).Elicitation
	if answer == nil || !slices.Contains(answer.Modes, req.Mode) {
		return nil, noAnswer(req.Mode+" elicitation", req.ServerID)
	}
	if err := answer.Delays.Wait(ctx); err != nil {
		return nil, err
	}
	if answer.Error != nil {
		rpc := *answer.Error
		return nil, &rpc
	}
	res := &conduit.ElicitResult{Action: answer.Action}
	if res.Action == "accept" && req.Mode != "url" && answer.Content != nil {
		res.Content = maps.Clone(answer.Content)
	}
	return res, nil
}

// rootsLister answers roots/list: the roots of --roots and those the
// answers file gives the asking server.
type rootsLister struct {
	flag    []conduit.Root
	answers *answers
}

// ListRoots returns the roots of --roots and the answers file.
func (r *rootsLister) ListRoots(_ context.Context, req *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	var server string
	if req != nil {
		server = req.ServerID
	}
	return &conduit.ListRootsResult{Roots: mergeRoots(r.flag, r.answers.forServer(server).Roots)}, nil
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

// handlers is the notifier as a handler set's notification hooks.
func (n *notifier) handlers() conduit.Handlers {
	return conduit.Handlers{Notification: n.HandleNotification, Log: n.HandleLog, Progress: n.HandleProgress}
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

// HandleProgress shows progress as a bar on stderr (a JSON line with
// --json).
func (n *notifier) HandleProgress(_ context.Context, _ conduit.NotificationContext, p *conduit.Progress) {
	if line, ok := progressLine(p, n.json); ok {
		_, _ = n.w.Write(line)
	}
}

// HandleNotification logs every notification but progress (shown with -v).
func (n *notifier) HandleNotification(_ context.Context, _ conduit.NotificationContext, note *conduit.Notification) {
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
// known, the count otherwise, and the server's message (sanitised by
// Conduit) cut to 200 characters.
func progressLine(p *conduit.Progress, asJSON bool) ([]byte, bool) {
	msg := sanitize.Text(p.Message, 200)
	if asJSON {
		b, err := json.Marshal(map[string]any{"progress": p.Progress, "total": p.Total, "message": msg})
		return append(b, '\n'), err == nil
	}
	const width = 20
	if p.Total == nil || *p.Total <= 0 {
		return fmt.Appendf(nil, "progress %g %s\n", p.Progress, msg), true
	}
	frac := min(max(p.Progress / *p.Total, 0), 1)
	filled := int(frac*width + 0.5)
	return fmt.Appendf(nil, "progress [%s%s] %3.0f%% %s\n", strings.Repeat("#", filled), strings.Repeat("-", width-filled), frac*100, msg), true
}

// showTaskStatus shows a task's status on stderr like call progress:
// "task ID STATUS: message", or with --json one object {"task", "status",
// "message"} per line. The server's words are sanitised.
func (a *app) showTaskStatus(t conduit.Task) {
	_, _ = a.stderr.Write(taskLine(t, a.opts.json))
}

func taskLine(t conduit.Task, asJSON bool) []byte {
	id, status, msg := sanitize.Text(t.TaskID, 100), sanitize.Text(t.Status, 40), sanitize.Text(t.StatusMessage, 200)
	if asJSON {
		b, _ := json.Marshal(map[string]string{"task": id, "status": status, "message": msg})
		return append(b, '\n')
	}
	if msg == "" {
		return fmt.Appendf(nil, "task %s %s\n", id, status)
	}
	return fmt.Appendf(nil, "task %s %s: %s\n", id, status, msg)
}
