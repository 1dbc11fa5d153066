package demoserver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
)

// taskState is one task of the tasks extension. It moves on as it is
// polled: working, input_required (an approval), working, completed.
type taskState struct {
	id               string
	status, message  string
	created, updated time.Time
	polls            int             // tasks/get so far
	asked            bool            // the approval was asked for (counted once)
	request          map[string]any  // the approval's input request
	answer           json.RawMessage // its answer, from tasks/update
	answeredPolls    int             // tasks/get since the answer
	result           map[string]any
}

const taskApprovalKey = "approve-export"

func (s *serverConn) startTask(id messages.ID) {
	now := time.Now().UTC()
	s.mu.Lock()
	s.nextTask++
	t := &taskState{id: fmt.Sprintf("task-%d", s.nextTask), status: messages.TaskWorking, message: "Preparing the export", created: now, updated: now}
	s.tasks[t.id] = t
	view := t.view()
	s.mu.Unlock()
	view["resultType"] = era.ResultTask
	s.reply(id, true, view)
}

// view is the task as tasks/get shows it. Called with s.mu held.
func (t *taskState) view() map[string]any {
	v := map[string]any{
		"taskId": t.id, "status": t.status,
		"createdAt": t.created.Format(time.RFC3339), "lastUpdatedAt": t.updated.Format(time.RFC3339),
		"ttlMs": 60000, "pollIntervalMs": pollIntervalMs,
	}
	if t.message != "" {
		v["statusMessage"] = t.message
	}
	switch t.status {
	case messages.TaskInputRequired:
		v["inputRequests"] = map[string]any{taskApprovalKey: t.request}
	case messages.TaskCompleted:
		v["result"] = t.result
	}
	return v
}

func (s *serverConn) task(f *messages.Frame) {
	var p struct {
		TaskID         string                     `json:"taskId"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(f.Params, &p); err != nil {
		s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: %v", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[p.TaskID]
	if !ok {
		s.fail(f.ID, messages.CodeInvalidParams, nil, "Invalid params: unknown task %q", p.TaskID)
		return
	}
	now := time.Now().UTC()
	switch f.Method {
	case "tasks/get":
		t.polls++
		switch {
		case t.status == messages.TaskWorking && t.answer == nil && t.polls >= 2:
			t.status, t.message, t.updated = messages.TaskInputRequired, "Waiting for approval", now
			t.request = map[string]any{"method": messages.MethodElicit, "params": approvalParams()}
			if !t.asked {
				t.asked = true
				s.srv.inputs.Add(1)
			}
		case t.status == messages.TaskWorking && t.answer != nil:
			t.answeredPolls++
			if t.answeredPolls >= 2 {
				t.status, t.message, t.updated = messages.TaskCompleted, "", now
				t.result = map[string]any{"resultType": era.ResultComplete, "content": []messages.ContentBlock{{Type: "text", Text: exportOutcome(t.answer, "task "+t.id)}}}
			}
		}
		v := t.view()
		s.reply(f.ID, true, v)
	case "tasks/update":
		if a, ok := p.InputResponses[taskApprovalKey]; ok && t.status == messages.TaskInputRequired {
			t.answer = a
			t.status, t.message, t.updated = messages.TaskWorking, "Exporting 3 tables", now
		}
		s.reply(f.ID, true, nil)
	case "tasks/cancel":
		if t.status != messages.TaskCompleted && t.status != messages.TaskFailed {
			t.status, t.message, t.updated = messages.TaskCancelled, "Cancelled by the client", now
		}
		s.reply(f.ID, true, nil)
	}
}
