package conduit

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/conduitmcp/conduit/messages"
)

// ListTasksPage lists one page of the server's tasks (tasks/list, cursor ""
// for the first). tasks/list is 2025-11-25 only: in the modern era, whose
// tasks extension has no such method, and in 2025-06-18, it is refused with
// KindUsage before anything is sent. A 2025-11-25 server that does not
// offer it answers -32601 (KindRPC).
func (c *Client) ListTasksPage(ctx context.Context, cursor string, opts ...CallOption) (*Page[Task], error) {
	if c.Era() != EraLegacy || c.ProtocolVersion() != messages.Version20251125 {
		return nil, &Error{Kind: KindUsage, Method: messages.MethodListTasks,
			Message: "tasks/list is a 2025-11-25 method; this connection speaks " + c.ProtocolVersion()}
	}
	return listPage(ctx, c, messages.MethodListTasks, cursor, opts, func(r *listTasksResult) ([]Task, string, json.RawMessage) {
		tasks := make([]Task, len(r.Tasks))
		for i, t := range r.Tasks {
			tasks[i] = *t.task()
		}
		return tasks, r.NextCursor, r.Meta
	})
}

// listTasksResult is a tasks/list answer on the wire (2025-11-25 tasks).
type listTasksResult struct {
	Tasks      []legacyTask    `json:"tasks"`
	NextCursor string          `json:"nextCursor,omitempty"`
	Meta       json.RawMessage `json:"_meta,omitempty"`
}

// Tasks iterates over the server's tasks, fetching pages lazily (see
// ListTasksPage for the eras that have tasks/list).
func (c *Client) Tasks(ctx context.Context, opts ...CallOption) iter.Seq2[Task, error] {
	return items(c.taskPages(ctx, opts))
}

func (c *Client) taskPages(ctx context.Context, opts []CallOption) iter.Seq2[*Page[Task], error] {
	return pages(messages.MethodListTasks, func(cursor string) (*Page[Task], error) { return c.ListTasksPage(ctx, cursor, opts...) })
}

// ListTasks lists every task the server holds for this client (tasks/list,
// 2025-11-25 only; see ListTasksPage), following pagination. Their ttl and
// pollInterval are read into TTLMs and PollIntervalMs.
func (c *Client) ListTasks(ctx context.Context, opts ...CallOption) ([]Task, error) {
	return gather(c.taskPages(ctx, opts))
}
