package actors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// answerList answers a paginated list call in the background: pages[i]
// is the result of the i-th request; it returns the cursors each request
// carried.
func answerList(t *testing.T, srv *fakeServer, method string, pages []map[string]any) []any {
	t.Helper()
	var cursors []any
	for _, p := range pages {
		m := srv.next()
		require.Equal(t, method, m["method"], "frame: %v", m)
		params, _ := m["params"].(map[string]any)
		cursors = append(cursors, params["cursor"])
		srv.reply(m["id"], p)
	}
	return cursors
}

// asyncErr runs fn in the background.
func asyncErr(fn func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- fn() }()
	return ch
}

func requireKindMsg(t *testing.T, err error, kind conduit.Kind, msg string) {
	t.Helper()
	var ce *conduit.Error
	require.True(t, errors.As(err, &ce), "error %v", err)
	assert.Equal(t, kind, ce.Kind, "error %v", err)
	// msg is the message, or the method and the message.
	assert.True(t, strings.HasSuffix(ce.Method+": "+ce.Message, msg), "error %q, want %q", ce.Method+": "+ce.Message, msg)
}

func TestListPageCarriesTheCursorAndMeta(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		ch := make(chan *conduit.Page[conduit.Resource], 1)
		go func() {
			p, err := c.ListResourcesPage(context.Background(), "c-2")
			assert.NoError(t, err)
			ch <- p
		}()
		cursors := answerList(t, srv, "resources/list", []map[string]any{
			{"resources": []any{map[string]any{"uri": "file:///a", "name": "a", "_meta": map[string]any{"i": 1}}}, "nextCursor": "c-3", "_meta": map[string]any{"k": "v"}},
		})
		p := <-ch
		assert.Equal(t, []any{"c-2"}, cursors)
		require.Len(t, p.Items, 1)
		assert.Equal(t, "file:///a", p.Items[0].URI)
		assert.JSONEq(t, `{"i":1}`, string(p.Items[0].Meta), "the item's own _meta")
		assert.Equal(t, "c-3", p.NextCursor)
		assert.JSONEq(t, `{"k":"v"}`, string(p.Meta))
	})
}

func TestIteratorFetchesPagesOnlyAsTheLoopReachesThem(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		done := asyncErr(func() error {
			var names []string
			for p, err := range c.Prompts(context.Background()) {
				if err != nil {
					return err
				}
				names = append(names, p.Name)
				if len(names) == 3 {
					break
				}
			}
			assert.Equal(t, []string{"a", "b", "c"}, names)
			return nil
		})
		cursors := answerList(t, srv, "prompts/list", []map[string]any{
			{"prompts": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}}, "nextCursor": "2"},
			{"prompts": []any{map[string]any{"name": "c"}, map[string]any{"name": "d"}}, "nextCursor": "3"},
		})
		require.NoError(t, <-done)
		assert.Equal(t, []any{nil, "2"}, cursors)
		// The third page was never asked for: the next frame is this ping.
		go func() { _ = c.Ping(context.Background()) }()
		m := srv.next()
		assert.Contains(t, []any{"ping", "server/discover"}, m["method"])
		srv.reply(m["id"], map[string]any{})
	})
}

func TestRepeatedCursorIsAProtocolError(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		done := asyncErr(func() error { _, err := c.ListTools(context.Background()); return err })
		page := func(name, next string) map[string]any {
			return map[string]any{"tools": []any{map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}}, "nextCursor": next}
		}
		cursors := answerList(t, srv, "tools/list", []map[string]any{page("a", "x"), page("b", "y"), page("c", "x")})
		assert.Equal(t, []any{nil, "x", "y"}, cursors)
		requireKindMsg(t, <-done, conduit.KindProtocol, `tools/list: the server repeated cursor "x"`)
	})
}

func TestEndlessCursorsStopAfterMaxPages(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		done := asyncErr(func() error {
			n := 0
			for _, err := range c.ResourceTemplates(context.Background()) {
				if err != nil {
					assert.Equal(t, 1000, n)
					return err
				}
				n++
			}
			return nil
		})
		pages := make([]map[string]any, 1000)
		for i := range pages {
			pages[i] = map[string]any{"resourceTemplates": []any{map[string]any{"uriTemplate": "file:///{x}", "name": "x"}}, "nextCursor": fmt.Sprint(i + 1)}
		}
		answerList(t, srv, "resources/templates/list", pages)
		requireKindMsg(t, <-done, conduit.KindProtocol, "more than 1000 pages")
	})
}

func TestWithMetaIsSentBesideConduitsOwn(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		done := asyncErr(func() error {
			_, err := c.GetPrompt(context.Background(), "p", nil, conduit.WithMeta(map[string]any{"com.example/trace": "t-1", "n": 2}), conduit.WithProgressToken("p-1"))
			return err
		})
		m := srv.next()
		require.Equal(t, "prompts/get", m["method"])
		mt := meta(t, m)
		assert.Equal(t, "t-1", mt["com.example/trace"])
		assert.EqualValues(t, 2, mt["n"])
		assert.Equal(t, "p-1", mt["progressToken"])
		if e.era == conduit.EraModern {
			assert.Equal(t, "2026-07-28", mt["io.modelcontextprotocol/protocolVersion"])
		} else {
			assert.Len(t, mt, 3)
		}
		srv.reply(m["id"], map[string]any{"messages": []any{}, "_meta": map[string]any{"k": "prompt"}})
		require.NoError(t, <-done)
	})
}

func TestWithMetaRefusesConduitsKeys(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		for _, key := range []string{"progressToken", "io.modelcontextprotocol/logLevel", "dev.mcp/x"} {
			_, err := c.ListTools(context.Background(), conduit.WithMeta(map[string]any{key: "x"}))
			requireKindMsg(t, err, conduit.KindUsage, fmt.Sprintf("tools/list: WithMeta: _meta key %q is Conduit's (set by the protocol, or WithProgressToken)", key))
		}
		_, err := c.ListTools(context.Background(), conduit.WithMeta(map[string]any{"f": func() {}}))
		requireKindMsg(t, err, conduit.KindUsage, `WithMeta: _meta "f" could not be encoded`)
		// Nothing was sent: the next frame is this ping.
		go func() { _ = c.Ping(context.Background()) }()
		m := srv.next()
		assert.Contains(t, []any{"ping", "server/discover"}, m["method"])
		srv.reply(m["id"], map[string]any{})
	})
}

func TestResultsKeepTheirMeta(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		type got struct {
			read   *conduit.ReadResourceResult
			prompt *conduit.GetPromptResult
			comp   *conduit.CompleteResult
		}
		ch := make(chan got, 1)
		go func() {
			var g got
			var err error
			g.read, err = c.ReadResource(context.Background(), "file:///a")
			assert.NoError(t, err)
			g.prompt, err = c.GetPrompt(context.Background(), "p", nil)
			assert.NoError(t, err)
			g.comp, err = c.Complete(context.Background(), conduit.CompleteParams{Ref: conduit.PromptRef("p"), Argument: conduit.CompleteArgument{Name: "a", Value: "x"}})
			assert.NoError(t, err)
			ch <- g
		}()
		for _, r := range []map[string]any{
			{"contents": []any{}, "_meta": map[string]any{"k": "read"}},
			{"messages": []any{}, "_meta": map[string]any{"k": "prompt"}},
			{"completion": map[string]any{"values": []any{"xa"}, "total": 9, "hasMore": true}, "_meta": map[string]any{"k": "complete"}},
		} {
			m := srv.next()
			srv.reply(m["id"], r)
		}
		g := <-ch
		assert.JSONEq(t, `{"k":"read"}`, string(g.read.Meta))
		assert.JSONEq(t, `{"k":"prompt"}`, string(g.prompt.Meta))
		assert.JSONEq(t, `{"k":"complete"}`, string(g.comp.Meta))
		assert.Equal(t, []string{"xa"}, g.comp.Completion.Values)
		require.NotNil(t, g.comp.Completion.Total)
		assert.Equal(t, 9, *g.comp.Completion.Total)
		assert.True(t, g.comp.Completion.HasMore)
	})
}

func TestCompleteRefusesWhatCannotBeSent(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		arg := conduit.CompleteArgument{Name: "a", Value: "x"}
		for _, tc := range []struct {
			p    conduit.CompleteParams
			want string
		}{
			{conduit.CompleteParams{Ref: conduit.CompleteReference{Type: "ref/tool", Name: "t"}, Argument: arg}, `the reference type must be "ref/prompt" or "ref/resource", not "ref/tool"`},
			{conduit.CompleteParams{Ref: conduit.PromptRef(""), Argument: arg}, "a ref/prompt reference needs the prompt's name"},
			{conduit.CompleteParams{Ref: conduit.CompleteReference{Type: conduit.RefPrompt, Name: "p", URI: "u"}, Argument: arg}, "a ref/prompt reference has a name, not a URI"},
			{conduit.CompleteParams{Ref: conduit.ResourceRef(""), Argument: arg}, "a ref/resource reference needs the template's URI"},
			{conduit.CompleteParams{Ref: conduit.CompleteReference{Type: conduit.RefResource, Name: "n", URI: "u"}, Argument: arg}, "a ref/resource reference has a URI, not a name"},
			{conduit.CompleteParams{Ref: conduit.PromptRef("p")}, "the argument to complete needs a name"},
		} {
			_, err := c.Complete(context.Background(), tc.p)
			requireKindMsg(t, err, conduit.KindUsage, "completion/complete: "+tc.want)
		}
		go func() { _ = c.Ping(context.Background()) }()
		m := srv.next()
		assert.Contains(t, []any{"ping", "server/discover"}, m["method"])
		srv.reply(m["id"], map[string]any{})
	})
}

func TestListTasks(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{Tasks: true})
		if e.era == conduit.EraModern {
			_, err := c.ListTasks(context.Background())
			requireKindMsg(t, err, conduit.KindUsage, "tasks/list: tasks/list is a 2025-11-25 method; this connection speaks 2026-07-28")
			return
		}
		ch := make(chan []conduit.Task, 1)
		go func() {
			tasks, err := c.ListTasks(context.Background())
			assert.NoError(t, err)
			ch <- tasks
		}()
		cursors := answerList(t, srv, "tasks/list", []map[string]any{
			{"tasks": []any{map[string]any{"taskId": "t1", "status": "working", "ttl": 60000, "pollInterval": 500}}, "nextCursor": "n"},
			{"tasks": []any{map[string]any{"taskId": "t2", "status": "completed", "ttl": nil}}},
		})
		tasks := <-ch
		assert.Equal(t, []any{nil, "n"}, cursors)
		require.Len(t, tasks, 2)
		assert.Equal(t, "t1", tasks[0].TaskID)
		require.NotNil(t, tasks[0].TTLMs)
		assert.EqualValues(t, 60000, *tasks[0].TTLMs)
		assert.EqualValues(t, 500, *tasks[0].PollIntervalMs)
		assert.Equal(t, conduit.TaskCompleted, tasks[1].Status)
		assert.Nil(t, tasks[1].TTLMs)
	})
}

func TestListTasksRefusedOn20250618(t *testing.T) {
	c, _ := connect(t, conduit.Options{}, "2025-06-18")
	_, err := c.ListTasks(context.Background())
	requireKindMsg(t, err, conduit.KindUsage, "tasks/list is a 2025-11-25 method; this connection speaks 2025-06-18")
}

func TestMalformedListAndCompleteResultsAreProtocolErrors(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		c, srv := e.connect(t, conduit.Options{})
		for _, tc := range []struct {
			method string
			call   func() error
			result map[string]any
		}{
			{"resources/templates/list", func() error { _, err := c.ListResourceTemplates(context.Background()); return err }, map[string]any{"resourceTemplates": "nope"}},
			{"resources/templates/list", func() error { _, err := c.ListResourceTemplatesPage(context.Background(), ""); return err }, map[string]any{"nextCursor": 7}},
			{"completion/complete", func() error {
				_, err := c.Complete(context.Background(), conduit.CompleteParams{Ref: conduit.PromptRef("p"), Argument: conduit.CompleteArgument{Name: "a"}})
				return err
			}, map[string]any{"completion": map[string]any{"values": "x"}}},
		} {
			done := asyncErr(tc.call)
			m := srv.next()
			require.Equal(t, tc.method, m["method"])
			srv.reply(m["id"], tc.result)
			requireKindMsg(t, <-done, conduit.KindProtocol, tc.method+": malformed result")
		}
		// A completion without values is an empty list, not nil.
		ch := make(chan *conduit.CompleteResult, 1)
		go func() {
			r, err := c.Complete(context.Background(), conduit.CompleteParams{Ref: conduit.ResourceRef("file:///{x}"), Argument: conduit.CompleteArgument{Name: "x"}})
			assert.NoError(t, err)
			ch <- r
		}()
		m := srv.next()
		params := m["params"].(map[string]any)
		assert.Equal(t, map[string]any{"type": "ref/resource", "uri": "file:///{x}"}, params["ref"])
		assert.Equal(t, map[string]any{"name": "x", "value": ""}, params["argument"])
		assert.NotContains(t, params, "context")
		srv.reply(m["id"], map[string]any{"completion": map[string]any{}})
		r := <-ch
		assert.Equal(t, []string{}, r.Completion.Values)
		assert.Nil(t, r.Completion.Total)
	})
}

// A 2024-11-05 server's tools lose their outputSchema on a page too, as in
// ListTools: the revision has no structured output.
func TestListToolsPageDropsAnOlderRevisionsOutputSchema(t *testing.T) {
	c, srv := connect(t, conduit.Options{}, "2024-11-05")
	ch := make(chan *conduit.Page[conduit.Tool], 1)
	go func() {
		p, err := c.ListToolsPage(context.Background(), "")
		assert.NoError(t, err)
		ch <- p
	}()
	answerList(t, srv, "tools/list", []map[string]any{{"tools": []any{map[string]any{"name": "a", "inputSchema": map[string]any{"type": "object"}, "outputSchema": map[string]any{"type": "object"}}}}})
	p := <-ch
	require.Len(t, p.Items, 1)
	assert.Nil(t, p.Items[0].OutputSchema)
}
