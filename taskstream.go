package conduit

import (
	"encoding/json"
	"slices"

	"github.com/conduitmcp/conduit/era"
)

// pushesTaskStatus reports whether a modern server may push task status
// on the subscriptions/listen stream: it declares the tasks extension. The
// extension has no setting that says so; the stream's acknowledgement
// does (a server that grants no taskIds, or refuses the stream, is only
// polled, at its pollIntervalMs, as every server is).
func pushesTaskStatus(caps json.RawMessage) bool {
	var cp struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	return json.Unmarshal(caps, &cp) == nil && declared(cp.Extensions[era.TasksExtension])
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
	ch := c.changes()
	ch.mu.Lock()
	ch.tasks = append(ch.tasks, taskID)
	ch.mu.Unlock()
	c.listen(s)
	return func() {
		ch.mu.Lock()
		if i := slices.Index(ch.tasks, taskID); i >= 0 {
			ch.tasks = slices.Delete(ch.tasks, i, i+1)
		}
		ch.mu.Unlock()
		c.listen(s)
	}
}
