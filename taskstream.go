package conduit

import (
	"encoding/json"
	"slices"

	"github.com/conduitmcp/conduit/era"
)

// pushesTaskStatus reports whether a modern server's capabilities offer
// task status on the subscriptions/listen stream: the tasks extension's
// settings say "taskIds": true. The extension defines no settings yet, so
// this is Conduit's reading (docs/protocol.md); a server without it is
// polled at its pollIntervalMs, and is never sent a listen request for
// tasks.
func pushesTaskStatus(caps json.RawMessage) bool {
	var cp struct {
		Extensions map[string]struct {
			TaskIDs bool `json:"taskIds"`
		} `json:"extensions"`
	}
	return json.Unmarshal(caps, &cp) == nil && cp.Extensions[era.TasksExtension].TaskIDs
}

// streamTask adds taskID to the client's listen stream, re-opening it with
// the new set as Subscribe does, when the server pushes task status on
// it; the returned function takes it out again. The await loop does not
// wait for the acknowledgement: it polls at once and at its interval
// anyway, and a pushed notifications/tasks only wakes it early (the
// status is always read with tasks/get, one code path either way).
func (c *Client) streamTask(s *session, taskID string) func() {
	if !pushesTaskStatus(s.init.Capabilities) {
		return func() {}
	}
	c.changes.mu.Lock()
	c.changes.tasks = append(c.changes.tasks, taskID)
	c.changes.mu.Unlock()
	c.listen(s)
	return func() {
		c.changes.mu.Lock()
		if i := slices.Index(c.changes.tasks, taskID); i >= 0 {
			c.changes.tasks = slices.Delete(c.changes.tasks, i, i+1)
		}
		c.changes.mu.Unlock()
		c.listen(s)
	}
}
