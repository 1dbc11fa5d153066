package actors

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

// Logical is a call whose one deadline spans several requests: a tool call
// that became a task, from tools/call to the task's end (the polls, the
// answers, tasks/result). The tracker knows it by its id like any call, so
// the input asked for it pauses its deadline, and MaxTotalTimeout bounds it.
// A Logical is used by one goroutine at a time; End releases it.
type Logical struct {
	rt      *Runtime
	id      messages.ID
	method  string
	expired chan error // buffered 1: the deadline fired between requests
	once    sync.Once
	rounds  int // requests that asked for input so far, the opening one included: Answer's cap
}

// StartLogical starts a logical call for method with the call's options.
func (rt *Runtime) StartLogical(method string, opts CallOptions) (*Logical, error) {
	if err := rt.begin(method, &opts); err != nil {
		return nil, err
	}
	l := &Logical{rt: rt, id: messages.IntID(rt.nextID.Add(1)), method: method, expired: make(chan error, 1)}
	rt.post(&logicalStart{id: l.id, method: method, timeout: opts.Timeout, maxTotal: opts.MaxTotalTimeout, assigns: opts.Assigns, expired: l.expired})
	return l, nil
}

// ID is the logical call's id: the id on the wire of the request Open sent.
func (l *Logical) ID() messages.ID { return l.id }

// Open sends the request the logical call stands for under the logical
// call's own id, so that a server request related to it on the wire (a
// legacy HTTP response stream) names the call.
func (l *Logical) Open(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return l.rt.roundAs(ctx, l.id, l.id, method, params, l.expired, false)
}

// OpenTask is Open for a task-augmented request (2025-11-25): when its
// result creates a task ({"task": {"taskId": …}}), the task is bound to
// this call (as BindTask does) in the connection's activation that
// delivers the result, before any message that follows it: the server's
// first request for the task's input, sent right after the result,
// already belongs to the call.
func (l *Logical) OpenTask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return l.rt.roundAs(ctx, l.id, l.id, method, params, l.expired, true)
}

// Round sends one more request of the logical call, under a fresh id.
func (l *Logical) Round(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return l.rt.roundAs(ctx, messages.IntID(l.rt.nextID.Add(1)), l.id, method, params, l.expired, false)
}

// BindTask makes the server requests that carry taskID in their
// related-task metadata belong to this call (2025-11-25): they pause its
// deadline, get its assigns and are audited with its id. A task this
// call created is bound already (OpenTask); BindTask is for a task
// created earlier and awaited under a new call.
func (l *Logical) BindTask(taskID string) {
	l.rt.post(&taskBound{task: taskID, id: l.id})
}

// Answer answers a task's input requests (modern) through the input
// pipeline, as MRTR does, with the call's deadline paused meanwhile. The
// opening request and each answered round count as rounds under
// m.MaxRounds, the cap CallModern applies: past it Answer fails with the
// same KindProtocol error and answers nothing.
func (l *Logical) Answer(ctx context.Context, m Modern, reqs map[string]json.RawMessage) (map[string]any, error) {
	l.rounds++
	if err := m.capRounds(l.rounds, reqs); err != nil {
		l.rt.m.sh.count().roundsCapped.Add(1)
		return nil, err
	}
	return l.rt.gather(ctx, l.id, m, reqs, l.expired)
}

// Wait waits d between two requests, or less when wake fires (then it
// reports true). It returns the call's timeout when its deadline passes
// meanwhile, a KindCancelled or KindTimeout error when ctx ends, and a
// closed error when the connection ends.
func (l *Logical) Wait(ctx context.Context, d time.Duration, wake <-chan struct{}) (bool, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-wake:
		return true, nil
	case err := <-l.expired:
		return false, err
	case <-ctx.Done():
		return false, messages.ContextEnded(ctx, l.method)
	case <-l.rt.done:
		return false, l.rt.m.life.closedErr(l.method)
	}
}

// End ends the logical call: the tracker forgets it. It may be called more
// than once.
func (l *Logical) End() {
	l.once.Do(func() { l.rt.post(&logicalEnd{id: l.id}) })
}

// WatchTask returns a channel that gets a value when the server notifies
// a status change of taskID (notifications/tasks/status, 2025-11-25), and
// the function that stops watching. Notifications only wake a poller: the
// status itself is always read with tasks/get.
func (rt *Runtime) WatchTask(taskID string) (<-chan struct{}, func()) {
	return rt.m.sh.active().taskWatch.watch(taskID)
}

// taskWatch maps a task id to the channel of the poller that awaits it.
// The connection actor signals it; pollers register and unregister from
// their own goroutines.
type taskWatch struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

func (w *taskWatch) watch(taskID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiters == nil {
		w.waiters = map[string]chan struct{}{}
	}
	w.waiters[taskID] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.waiters[taskID] == ch {
			delete(w.waiters, taskID)
		}
	}
}

// notified wakes the poller of the task a notifications/tasks/status
// names, if any; it never blocks (a wake already pending is enough).
func (w *taskWatch) notified(params json.RawMessage) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return
	}
	w.mu.Lock()
	ch := w.waiters[p.TaskID]
	w.mu.Unlock()
	if ch != nil {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

var relatedTaskKey = []byte("related-task")

// createdTask is the id of the task a task-augmented request's result
// created (2025-11-25: {"task": {"taskId": …}}), "" when it created none
// (the server ran the call normally).
func createdTask(result json.RawMessage) string {
	var r struct {
		Task *struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &r) != nil || r.Task == nil {
		return ""
	}
	return r.Task.TaskID
}

// relatedTask is the task id in a server request's related-task metadata
// ("" when none): the task the request asks input for (2025-11-25).
func relatedTask(params json.RawMessage) string {
	if !bytes.Contains(params, relatedTaskKey) && bytes.IndexByte(params, '\\') < 0 {
		return "" // most requests: no decode (a backslash may be an escaped key)
	}
	var p struct {
		Meta struct {
			Related struct {
				TaskID string `json:"taskId"`
			} `json:"io.modelcontextprotocol/related-task"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return p.Meta.Related.TaskID
}
