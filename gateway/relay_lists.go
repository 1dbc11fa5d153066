//lint:file-ignore SA1019 the gateway relays logging, deprecated in 2026-07-28 (SEP-2577) but not gone: its clients and servers still use it

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// extras is what the gateway relays beside calls: resource templates,
// completions, resource subscriptions and logging.
type extras struct {
	templates map[string]exposed // by URI template

	// order serialises the subscription changes of one URI, upstream call
	// included: a last subscriber leaving and a first one coming (a modern
	// client re-opening its listen stream) must reach the server in the
	// order the gateway decided them.
	orderMu sync.Mutex
	order   map[string]*turn // by URI, while a change of it is on or waits

	mu    sync.Mutex
	subs  map[string]map[*mcp.ServerSession]bool // downstream subscribers, by URI
	owner map[string]string                      // the upstream subscribed to, by URI
	level map[*mcp.ServerSession]string          // the level each session set
	up    string                                 // the level asked of the upstreams
}

// levels in RFC 5424 order, least severe first.
var levels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

func levelRank(l string) int {
	for i, x := range levels {
		if x == l {
			return i
		}
	}
	return len(levels)
}

// serverOptions are the downstream server's options for the relays.
func (g *Gateway) serverOptions(o *mcp.ServerOptions) {
	o.Capabilities.Logging = &mcp.LoggingCapabilities{}
	o.CompletionHandler = g.complete
	o.SubscribeHandler = g.subscribe
	o.UnsubscribeHandler = g.unsubscribe
	o.RootsListChangedHandler = g.rootsChanged
}

// relayHandlers set the upstream clients' hooks for what is relayed down.
func (g *Gateway) relayHandlers(h *conduit.Handlers) {
	h.Log = g.relayLog
	h.ResourceUpdated = g.relayUpdated
}

// syncTemplates serves the upstreams' resource templates: a read of a URI
// that matches one goes to its server. Called with mu held.
func (g *Gateway) syncTemplates(ctx context.Context) {
	if g.more.templates == nil {
		g.more.templates = map[string]exposed{}
	}
	list, err := g.h.ResourceTemplates(ctx)
	if err != nil {
		g.logger.Warn("gateway: resources/templates/list failed on a server; its templates are left out", "err", err)
	}
	want := map[string][]exposed{}
	defs := map[string]*mcp.ResourceTemplate{}
	for _, t := range list {
		var mt mcp.ResourceTemplate
		if err := remarshal(t.ResourceTemplate, &mt); err != nil || mt.URITemplate == "" {
			continue
		}
		def, _ := json.Marshal(mt)
		want[mt.URITemplate] = append(want[mt.URITemplate], exposed{server: t.Server, name: mt.URITemplate, def: string(def)})
		defs[mt.URITemplate] = &mt
	}
	g.apply(g.more.templates, want, "resource template", func(ts ...string) { g.srv.RemoveResourceTemplates(ts...) }, func(t string, e exposed) error {
		return safely(func() { g.srv.AddResourceTemplate(defs[t], g.resourceHandler(e.server)) })
	})
}

// owner is the upstream server of a resource URI, or of a URI template.
func (g *Gateway) owner(uri string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.resources[uri]; ok {
		return e.server, true
	}
	if e, ok := g.more.templates[uri]; ok {
		return e.server, true
	}
	for tmpl, e := range g.more.templates {
		if matchTemplate(tmpl, uri) {
			return e.server, true
		}
	}
	return "", false
}

// complete relays completion/complete to the server of the prompt (by its
// catalog name) or of the resource template.
func (g *Gateway) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := conduit.CompleteParams{Argument: conduit.CompleteArgument{Name: req.Params.Argument.Name, Value: req.Params.Argument.Value}}
	if req.Params.Context != nil {
		p.Context = &conduit.CompleteContext{Arguments: req.Params.Context.Arguments}
	}
	var server string
	switch req.Params.Ref.Type {
	case conduit.RefPrompt:
		g.mu.Lock()
		e, ok := g.prompts[req.Params.Ref.Name]
		g.mu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no prompt %q", req.Params.Ref.Name)}
		}
		server, p.Ref = e.server, conduit.PromptRef(e.name)
	case conduit.RefResource:
		s, ok := g.owner(req.Params.Ref.URI)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no resource template %q", req.Params.Ref.URI)}
		}
		server, p.Ref = s, conduit.ResourceRef(req.Params.Ref.URI)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown reference type %q", req.Params.Ref.Type)}
	}
	release, err := g.plainTurn(ctx, server)
	if err != nil {
		return nil, downstreamError(err)
	}
	defer release()
	res, err := g.h.Complete(ctx, server, p)
	if err != nil {
		return nil, downstreamError(err)
	}
	var out mcp.CompleteResult
	if err := remarshal(res, &out); err != nil {
		return nil, downstreamError(err)
	}
	return &out, nil
}

// plainTurn takes a plain call's turn on server's gate, if it has one: a
// request of the gateway's own in flight must not make a call's input
// unattributable.
func (g *Gateway) plainTurn(ctx context.Context, server string) (func(), error) {
	return g.serial[server].plainTurn(ctx)
}

// subscribe relays resources/subscribe: the first downstream subscriber of
// a URI subscribes the gateway on the resource's server.
func (g *Gateway) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	uri := req.Params.URI
	server, ok := g.owner(uri)
	if !ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no resource %q", uri)}
	}
	m := &g.more
	defer m.inOrder(uri)()
	m.mu.Lock()
	g.pruneSubs()
	first := len(m.subs[uri]) == 0
	m.mu.Unlock()
	if first {
		release, err := g.plainTurn(ctx, server)
		if err != nil {
			return downstreamError(err)
		}
		err = g.h.SubscribeResource(ctx, server, uri)
		release()
		if err != nil {
			return downstreamError(err)
		}
	}
	m.mu.Lock()
	if m.subs == nil {
		m.subs, m.owner = map[string]map[*mcp.ServerSession]bool{}, map[string]string{}
	}
	if m.subs[uri] == nil {
		m.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	m.subs[uri][req.Session] = true
	m.owner[uri] = server
	m.mu.Unlock()
	return nil
}

// unsubscribe relays resources/unsubscribe: the last downstream subscriber
// of a URI gone, the gateway unsubscribes upstream. That is done even when
// ctx has ended: the go-sdk unsubscribes a modern client's URIs with the
// context of its ended listen stream.
func (g *Gateway) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	uri := req.Params.URI
	m := &g.more
	defer m.inOrder(uri)()
	ctx = context.WithoutCancel(ctx)
	m.mu.Lock()
	delete(m.subs[uri], req.Session)
	g.pruneSubs()
	server, had := m.owner[uri]
	last := had && len(m.subs[uri]) == 0
	if last {
		delete(m.subs, uri)
		delete(m.owner, uri)
	}
	m.mu.Unlock()
	if !last {
		return nil
	}
	release, err := g.plainTurn(ctx, server)
	if err != nil {
		return downstreamError(err)
	}
	defer release()
	if err := g.h.UnsubscribeResource(ctx, server, uri); err != nil {
		return downstreamError(err)
	}
	return nil
}

// turn is one URI's turn for subscription changes.
type turn struct {
	mu sync.Mutex
	n  int // changes on or waiting
}

// inOrder takes uri's turn for a subscription change; the function
// returned gives it back. A URI is remembered only while a change of it
// is on or waits.
func (m *extras) inOrder(uri string) func() {
	m.orderMu.Lock()
	if m.order == nil {
		m.order = map[string]*turn{}
	}
	t := m.order[uri]
	if t == nil {
		t = &turn{}
		m.order[uri] = t
	}
	t.n++
	m.orderMu.Unlock()
	t.mu.Lock()
	return func() {
		t.mu.Unlock()
		m.orderMu.Lock()
		if t.n--; t.n == 0 {
			delete(m.order, uri)
		}
		m.orderMu.Unlock()
	}
}

// changing is how many subscription changes of uri are on or waiting.
func (m *extras) changing(uri string) int {
	m.orderMu.Lock()
	defer m.orderMu.Unlock()
	if t := m.order[uri]; t != nil {
		return t.n
	}
	return 0
}

// pruneSubs forgets the subscribers whose session has ended. Called with
// more.mu held.
func (g *Gateway) pruneSubs() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range g.srv.Sessions() {
		live[ss] = true
	}
	for _, set := range g.more.subs {
		for ss := range set {
			if !live[ss] {
				delete(set, ss)
			}
		}
	}
	for ss := range g.more.level {
		if !live[ss] {
			delete(g.more.level, ss)
		}
	}
}

// relayUpdated is the upstream clients' ResourceUpdated hook: the update
// goes to the downstream sessions subscribed to the URI.
func (g *Gateway) relayUpdated(ctx context.Context, nc conduit.NotificationContext, u *conduit.ResourceUpdate) {
	g.more.mu.Lock()
	server, ok := g.more.owner[u.URI]
	g.more.mu.Unlock()
	if !ok || server != nc.ServerID {
		return // not subscribed through the gateway, or not from its owner
	}
	_ = g.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: u.URI})
}

// setLevel is a receiving middleware: after a downstream logging/setLevel,
// the upstreams are asked for the most verbose level a live session wants.
func (g *Gateway) setLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || method != "logging/setLevel" {
			return res, err
		}
		sr, ok := req.(*mcp.ServerRequest[*mcp.SetLoggingLevelParams])
		if !ok || sr.Params == nil {
			return res, err
		}
		m := &g.more
		m.mu.Lock()
		if m.level == nil {
			m.level = map[*mcp.ServerSession]string{}
		}
		m.level[sr.Session] = string(sr.Params.Level)
		g.pruneSubs()
		want := ""
		for _, l := range m.level {
			if want == "" || levelRank(l) < levelRank(want) {
				want = l
			}
		}
		change := want != m.up
		m.up = want
		m.mu.Unlock()
		if change {
			for _, st := range g.h.Status() {
				if st.State != host.StateReady {
					continue
				}
				release, err := g.plainTurn(ctx, st.Server)
				if err != nil {
					continue
				}
				if err := g.h.SetLogLevel(host.NoWait(ctx), st.Server, want); err != nil {
					g.logger.Warn("gateway: logging/setLevel failed on a server", "server", st.Server, "err", err)
				}
				release()
			}
		}
		return res, err
	}
}

// relayLog is the upstream clients' Log hook: an entry, sanitised and
// rate-limited per server by the client, goes to every legacy session,
// which drops it below the level it set, and to every modern client's
// request open on that server with a logLevel, which drops it below that
// level; its logger names the server.
func (g *Gateway) relayLog(ctx context.Context, nc conduit.NotificationContext, entry *conduit.LoggingMessage) {
	logger := nc.ServerID
	if entry.Logger != "" {
		logger += "/" + entry.Logger
	}
	p := &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(entry.Level), Logger: logger, Data: entry.Data}
	for ss := range g.srv.Sessions() {
		_ = ss.Log(ctx, p)
	}
	g.logs.send(nc.ServerID, p)
}

// matchTemplate reports whether uri is one of the URIs of the URI template
// tmpl (RFC 6570, as far as matching needs): an expression matches a
// segment ({x}) or, for reserved expansion ({+x}, {#x}), anything.
func matchTemplate(tmpl, uri string) bool {
	var re strings.Builder
	re.WriteString("^")
	for tmpl != "" {
		i := strings.IndexByte(tmpl, '{')
		if i < 0 {
			re.WriteString(regexp.QuoteMeta(tmpl))
			break
		}
		re.WriteString(regexp.QuoteMeta(tmpl[:i]))
		j := strings.IndexByte(tmpl[i:], '}')
		if j < 0 {
			return false
		}
		expr := tmpl[i+1 : i+j]
		if strings.HasPrefix(expr, "+") || strings.HasPrefix(expr, "#") {
			re.WriteString(".*")
		} else {
			re.WriteString("[^/]*")
		}
		tmpl = tmpl[i+j+1:]
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), uri)
	return err == nil && ok
}
