package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// Task types. One Task type serves both eras: a 2025-11-25 task's ttl and
// pollInterval are read into TTLMs and PollIntervalMs.
type (
	Task          = messages.Task
	DetailedTask  = messages.DetailedTask
	ToolExecution = messages.ToolExecution
)

// Task statuses.
const (
	TaskWorking       = messages.TaskWorking
	TaskInputRequired = messages.TaskInputRequired
	TaskCompleted     = messages.TaskCompleted
	TaskFailed        = messages.TaskFailed
	TaskCancelled     = messages.TaskCancelled
)

// Task support of a tool (Tool.Execution.TaskSupport, 2025-11-25).
const (
	TaskSupportForbidden = messages.TaskSupportForbidden
	TaskSupportOptional  = messages.TaskSupportOptional
	TaskSupportRequired  = messages.TaskSupportRequired
)

// DefaultPollInterval is how often a task is polled when the server names
// no interval.
const DefaultPollInterval = time.Second

// minTaskPoll is the shortest time between two polls of a task that
// notifications/tasks/status may cause: a server flooding them does not
// turn into a flood of tasks/get.
const minTaskPoll = 100 * time.Millisecond

// WithTask asks for the call to run as a task where the tool allows it
// but does not require it (2025-11-25: execution.taskSupport "optional").
// A tool whose taskSupport is "required" always runs as a task, and in the
// modern era the server alone decides. Needs Options.Tasks.
func WithTask() CallOption { return func(o *callOptions) { o.task = true } }

// WithTaskTTL is the lifetime asked for a task the call creates
// (2025-11-25 params.task.ttl; default: the call's MaxTotalTimeout, beyond
// which nobody awaits it). Without either (or under a millisecond) no ttl is
// asked for: the server's default.
func WithTaskTTL(d time.Duration) CallOption { return func(o *callOptions) { o.taskTTL = d } }

// WithTaskStatus calls fn, on the awaiting goroutine, with the task each
// time its status or status message changes while it is awaited: first
// the task as created, then what each poll of tasks/get says.
func WithTaskStatus(fn func(Task)) CallOption { return func(o *callOptions) { o.taskStatus = fn } }

// legacyTask is a 2025-11-25 task on the wire: ttl and pollInterval where
// the modern era has ttlMs and pollIntervalMs.
type legacyTask struct {
	Task
	TTL          *int64 `json:"ttl"`
	PollInterval *int64 `json:"pollInterval"`
}

func (t legacyTask) task() *Task {
	out := t.Task
	out.TTLMs, out.PollIntervalMs = t.TTL, t.PollInterval
	return &out
}

// legacyTasks reports whether tools/call may be task-augmented on s: the
// client declared tasks, the session speaks 2025-11-25 and the server
// offers task-augmented tools/call (tasks.requests.tools.call).
func (c *Client) legacyTasks(s *session) bool {
	if !c.declared.Tasks || s.rt.Era() != EraLegacy || s.rt.Version() != messages.Version20251125 {
		return false
	}
	caps := serverTasks(s)
	return caps.Requests != nil && caps.Requests.Tools != nil && declared(caps.Requests.Tools.Call)
}

// serverTaskCaps is a 2025-11-25 server's tasks capability.
type serverTaskCaps struct {
	Cancel   json.RawMessage `json:"cancel"`
	Requests *struct {
		Tools *struct {
			Call json.RawMessage `json:"call"`
		} `json:"tools"`
	} `json:"requests"`
}

// It is decoded at the session's first call, not at every call.
func serverTasks(s *session) serverTaskCaps {
	if t := s.tasks.Load(); t != nil {
		return *t
	}
	var caps struct {
		Tasks serverTaskCaps `json:"tasks"`
	}
	_ = json.Unmarshal(s.init.Capabilities, &caps) // malformed: nothing offered
	s.tasks.Store(&caps.Tasks)
	return caps.Tasks
}

// declared reports whether a capability is present (an object, not null).
func declared(v json.RawMessage) bool { return len(v) > 0 && string(v) != "null" }

// taskSupport is a tool's execution.taskSupport on s, from the last
// tools/list of the session; the first call that needs it lists the tools
// when nobody has. A list that fails leaves the call a plain one.
func (c *Client) taskSupport(ctx context.Context, s *session, name string) string {
	idx := c.listedTools(ctx, s, "the tool's task support is unknown")
	if idx == nil {
		return ""
	}
	return idx.taskSupport[name]
}

// callToolAsTask runs a tools/call as a task when it is one to run so
// (2025-11-25: see CallTool), and reports whether it was. A session the
// server forgot before the task was created is renewed, and the call tried
// once more on the fresh one, as any call is.
func (c *Client) callToolAsTask(ctx context.Context, p messages.CallToolParams, o callOptions) (*CallToolResult, bool, error) {
	for attempt := 0; ; attempt++ {
		s := c.sess()
		if !c.legacyTasks(s) {
			return nil, false, nil
		}
		support := c.taskSupport(ctx, s, p.Name)
		if s != c.sess() && attempt == 0 {
			continue // listing the tools renewed the session: decide on the fresh one
		}
		if support != TaskSupportRequired && (support != TaskSupportOptional || !o.task) {
			return nil, false, nil
		}
		l, t, res, err := c.createTask(ctx, s, p, o)
		if errors.Is(err, transport.ErrSessionTerminated) && attempt == 0 {
			if _, err := c.renew(ctx, s, messages.MethodCallTool); err != nil {
				return nil, true, err
			}
			continue
		}
		if l == nil {
			if err != nil {
				err = c.urlElicitationRequired(s, o, err) // a task-augmented call may be refused with -32042 too
			}
			return res, true, err
		}
		defer l.End()
		if !o.awaitTask {
			return &CallToolResult{Task: t}, true, nil
		}
		res, err = c.await(ctx, s, l, t, o)
		return res, true, err
	}
}

// createTask sends a task-augmented tools/call on s. Its deadline spans
// the task: the call's Timeout (paused while the task's input is answered)
// and MaxTotalTimeout bound it until the task's result, so the logical
// call that sent it is returned with the task, for the caller to end. A
// server that runs the call normally instead answers with the tool's
// result: res, and no logical call.
func (c *Client) createTask(ctx context.Context, s *session, p messages.CallToolParams, o callOptions) (*actors.Logical, *Task, *CallToolResult, error) {
	method := messages.MethodCallTool
	raw, err := o.encodeCall(method, p)
	if err != nil {
		return nil, nil, nil, err
	}
	ttl := o.taskTTL
	if ttl <= 0 {
		ttl = o.maxTotal
	}
	task := era.Member{Key: "task", Value: json.RawMessage(`{}`)} // no total limit: the server's ttl
	if ms := ttl.Milliseconds(); ms > 0 {
		task.Value = json.RawMessage(`{"ttl":` + strconv.FormatInt(ms, 10) + `}`)
	}
	if raw, err = withProgressToken(raw, []era.Member{task}, o.progressToken); err != nil {
		return nil, nil, nil, &Error{Kind: KindUsage, Method: method, Err: err}
	}
	l, err := s.rt.StartLogical(method, actors.CallOptions{Timeout: o.timeout, MaxTotalTimeout: o.maxTotal, Assigns: o.assigns})
	if err != nil {
		return nil, nil, nil, err
	}
	created := false
	defer func() {
		if !created {
			l.End()
		}
	}()
	answer, err := l.OpenTask(ctx, method, raw)
	if err != nil {
		return nil, nil, nil, err
	}
	var r struct {
		Task *legacyTask `json:"task"`
	}
	if err := json.Unmarshal(answer, &r); err != nil {
		return nil, nil, nil, &Error{Kind: KindProtocol, Method: method, Message: "malformed result", Err: err}
	}
	if r.Task == nil {
		// A server that does not take tasks for this call runs it
		// normally: its answer is the tool's result.
		res, err := decodeToolResult(method, answer)
		return nil, nil, res, err
	}
	if r.Task.TaskID == "" {
		return nil, nil, nil, &Error{Kind: KindProtocol, Method: method, Message: "malformed task result: no taskId"}
	}
	created = true
	return l, r.Task.task(), nil, nil
}

// toolResult decodes a tools/call answer; a task is awaited when asked.
func (c *Client) toolResult(ctx context.Context, raw json.RawMessage, o callOptions) (*CallToolResult, error) {
	s := c.sess()
	if s.rt.Era() == EraModern && c.declared.Tasks {
		if kind, _ := era.ResultType(raw, messages.MethodCallTool, true); kind == era.ResultTask {
			var t Task
			if err := json.Unmarshal(raw, &t); err != nil || t.TaskID == "" {
				return nil, &Error{Kind: KindProtocol, Method: messages.MethodCallTool, Message: "malformed task result", Err: err}
			}
			if o.awaitTask {
				return c.awaitNew(ctx, s, &t, o)
			}
			return &CallToolResult{Task: &t}, nil
		}
	}
	r, err := decodeToolResult(messages.MethodCallTool, raw)
	if err == nil {
		olderRevisionResult(s.rt.Version(), r)
	}
	return r, err
}

func decodeToolResult(method string, raw json.RawMessage) (*CallToolResult, error) {
	r, err := unmarshalToolResult(raw)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Method: method, Message: "malformed result", Err: err}
	}
	return &r, nil
}

// unmarshalToolResult is json.Unmarshal of a tool's result, the same value
// and the same error. Every tools/call pays it, so the common result
// (valid JSON, plain keys, each member once and of its type) is read in
// one pass without reflection; anything else goes to encoding/json.
func unmarshalToolResult(raw []byte) (CallToolResult, error) {
	if r, ok := fastToolResult(raw); ok {
		return r, nil
	}
	var r CallToolResult
	err := json.Unmarshal(raw, &r)
	return r, err
}

var toolResultNames = []string{"content", "structuredContent", "isError", "_meta"}

// fastToolResult is unmarshalToolResult's fast decoder: it reports false
// where it cannot be sure to give what encoding/json gives.
func fastToolResult(raw []byte) (CallToolResult, bool) {
	var r CallToolResult
	if !jsonscan.Valid(raw) {
		return r, false
	}
	ok := jsonscan.Struct(raw, toolResultNames, func(name string, v []byte) bool {
		ok := true
		switch name {
		case "content":
			if !jsonscan.IsNull(v) {
				r.Content, ok = jsonscan.Slice(v, messages.FastContentBlock)
			}
		case "structuredContent":
			r.StructuredContent = jsonscan.Raw(v)
		case "isError":
			r.IsError, ok = jsonscan.Bool(v)
		case "_meta":
			r.Meta = jsonscan.Raw(v)
		}
		return ok
	})
	return r, ok
}

// AwaitTask waits for a task a tools/call created (CallToolResult.Task) to
// end, in either era, and returns the tool's result: completed returns it
// (a result with isError included), failed the task's JSON-RPC error
// (KindRPC) or its isError result, cancelled by the server a
// KindTaskCancelled error. Without Options.Tasks it fails with KindUsage.
//
// It polls tasks/get at the server's poll interval (DefaultPollInterval
// when none); a 2025-11-25 notifications/tasks/status polls at once. The
// task's input goes through the same capability check, guards, budget,
// handler and audit as any other input, its deadline paused meanwhile:
// modern input requests from tasks/get, each key once, answered with
// tasks/update; 2025-11-25 server requests carrying the task's
// related-task metadata, which arrive while tasks/result is awaited.
// tasks/result gives a 2025-11-25 task's result.
//
// The wait is one call: the call options' Timeout (paused while input is
// gathered) and MaxTotalTimeout bound it, as does ctx. When the task is
// given up before it ends (the deadline, ctx, input that could not be
// given), tasks/cancel is sent.
func (c *Client) AwaitTask(ctx context.Context, t *Task, opts ...CallOption) (*CallToolResult, error) {
	if !c.declared.Tasks {
		return nil, &Error{Kind: KindUsage, Method: messages.MethodGetTask, Message: "tasks need Options.Tasks"}
	}
	return c.awaitNew(ctx, c.sess(), t, c.callOptions(opts))
}

// awaitNew awaits t under a logical call of its own.
func (c *Client) awaitNew(ctx context.Context, s *session, t *Task, o callOptions) (*CallToolResult, error) {
	l, err := s.rt.StartLogical(messages.MethodCallTool, actors.CallOptions{Timeout: o.timeout, MaxTotalTimeout: o.maxTotal, Assigns: o.assigns})
	if err != nil {
		return nil, err
	}
	defer l.End()
	return c.await(ctx, s, l, t, o)
}

// await polls t under the logical call l until it ends (see AwaitTask).
func (c *Client) await(ctx context.Context, s *session, l *actors.Logical, t *Task, o callOptions) (*CallToolResult, error) {
	legacy := s.rt.Era() != EraModern
	if legacy {
		l.BindTask(t.TaskID)
	}
	wake, stop := s.rt.WatchTask(t.TaskID)
	defer stop()
	if !legacy {
		defer c.streamTask(s, t.TaskID)()
	}
	last := *t
	if o.taskStatus != nil {
		o.taskStatus(last)
	}
	answered := map[string]bool{}
	interval := pollInterval(t.PollIntervalMs)
	id := map[string]any{"taskId": t.TaskID}
	polled, pollNow := time.Now(), true // the first poll at once: the task may have moved already
	for {
		if !pollNow {
			woke, err := l.Wait(ctx, interval, wake)
			if err == nil && woke {
				if gap := minTaskPoll - time.Since(polled); gap > 0 {
					_, err = l.Wait(ctx, gap, nil)
				}
			}
			if err != nil {
				return nil, c.taskEnded(ctx, t.TaskID, err)
			}
		}
		polled, pollNow = time.Now(), false
		var d DetailedTask
		if legacy {
			var lt legacyTask
			if err := c.taskRound(ctx, s, l, messages.MethodGetTask, id, &lt); err != nil {
				return nil, c.taskEnded(ctx, t.TaskID, err)
			}
			d.Task = *lt.task()
		} else if err := c.taskRound(ctx, s, l, messages.MethodGetTask, id, &d); err != nil {
			return nil, c.taskEnded(ctx, t.TaskID, err)
		}
		if d.PollIntervalMs != nil {
			interval = pollInterval(d.PollIntervalMs)
		}
		if o.taskStatus != nil && (d.Status != last.Status || d.StatusMessage != last.StatusMessage) {
			o.taskStatus(d.Task)
		}
		last = d.Task
		switch d.Status {
		case messages.TaskCancelled:
			return nil, &Error{Kind: KindTaskCancelled, Method: messages.MethodCallTool, Message: "task cancelled by the server"}
		case messages.TaskCompleted, messages.TaskFailed:
			if legacy {
				return c.legacyTaskResult(ctx, s, l, t.TaskID, false)
			}
			return modernTaskEnd(&d)
		case messages.TaskInputRequired:
			if legacy {
				// The server sends its requests for input while
				// tasks/result is awaited; they are answered as they come.
				if o.taskStatus == nil {
					return c.legacyTaskResult(ctx, s, l, t.TaskID, true)
				}
				return c.legacyTaskResultShown(ctx, s, l, last, interval, wake, o.taskStatus)
			}
			fresh := map[string]json.RawMessage{}
			for k, v := range d.InputRequests {
				if !answered[k] {
					fresh[k] = v
				}
			}
			if len(fresh) > 0 {
				answers, err := l.Answer(ctx, actors.Modern{Method: messages.MethodCallTool, Version: s.rt.Version(), Declared: c.declared, Tasks: true, MaxRounds: c.opts.MaxRounds}, fresh)
				if err != nil {
					return nil, c.taskEnded(ctx, t.TaskID, err)
				}
				if err := c.taskRound(ctx, s, l, messages.MethodUpdateTask, map[string]any{"taskId": t.TaskID, "inputResponses": answers}, nil); err != nil {
					return nil, c.taskEnded(ctx, t.TaskID, err)
				}
				for k := range fresh {
					answered[k] = true
				}
				pollNow = true // the answers may have moved it on
			}
		}
	}
}

// modernTaskEnd is the outcome of a modern task that completed or failed.
func modernTaskEnd(d *DetailedTask) (*CallToolResult, error) {
	if d.Status == messages.TaskCompleted {
		r, err := unmarshalToolResult(d.Result)
		if err != nil {
			return nil, &Error{Kind: KindProtocol, Method: messages.MethodGetTask, Message: "malformed task result", Err: err}
		}
		return &r, nil
	}
	rpc := d.Error
	if rpc == nil {
		rpc = &RPCError{Code: messages.CodeInternalError, Message: d.StatusMessage}
	}
	return nil, &Error{Kind: KindRPC, Method: messages.MethodCallTool, Message: "task failed", RPC: rpc}
}

// legacyTaskResult asks tasks/result for a 2025-11-25 task's outcome: the
// tool's result, or the JSON-RPC error the call would have had. It blocks
// until the task ends; live says the task had not ended when asked, so
// that a failure of tasks/result cancels it.
func (c *Client) legacyTaskResult(ctx context.Context, s *session, l *actors.Logical, taskID string, live bool) (*CallToolResult, error) {
	var raw json.RawMessage
	if err := c.taskRound(ctx, s, l, messages.MethodTaskResult, map[string]any{"taskId": taskID}, &raw); err != nil {
		if live {
			// Nothing more comes of this task here: not left running.
			return nil, c.taskEnded(ctx, taskID, err)
		}
		return nil, err
	}
	return decodeToolResult(messages.MethodTaskResult, raw)
}

// legacyTaskResultShown is legacyTaskResult for a live task whose status
// is shown: tasks/result is awaited on another goroutine while this one
// goes on polling tasks/get (the revision allows it) and reports each
// change, the last once the result is in. These polls are plain requests,
// outside the call's deadline; their failures are only logged.
func (c *Client) legacyTaskResultShown(ctx context.Context, s *session, l *actors.Logical, last Task, interval time.Duration, wake <-chan struct{}, report func(Task)) (*CallToolResult, error) {
	type outcome struct {
		res *CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.legacyTaskResult(ctx, s, l, last.TaskID, true)
		done <- outcome{res, err}
	}()
	poll := func() {
		var lt legacyTask
		pctx, cancel := context.WithTimeout(ctx, max(interval, time.Second))
		defer cancel()
		if err := c.Call(pctx, messages.MethodGetTask, map[string]any{"taskId": last.TaskID}, &lt); err != nil {
			c.opts.Logger.Debug("tasks/get while tasks/result is awaited failed", "task", last.TaskID, "err", err)
			return
		}
		d := lt.task()
		if d.PollIntervalMs != nil {
			interval = pollInterval(d.PollIntervalMs)
		}
		if d.Status != last.Status || d.StatusMessage != last.StatusMessage {
			report(*d)
		}
		last = *d
	}
	polled := time.Now()
	next := polled.Add(interval)
	for {
		timer := time.NewTimer(time.Until(next))
		select {
		case out := <-done:
			timer.Stop()
			if out.err == nil {
				poll() // the status it ended with, shown last
			}
			return out.res, out.err
		case <-timer.C:
		case <-wake:
			timer.Stop()
			if soonest := polled.Add(minTaskPoll); time.Now().Before(soonest) {
				if soonest.Before(next) {
					next = soonest // polled too recently: poll once the gap is over
				}
				continue
			}
		}
		polled = time.Now()
		poll()
		next = polled.Add(interval)
	}
}

// taskRound sends one tasks/* request of the logical call l (with the
// modern _meta in the modern era) and decodes its answer into out.
func (c *Client) taskRound(ctx context.Context, s *session, l *actors.Logical, method string, params, out any) error {
	raw, err := encodeParams(method, params)
	if err != nil {
		return err
	}
	modern := s.rt.Era() == EraModern
	if modern {
		meta, err := c.meta(s.rt.Version(), nil)
		if err == nil {
			raw, err = era.WithMeta(raw, nil, meta)
		}
		if err != nil {
			// Conduit's own params, capabilities and info.
			return &Error{Kind: KindInternal, Method: method, Err: err}
		}
	}
	res, err := l.Round(ctx, method, raw)
	if err != nil {
		return err
	}
	if modern {
		if _, err := era.ResultType(res, method, true); err != nil {
			return &Error{Kind: KindProtocol, Method: method, Message: err.Error()}
		}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return &Error{Kind: KindProtocol, Method: method, Message: "malformed result", Err: err}
	}
	return nil
}

// taskEnded is how a task that has not ended is given up on: the caller's
// context or the call's deadline ended, or its input could not be
// answered. The server is told with tasks/cancel (best effort, bounded),
// so no task is left waiting for input nobody will send, unless it said
// it does not know the task (-32602: unknown or expired) or, in 2025-11-25,
// does not offer tasks/cancel (tasks.cancel); err is returned.
func (c *Client) taskEnded(ctx context.Context, taskID string, err error) error {
	var ce *Error
	if errors.As(err, &ce) && ce.Kind == KindRPC && ce.RPC != nil && ce.RPC.Code == messages.CodeInvalidParams {
		return err
	}
	if s := c.sess(); s.rt.Era() == EraLegacy && !declared(serverTasks(s).Cancel) {
		return err // a 2025-11-25 server without tasks.cancel would refuse it
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if cerr := c.Call(cctx, messages.MethodCancelTask, map[string]any{"taskId": taskID}, nil); cerr != nil {
		c.opts.Logger.Warn("tasks/cancel failed", "task", taskID, "err", cerr)
	}
	return err
}

// pollInterval is a task's poll interval in ms as a time.Duration; one
// beyond a Duration's range is the longest (it wrapped to a negative wait:
// tasks/get over and over).
func pollInterval(ms *int64) time.Duration {
	switch {
	case ms == nil || *ms <= 0:
		return DefaultPollInterval
	case *ms > int64(math.MaxInt64/time.Millisecond):
		return math.MaxInt64
	}
	return time.Duration(*ms) * time.Millisecond
}
