package conduit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/messages"
)

// Change notifications: typed hooks, list refreshing, resource
// subscriptions and (modern era) the subscriptions/listen stream.
type (
	// Subscriptions are the kinds of change a subscriptions/listen stream
	// carries: the list changes and the resources subscribed to.
	Subscriptions = messages.Subscriptions
	// ResourceUpdate is notifications/resources/updated: the resource at
	// URI changed.
	ResourceUpdate = messages.ResourceUpdate
	// ToolsChange, PromptsChange and ResourcesChange are what the
	// list-changed hooks receive (messages.ListChange): with
	// Handlers.RefreshLists the fresh list (Items, Refreshed, or Err) and
	// how many notifications it covers.
	ToolsChange     = messages.ToolsChange
	PromptsChange   = messages.PromptsChange
	ResourcesChange = messages.ResourcesChange
)

// DefaultRefreshDelay is how long the list-changed notifications of one
// kind must stop before the list is refreshed (Handlers.RefreshLists).
const DefaultRefreshDelay = messages.DefaultRefreshDelay

// ToolsChangedHandler receives notifications/tools/list_changed
// (Handlers.ToolsChanged). In the modern era implementing it makes the
// client listen for the change (subscriptions/listen).
type ToolsChangedHandler interface {
	HandleToolsChanged(ctx context.Context, nc NotificationContext, c *ToolsChange)
}

// PromptsChangedHandler receives notifications/prompts/list_changed
// (Handlers.PromptsChanged).
type PromptsChangedHandler interface {
	HandlePromptsChanged(ctx context.Context, nc NotificationContext, c *PromptsChange)
}

// ResourcesChangedHandler receives notifications/resources/list_changed
// (Handlers.ResourcesChanged).
type ResourcesChangedHandler interface {
	HandleResourcesChanged(ctx context.Context, nc NotificationContext, c *ResourcesChange)
}

// ResourceUpdatedHandler receives notifications/resources/updated for the
// resources subscribed to (Handlers.ResourceUpdated, Client.Subscribe).
type ResourceUpdatedHandler interface {
	HandleResourceUpdated(ctx context.Context, nc NotificationContext, u *ResourceUpdate)
}

// ListRefresher is implemented by a handler whose list-changed hooks want
// the fresh list (Handlers.RefreshLists) once the notifications have
// stopped for RefreshDelay (0: DefaultRefreshDelay).
type ListRefresher interface {
	RefreshDelay() time.Duration
}

// changeHooksOf sets h's change hooks from v's methods.
func changeHooksOf(v any, h *Handlers) {
	if x, ok := v.(ToolsChangedHandler); ok {
		h.ToolsChanged = x.HandleToolsChanged
	}
	if x, ok := v.(PromptsChangedHandler); ok {
		h.PromptsChanged = x.HandlePromptsChanged
	}
	if x, ok := v.(ResourcesChangedHandler); ok {
		h.ResourcesChanged = x.HandleResourcesChanged
	}
	if x, ok := v.(ResourceUpdatedHandler); ok {
		h.ResourceUpdated = x.HandleResourceUpdated
	}
	if x, ok := v.(ListRefresher); ok {
		h.RefreshLists, h.RefreshDelay = true, x.RefreshDelay()
	}
}

// hasChangeHooks reports whether any change hook of h is set.
func hasChangeHooks(h *Handlers) bool {
	return h.ToolsChanged != nil || h.PromptsChanged != nil || h.ResourcesChanged != nil || h.ResourceUpdated != nil || h.RefreshLists
}

// changes is a client's state for change notifications: the resources
// subscribed to, and the refresh of each list.
type changes struct {
	mu        sync.Mutex
	resources []string // subscribed, in order
	tasks     []string // awaited with their status pushed on the stream (taskstream.go)
	refresh   []*refresher
	cache     listCache // the cacheable list results (cache.go)
}

// changes returns the client's change state, made by the first caller
// that needs it: an idle client without hooks, subscriptions, awaited
// tasks or a cacheable list holds none (decision 74).
func (c *Client) changes() *changes {
	if ch := c.ch.Load(); ch != nil {
		return ch
	}
	c.ch.CompareAndSwap(nil, new(changes))
	return c.ch.Load()
}

// listChanged is the runtime's OnChange: a list change drops the cached
// results it makes stale. Without change state no list call has begun, so
// there is nothing to drop and no generation to move.
func (c *Client) listChanged(method string) {
	if ch := c.ch.Load(); ch != nil {
		ch.cache.changed(method)
	}
}

// refresher debounces one kind's list-changed notifications: each arms
// (or re-arms) its timer; when it fires the client lists the kind on the
// notification mailbox and calls the hook once with the list.
type refresher struct {
	c     *Client
	delay time.Duration
	run   func(ctx context.Context, nc NotificationContext, n int)

	mu     sync.Mutex
	timer  *time.Timer
	n      int // notifications since the last refresh
	closed bool
}

func (r *refresher) notified() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.n++
	if r.timer == nil {
		r.timer = time.AfterFunc(r.delay, r.fire)
		return
	}
	r.timer.Reset(r.delay)
}

// fire queues the refresh on the mailbox of the session current now.
func (r *refresher) fire() {
	r.c.sess().rt.Post(func(ctx context.Context, nc NotificationContext) {
		r.mu.Lock()
		n := r.n
		r.n = 0
		r.mu.Unlock()
		if n > 0 {
			r.run(ctx, nc, n)
		}
	})
}

func (r *refresher) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
}

// withRefresh returns h with each list-changed hook wrapped to refresh
// its list (h.RefreshLists), debounced.
func (c *Client) withRefresh(h Handlers) Handlers {
	if !h.RefreshLists {
		return h
	}
	delay := h.RefreshDelay
	if delay <= 0 {
		delay = DefaultRefreshDelay
	}
	newRefresher := func(run func(ctx context.Context, nc NotificationContext, n int)) *refresher {
		r := &refresher{c: c, delay: delay, run: run}
		ch := c.changes()
		ch.refresh = append(ch.refresh, r)
		return r
	}
	if hook := h.ToolsChanged; hook != nil {
		r := newRefresher(func(ctx context.Context, nc NotificationContext, n int) {
			items, err := c.ListTools(ctx)
			hook(ctx, nc, refreshed(items, err, n))
		})
		h.ToolsChanged = func(context.Context, NotificationContext, *ToolsChange) { r.notified() }
	}
	if hook := h.PromptsChanged; hook != nil {
		r := newRefresher(func(ctx context.Context, nc NotificationContext, n int) {
			items, err := c.ListPrompts(ctx)
			hook(ctx, nc, refreshed(items, err, n))
		})
		h.PromptsChanged = func(context.Context, NotificationContext, *PromptsChange) { r.notified() }
	}
	if hook := h.ResourcesChanged; hook != nil {
		r := newRefresher(func(ctx context.Context, nc NotificationContext, n int) {
			items, err := c.ListResources(ctx)
			hook(ctx, nc, refreshed(items, err, n))
		})
		h.ResourcesChanged = func(context.Context, NotificationContext, *ResourcesChange) { r.notified() }
	}
	return h
}

func refreshed[T any](items []T, err error, n int) *messages.ListChange[T] {
	if err != nil {
		return &messages.ListChange[T]{Err: err, Notifications: n}
	}
	return &messages.ListChange[T]{Items: items, Refreshed: true, Notifications: n}
}

// stopRefresh stops the refresh timers (Close).
func (c *Client) stopRefresh() {
	if ch := c.ch.Load(); ch != nil {
		for _, r := range ch.refresh {
			r.stop()
		}
	}
}

// offered reads what a modern server's capabilities say may change.
func offered(caps json.RawMessage) messages.Subscriptions {
	var cp struct {
		Tools     *struct{ ListChanged bool } `json:"tools"`
		Prompts   *struct{ ListChanged bool } `json:"prompts"`
		Resources *struct {
			ListChanged bool
			Subscribe   bool
		} `json:"resources"`
	}
	var s messages.Subscriptions
	if json.Unmarshal(caps, &cp) != nil {
		return s
	}
	if pushesTaskStatus(caps) {
		s.TaskIDs = []string{}
	}
	s.ToolsListChanged = cp.Tools != nil && cp.Tools.ListChanged
	s.PromptsListChanged = cp.Prompts != nil && cp.Prompts.ListChanged
	if cp.Resources != nil {
		s.ResourcesListChanged = cp.Resources.ListChanged
		if cp.Resources.Subscribe {
			s.ResourceSubscriptions = []string{}
		}
	}
	return s
}

// wanted is what the client's hooks and subscriptions ask for.
func (c *Client) wanted(s *session) messages.Subscriptions {
	w := s.rt.Handlers().Changes()
	if ch := c.ch.Load(); ch != nil {
		ch.mu.Lock()
		w.ResourceSubscriptions = slices.Clone(ch.resources)
		w.TaskIDs = slices.Clone(ch.tasks)
		ch.mu.Unlock()
	}
	return w
}

// listen asks a modern session's listen stream for what the client
// wants; the channel gets its outcome.
func (c *Client) listen(s *session) <-chan actors.ListenResult {
	version := s.rt.Version()
	cfg := actors.Listen{
		Meta:    func() ([]era.Member, error) { return c.meta(version, nil) },
		Offered: offered(s.init.Capabilities),
		Timeout: c.opts.Timeout,
	}
	return s.rt.Listen(cfg, c.wanted(s))
}

// startListening opens the listen stream of a fresh modern session when
// a change hook is set, and waits for its acknowledgement (bounded by ctx
// and Options.Timeout): a change right after Connect is not missed. A
// server that does not acknowledge does not fail Connect: it is logged,
// and Listening reports it.
func (c *Client) startListening(ctx context.Context, s *session) {
	if s.rt.Era() != EraModern || c.wanted(s).Empty() {
		return
	}
	select {
	case <-c.listen(s):
	case <-ctx.Done():
	}
}

// Listening reports the change notifications the server acknowledged on
// the client's subscriptions/listen stream (modern era), and whether the
// stream is open: the kinds of the change hooks set that the server
// offers, and the resources subscribed to. In the legacy era there is no
// stream: it reports false.
func (c *Client) Listening() (Subscriptions, bool) {
	acked, open, _ := c.sess().rt.Listening()
	return acked, open
}

// Subscribe asks the server for notifications/resources/updated when the
// resource at uri changes; they reach Handlers.ResourceUpdated (or else
// Notification). In the legacy era it sends resources/subscribe; in the
// modern era it re-opens the client's subscriptions/listen stream with uri
// added, and returns once the server acknowledged it (KindProtocol when
// the server acknowledged the stream without uri, KindUsage when it does
// not offer resources.subscribe).
func (c *Client) Subscribe(ctx context.Context, uri string, opts ...CallOption) error {
	return c.subscription(ctx, messages.MethodSubscribe, uri, opts)
}

// Unsubscribe ends a subscription of Subscribe: resources/unsubscribe in
// the legacy era, the listen stream re-opened without uri in the modern
// one.
func (c *Client) Unsubscribe(ctx context.Context, uri string, opts ...CallOption) error {
	return c.subscription(ctx, messages.MethodUnsubscribe, uri, opts)
}

func (c *Client) subscription(ctx context.Context, method, uri string, opts []CallOption) error {
	if uri == "" {
		return &Error{Kind: KindUsage, Method: method, Message: "no uri"}
	}
	subscribe := method == messages.MethodSubscribe
	change := func() (undo func()) {
		ch := c.changes()
		ch.mu.Lock()
		defer ch.mu.Unlock()
		before := slices.Clone(ch.resources)
		i := slices.Index(ch.resources, uri)
		switch {
		case subscribe && i < 0:
			ch.resources = append(ch.resources, uri)
		case !subscribe && i >= 0:
			ch.resources = slices.Delete(ch.resources, i, i+1)
		}
		return func() {
			ch.mu.Lock()
			ch.resources = before
			ch.mu.Unlock()
		}
	}
	s := c.sess()
	if s.rt.Era() != EraModern {
		if err := c.Call(ctx, method, messages.SubscribeParams{URI: uri}, nil, opts...); err != nil {
			return err
		}
		change()
		return nil
	}
	if subscribe && offered(s.init.Capabilities).ResourceSubscriptions == nil {
		return &Error{Kind: KindUsage, Method: method, Message: "the server does not offer resource subscriptions (resources.subscribe)"}
	}
	undo := change()
	o := c.callOptions(opts)
	timer := time.NewTimer(o.timeout)
	defer timer.Stop()
	select {
	case r := <-c.listen(s):
		switch {
		case r.Err != nil:
			return r.Err
		case subscribe && !slices.Contains(r.Acked.ResourceSubscriptions, uri):
			undo()
			return &Error{Kind: KindProtocol, Method: messages.MethodListen, Message: fmt.Sprintf("the server did not acknowledge the subscription to %s", uri)}
		}
		return nil
	case <-ctx.Done():
		return messages.ContextEnded(ctx, method)
	case <-timer.C:
		return &Error{Kind: KindTimeout, Method: messages.MethodListen, Message: fmt.Sprintf("the listen stream was not acknowledged within %s", o.timeout)}
	}
}

// restoreSubscriptions subscribes a renewed legacy session to the
// resources the lost one was subscribed to. A failure is logged.
func (c *Client) restoreSubscriptions(ctx context.Context, s *session) {
	var uris []string
	if ch := c.ch.Load(); ch != nil {
		ch.mu.Lock()
		uris = slices.Clone(ch.resources)
		ch.mu.Unlock()
	}
	for _, uri := range uris {
		p, err := encodeParams(messages.MethodSubscribe, messages.SubscribeParams{URI: uri})
		if err == nil {
			_, err = c.callOn(ctx, s, messages.MethodSubscribe, p, callOptions{timeout: c.opts.Timeout, maxTotal: c.opts.MaxTotalTimeout})
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			c.opts.Logger.Warn("the renewed session did not take a resource subscription", "uri", uri, "err", err)
		}
	}
}
