package messages

import (
	"slices"
	"time"
)

// Change notifications: the list-changed and resource-updated
// notifications, resource subscriptions (legacy), and the
// subscriptions/listen stream that carries them in the modern era.
const (
	MethodToolsListChanged     = "notifications/tools/list_changed"
	MethodPromptsListChanged   = "notifications/prompts/list_changed"
	MethodResourcesListChanged = "notifications/resources/list_changed"
	MethodResourceUpdated      = "notifications/resources/updated"
	MethodSubscribe            = "resources/subscribe"
	MethodUnsubscribe          = "resources/unsubscribe"
	MethodListen               = "subscriptions/listen"
	MethodListenAcknowledged   = "notifications/subscriptions/acknowledged"
	// MethodTasks is a task's status pushed on a subscriptions/listen
	// stream that asked for its id (2026-07-28 tasks extension; the
	// renamed notifications/tasks/status).
	MethodTasks = "notifications/tasks"
	// MetaSubscriptionID is the _meta key that ties a notification to the
	// subscriptions/listen request (its JSON-RPC id) whose stream carries
	// it.
	MetaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// Subscriptions are the kinds of change a subscriptions/listen stream
// carries (its params' "notifications", and the acknowledged subset).
type Subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs are the tasks whose status the stream pushes
	// (notifications/tasks; tasks extension).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// Empty reports whether s asks for nothing.
func (s Subscriptions) Empty() bool {
	return !s.ToolsListChanged && !s.PromptsListChanged && !s.ResourcesListChanged && len(s.ResourceSubscriptions) == 0 && len(s.TaskIDs) == 0
}

// Allows reports whether s lets a notification of method (and, for
// notifications/resources/updated, of uri; for notifications/tasks, of
// the task id uri) through.
func (s Subscriptions) Allows(method, uri string) bool {
	switch method {
	case MethodToolsListChanged:
		return s.ToolsListChanged
	case MethodPromptsListChanged:
		return s.PromptsListChanged
	case MethodResourcesListChanged:
		return s.ResourcesListChanged
	case MethodResourceUpdated:
		for _, u := range s.ResourceSubscriptions {
			if u == uri {
				return true
			}
		}
	case MethodTasks:
		return slices.Contains(s.TaskIDs, uri)
	}
	return false
}

// Within returns what of s the acknowledgement ack also names: a server
// cannot grant more than was asked.
func (s Subscriptions) Within(ack Subscriptions) Subscriptions {
	out := Subscriptions{
		ToolsListChanged:     s.ToolsListChanged && ack.ToolsListChanged,
		PromptsListChanged:   s.PromptsListChanged && ack.PromptsListChanged,
		ResourcesListChanged: s.ResourcesListChanged && ack.ResourcesListChanged,
	}
	for _, u := range ack.ResourceSubscriptions {
		if s.Allows(MethodResourceUpdated, u) && !out.Allows(MethodResourceUpdated, u) {
			out.ResourceSubscriptions = append(out.ResourceSubscriptions, u)
		}
	}
	for _, id := range ack.TaskIDs {
		if s.Allows(MethodTasks, id) && !out.Allows(MethodTasks, id) {
			out.TaskIDs = append(out.TaskIDs, id)
		}
	}
	return out
}

// Subscribable reports whether method is a change notification that a
// modern server may send only on a subscriptions/listen stream.
func Subscribable(method string) bool {
	switch method {
	case MethodToolsListChanged, MethodPromptsListChanged, MethodResourcesListChanged, MethodResourceUpdated, MethodTasks:
		return true
	}
	return false
}

// SubscribeParams are the params of resources/subscribe and
// resources/unsubscribe (legacy).
type SubscribeParams struct {
	URI string `json:"uri"`
}

// ResourceUpdate is notifications/resources/updated: the resource at URI
// changed (read it again to see how). Title is sent by some servers.
type ResourceUpdate struct {
	URI   string `json:"uri"`
	Title string `json:"title,omitempty"`
}

// ListChange is what a list-changed hook receives: the server said its
// list of tools (prompts, resources) changed. With list refreshing on
// (Handlers.RefreshLists) the hook runs once the notifications have
// stopped for the refresh delay, with the fresh list (or the error that
// listing it met) and how many notifications it covers; without, once per
// notification, with Notifications 1 and no list.
type ListChange[T any] struct {
	// Items is the fresh list when Refreshed.
	Items     []T
	Refreshed bool
	// Err is why the list could not be refreshed (Refreshed is false).
	Err error
	// Notifications is how many notifications this call covers.
	Notifications int
}

// ToolsChange, PromptsChange and ResourcesChange are the list changes
// the typed hooks receive.
type (
	ToolsChange     = ListChange[Tool]
	PromptsChange   = ListChange[Prompt]
	ResourcesChange = ListChange[Resource]
)

// DefaultRefreshDelay is how long the notifications of one kind must
// stop before the list is refreshed (Handlers.RefreshLists).
const DefaultRefreshDelay = 250 * time.Millisecond
