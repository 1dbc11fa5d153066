package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// taskServerCaps are the capabilities of a 2025-11-25 server that takes
// task-augmented tools/call.
var taskServerCaps = map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}

// taskTools is what the fake lists: one tool per taskSupport.
var taskTools = map[string]any{"tools": []any{
	map[string]any{"name": "research", "inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "required"}},
	map[string]any{"name": "maybe", "inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "optional"}},
	map[string]any{"name": "plain", "inputSchema": map[string]any{"type": "object"}},
}}

// connectTasks connects a client with opts to a fake 2025-11-25 server
// whose capabilities are caps, and returns the initialize request too.
func connectTasks(t *testing.T, opts conduit.Options, caps map[string]any) (*conduit.Client, *fakeServer, map[string]any) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	srv := newFakeServer(t, serverSide)
	ch := make(chan *conduit.Client, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
		assert.NoError(t, err)
		ch <- c
	}()
	srv.refuseDiscover()
	init := srv.next()
	require.Equal(t, "initialize", init["method"])
	srv.reply(init["id"], map[string]any{"protocolVersion": "2025-11-25", "capabilities": caps, "serverInfo": map[string]any{"name": "fake", "version": "1"}})
	require.Equal(t, "notifications/initialized", srv.next()["method"])
	c := <-ch
	t.Cleanup(func() {
		_ = c.Close()
		_ = serverSide.Close()
		for range srv.in {
		}
	})
	return c, srv, init
}

// startTask expects the tools/list (answered with taskTools) and the
// task-augmented tools/call of a required tool, answers it with a task
// polled every pollMs, and returns the tools/call request.
func startTask(t *testing.T, srv *fakeServer, taskID string, pollMs int) map[string]any {
	t.Helper()
	list := srv.next()
	require.Equal(t, "tools/list", list["method"])
	srv.reply(list["id"], taskTools)
	call := srv.next()
	require.Equal(t, "tools/call", call["method"])
	require.Contains(t, call["params"], "task", "a required tool's call is task-augmented")
	srv.reply(call["id"], map[string]any{"task": map[string]any{"taskId": taskID, "status": "working", "statusMessage": "queued",
		"createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": pollMs}})
	return call
}

// legacyTask is a 2025-11-25 tasks/get answer.
func legacyTask(id, status, msg string, pollMs int) map[string]any {
	return map[string]any{"taskId": id, "status": status, "statusMessage": msg, "createdAt": "2025-11-25T10:30:00Z",
		"lastUpdatedAt": "2025-11-25T10:30:00Z", "ttl": 60000, "pollInterval": pollMs}
}

// expectGet reads the next frame, a tasks/get of id.
func expectGet(t *testing.T, srv *fakeServer, id string) map[string]any {
	t.Helper()
	m := srv.next()
	require.Equal(t, "tasks/get", m["method"], "frame: %v", m)
	require.Equal(t, id, m["params"].(map[string]any)["taskId"])
	return m
}

// statuses records what WithTaskStatus reports.
type statuses struct {
	mu  sync.Mutex
	got []string
}

func (s *statuses) record(t conduit.Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, t.Status+" "+t.StatusMessage)
}

func (s *statuses) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}

func TestLegacyTaskDeclaredPolledAtItsIntervalAndItsResultFetched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, init := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		caps := init["params"].(map[string]any)["capabilities"].(map[string]any)
		assert.Equal(t, map[string]any{}, caps["tasks"], "the client hosts no task: an empty tasks capability")

		st := &statuses{}
		d := callAsync(c, "research", conduit.WithAwaitTask(), conduit.WithTaskTTL(90*time.Second), conduit.WithTaskStatus(st.record))
		call := startTask(t, srv, "t-1", 2000)
		assert.Equal(t, map[string]any{"ttl": float64(90000)}, call["params"].(map[string]any)["task"])
		start := time.Now()
		m := expectGet(t, srv, "t-1")
		assert.Equal(t, time.Duration(0), time.Since(start), "the first poll at once")
		srv.reply(m["id"], legacyTask("t-1", "working", "Gathering sources", 3000))
		m = expectGet(t, srv, "t-1")
		assert.Equal(t, 3*time.Second, time.Since(start), "the pollInterval tasks/get names is honoured")
		srv.reply(m["id"], legacyTask("t-1", "working", "Gathering sources", 3000))
		m = expectGet(t, srv, "t-1")
		srv.reply(m["id"], legacyTask("t-1", "completed", "done", 3000))
		res := srv.next()
		require.Equal(t, "tasks/result", res["method"])
		assert.Equal(t, "t-1", res["params"].(map[string]any)["taskId"])
		srv.reply(res["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "report"}},
			"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t-1"}}})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "report", r.res.Content[0].Text)
		assert.Equal(t, []string{"working queued", "working Gathering sources", "completed done"}, st.list(), "each change once")

		// The tools are listed once per session: the next call goes straight out.
		d = callAsync(c, "research")
		call = srv.next()
		require.Equal(t, "tools/call", call["method"])
		srv.reply(call["id"], map[string]any{"task": legacyTask("t-2", "working", "", 1000)})
		r = <-d
		require.NoError(t, r.err)
		require.NotNil(t, r.res.Task, "without WithAwaitTask the task comes back")
		assert.Equal(t, "t-2", r.res.Task.TaskID)
		assert.Equal(t, int64(1000), *r.res.Task.PollIntervalMs, "pollInterval read as PollIntervalMs")
		assert.Equal(t, int64(60000), *r.res.Task.TTLMs, "ttl read as TTLMs")

		// AwaitTask awaits it later, the same way.
		errc := make(chan error, 1)
		go func() {
			res, err := c.AwaitTask(context.Background(), r.res.Task)
			if err == nil {
				assert.Equal(t, "late", res.Content[0].Text)
			}
			errc <- err
		}()
		m = expectGet(t, srv, "t-2")
		srv.reply(m["id"], legacyTask("t-2", "completed", "", 1000))
		res = srv.next()
		require.Equal(t, "tasks/result", res["method"])
		srv.reply(res["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "late"}}})
		require.NoError(t, <-errc)
	})
}

// A call without a total limit (WithMaxTotalTimeout(0)), or a TTL under a
// millisecond, asks for no particular ttl: the server's default, not a task
// that may be deleted at once (ttl 0) or an invalid negative ttl.
func TestLegacyTaskWithoutATotalLimitAsksNoTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		for i, opts := range [][]conduit.CallOption{
			{conduit.WithMaxTotalTimeout(0)},
			{conduit.WithMaxTotalTimeout(-time.Second)},
			{conduit.WithTaskTTL(time.Microsecond)},
		} {
			d := callAsync(c, "research", opts...)
			m := srv.next()
			if m["method"] == "tools/list" {
				srv.reply(m["id"], taskTools)
				m = srv.next()
			}
			require.Equal(t, "tools/call", m["method"])
			assert.Equal(t, map[string]any{}, m["params"].(map[string]any)["task"], "call %d", i)
			srv.reply(m["id"], map[string]any{"content": []any{}}) // run normally
			require.NoError(t, (<-d).err)
		}
	})
}

func TestLegacyTaskOnlyWhereTheToolAndServerAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		plainCall := func(name string, opts ...conduit.CallOption) {
			t.Helper()
			d := callAsync(c, name, opts...)
			m := srv.next()
			if m["method"] == "tools/list" {
				srv.reply(m["id"], taskTools)
				m = srv.next()
			}
			require.Equal(t, "tools/call", m["method"])
			assert.NotContains(t, m["params"], "task", name)
			srv.reply(m["id"], map[string]any{"content": []any{}})
			require.NoError(t, (<-d).err)
		}
		plainCall("maybe") // optional: not unless asked
		plainCall("plain", conduit.WithTask())
		plainCall("unknown", conduit.WithTask())

		d := callAsync(c, "maybe", conduit.WithTask())
		m := srv.next()
		require.Equal(t, "tools/call", m["method"])
		assert.Equal(t, map[string]any{"ttl": float64(conduit.DefaultMaxTotalTimeout.Milliseconds())}, m["params"].(map[string]any)["task"], "ttl: the call's MaxTotalTimeout")
		// A server may run it normally after all: its answer is the result.
		srv.reply(m["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "direct"}}})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "direct", r.res.Content[0].Text)
	})
	for name, tc := range map[string]struct {
		opts conduit.Options
		caps map[string]any
	}{
		"server without tasks.requests.tools.call": {conduit.Options{Tasks: true}, map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"list": map[string]any{}}}},
		"client without Options.Tasks":             {conduit.Options{}, taskServerCaps},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv, init := connectTasks(t, tc.opts, tc.caps)
				if !tc.opts.Tasks {
					assert.NotContains(t, init["params"].(map[string]any)["capabilities"], "tasks")
				}
				d := callAsync(c, "research")
				m := srv.next()
				require.Equal(t, "tools/call", m["method"], "no tools/list, no task")
				assert.NotContains(t, m["params"], "task")
				srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32601, "message": "Tool research requires task augmentation (taskSupport: 'required')"}})
				var ce *conduit.Error
				require.ErrorAs(t, (<-d).err, &ce)
				assert.Equal(t, -32601, ce.RPC.Code, "the server's error, as is")
			})
		})
	}
}

func TestLegacyTaskInputIsRelatedToTheTaskCallAndPausesItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(20500 * time.Millisecond) // twice the call's timeout: the deadline must be paused
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"interpretation": "technical"}}, nil
		}}
		audits := make(chan conduit.AuditRecord, 4)
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true, Handler: h, Assigns: map[string]any{"who": "client"},
			Audit: func(r conduit.AuditRecord) { audits <- r }}, taskServerCaps)
		st := &statuses{}
		d := make(chan callResult, 1)
		go func() {
			r, err := c.CallTool(context.Background(), "research", map[string]any{"topic": "go"}, conduit.WithAwaitTask(),
				conduit.WithTimeout(10*time.Second), conduit.WithAssigns(map[string]any{"who": "call"}), conduit.WithTaskStatus(st.record))
			d <- callResult{r, err}
		}()
		call := startTask(t, srv, "t-7", 1000)
		m := expectGet(t, srv, "t-7")
		srv.reply(m["id"], legacyTask("t-7", "input_required", "Requesting clarification", 1000))
		// While tasks/result is awaited, tasks/get goes on every second to
		// show the status: polled answers them with status.
		status := legacyTask("t-7", "input_required", "Requesting clarification", 1000)
		polls := 0
		next := func() map[string]any {
			for {
				m := srv.next()
				if m["method"] != "tasks/get" {
					return m
				}
				polls++
				srv.reply(m["id"], status)
			}
		}
		res := next()
		require.Equal(t, "tasks/result", res["method"], "input_required: tasks/result at once, to receive the requests")
		// The request comes on no stream of the call (stdio), while another
		// call is in flight: only its related-task names the call.
		other := callAsync(c, "plain")
		otherCall := next()
		require.Equal(t, "tools/call", otherCall["method"])
		srv.request(50, "elicitation/create", map[string]any{"message": "Which one?", "requestedSchema": map[string]any{"type": "object",
			"properties": map[string]any{"interpretation": map[string]any{"type": "string"}}},
			"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t-7"}}})
		answer := next()
		assert.EqualValues(t, 50, answer["id"])
		assert.Equal(t, map[string]any{"action": "accept", "content": map[string]any{"interpretation": "technical"}}, answer["result"])
		assert.Equal(t, 20, polls, "polled every second meanwhile, at 1, 2, …, 20 s")
		rec := <-audits
		assert.Equal(t, conduit.OutcomeAnswered, rec.Outcome)
		assert.Equal(t, fmt.Sprint(call["id"]), rec.RelatedRequestID.String(), "audited with the tools/call that created the task")
		assert.Equal(t, map[string]any{"who": "call"}, h.seen[0].Assigns, "the task call's assigns")
		status = legacyTask("t-7", "working", "Continuing", 1000)
		m = expectGet(t, srv, "t-7")
		srv.reply(m["id"], status)
		synctest.Wait()
		srv.reply(res["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "report"}}})
		m = expectGet(t, srv, "t-7") // the status it ended with
		srv.reply(m["id"], legacyTask("t-7", "completed", "Done", 1000))
		r := <-d
		require.NoError(t, r.err, "20 s of input did not count against the 10 s deadline")
		assert.Equal(t, "report", r.res.Content[0].Text)
		assert.Equal(t, []string{"working queued", "input_required Requesting clarification", "working Continuing", "completed Done"}, st.list())
		assert.Equal(t, 1, h.count())
		srv.reply(otherCall["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-other).err)
	})
}

func TestLegacyTaskEnds(t *testing.T) {
	type want struct {
		kind   conduit.Kind
		code   int    // of the RPC error, 0 for none
		text   string // of a result, "" for an error
		method string // the error's method
		cancel bool   // tasks/cancel sent
		msg    string // the error's text, when checked
	}
	rpcErr := func(code int, msg string) map[string]any {
		return map[string]any{"code": code, "message": msg}
	}
	for name, tc := range map[string]struct {
		status string         // what tasks/get says
		result map[string]any // the answer to tasks/result (nil: not asked)
		err    map[string]any // the error tasks/result answers
		get    map[string]any // an error tasks/get answers instead
		want   want
	}{
		"failed with a JSON-RPC error": {status: "failed", err: rpcErr(-32603, "disk full"),
			want: want{kind: conduit.KindRPC, code: -32603, method: "tasks/result"}},
		"failed with an isError result": {status: "failed", result: map[string]any{"content": []any{map[string]any{"type": "text", "text": "no sources"}}, "isError": true},
			want: want{text: "no sources"}},
		"cancelled by the server": {status: "cancelled",
			want: want{kind: conduit.KindTaskCancelled, method: "tools/call", msg: "conduit: tools/call: task_cancelled: task cancelled by the server"}},
		"expired (ttl): tasks/get -32602": {get: rpcErr(-32602, "Failed to retrieve task: Task has expired"),
			want: want{kind: conduit.KindRPC, code: -32602, method: "tasks/get"}},
		"tasks/result fails for a live task": {status: "input_required", err: rpcErr(-32603, "queue broken"),
			want: want{kind: conduit.KindRPC, code: -32603, method: "tasks/result", cancel: true}},
		"tasks/result does not know a live task": {status: "input_required", err: rpcErr(-32602, "Task not found"),
			want: want{kind: conduit.KindRPC, code: -32602, method: "tasks/result"}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
				d := callAsync(c, "research", conduit.WithAwaitTask())
				startTask(t, srv, "t-e", 1000)
				m := expectGet(t, srv, "t-e")
				if tc.get != nil {
					srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": tc.get})
				} else {
					srv.reply(m["id"], legacyTask("t-e", tc.status, "", 1000))
				}
				if tc.result != nil || tc.err != nil {
					m = srv.next()
					require.Equal(t, "tasks/result", m["method"])
					if tc.err != nil {
						srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": tc.err})
					} else {
						srv.reply(m["id"], tc.result)
					}
				}
				if tc.want.cancel {
					m = srv.next()
					require.Equal(t, "tasks/cancel", m["method"])
					assert.Equal(t, "t-e", m["params"].(map[string]any)["taskId"])
					srv.reply(m["id"], legacyTask("t-e", "cancelled", "", 1000))
				}
				r := <-d
				if tc.want.text != "" {
					require.NoError(t, r.err)
					assert.True(t, r.res.IsError)
					assert.Equal(t, tc.want.text, r.res.Content[0].Text)
				} else {
					var ce *conduit.Error
					require.ErrorAs(t, r.err, &ce)
					assert.Equal(t, tc.want.kind, ce.Kind)
					assert.Equal(t, tc.want.method, ce.Method)
					if tc.want.msg != "" {
						assert.Equal(t, tc.want.msg, r.err.Error())
					}
					if tc.want.code != 0 {
						assert.Equal(t, tc.want.code, ce.RPC.Code)
					}
				}
				// Nothing else was sent: no tasks/cancel unless wanted.
				synctest.Wait()
				select {
				case f := <-srv.in:
					t.Fatalf("unexpected frame: %s", f.raw)
				default:
				}
			})
		})
	}
}

func TestTaskThatNeverLeavesWorkingEndsAtTheCallDeadlineAndIsCancelled(t *testing.T) {
	for _, eraName := range []string{"legacy", "modern"} {
		t.Run(eraName, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var c *conduit.Client
				var srv *fakeServer
				working := func(id string) map[string]any { return legacyTask(id, "working", "", 2000) }
				if eraName == "legacy" {
					c, srv, _ = connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
				} else {
					c, srv = connectModernFake(t, conduit.Options{Tasks: true})
					working = func(id string) map[string]any {
						return map[string]any{"resultType": "complete", "taskId": id, "status": "working", "pollIntervalMs": 2000}
					}
				}
				start := time.Now()
				d := callAsync(c, "research", conduit.WithAwaitTask(), conduit.WithTimeout(7*time.Second))
				if eraName == "legacy" {
					startTask(t, srv, "t-w", 2000)
				} else {
					call := srv.next()
					srv.reply(call["id"], map[string]any{"resultType": "task", "taskId": "t-w", "status": "working", "pollIntervalMs": 2000})
				}
				polls := 0
				var m map[string]any
				for {
					m = srv.next()
					if m["method"] != "tasks/get" {
						break
					}
					polls++
					srv.reply(m["id"], working("t-w"))
				}
				require.Equal(t, "tasks/cancel", m["method"])
				assert.Equal(t, "t-w", m["params"].(map[string]any)["taskId"])
				assert.Equal(t, 7*time.Second, time.Since(start), "the call's deadline, from tools/call")
				assert.Equal(t, 4, polls, "at 0, 2, 4 and 6 s")
				srv.reply(m["id"], map[string]any{"resultType": "complete"})
				var ce *conduit.Error
				require.ErrorAs(t, (<-d).err, &ce)
				assert.Equal(t, conduit.KindTimeout, ce.Kind)
			})
		})
	}
}

func TestLegacyTaskStatusNotificationWakesThePoller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notes := make(chan string, 8)
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true, Handlers: conduit.Handlers{
			Notification: func(_ context.Context, _ conduit.NotificationContext, n *conduit.Notification) {
				select {
				case notes <- n.Method:
				default:
				}
			}}}, taskServerCaps)
		d := callAsync(c, "research", conduit.WithAwaitTask())
		startTask(t, srv, "t-n", 30000)
		m := expectGet(t, srv, "t-n")
		start := time.Now()
		srv.reply(m["id"], legacyTask("t-n", "working", "", 30000))
		time.Sleep(time.Second)
		srv.notify("notifications/tasks/status", legacyTask("t-other", "completed", "", 30000)) // not this task: no wake
		time.Sleep(time.Second)
		srv.notify("notifications/tasks/status", legacyTask("t-n", "completed", "", 30000))
		m = expectGet(t, srv, "t-n")
		assert.Equal(t, 2*time.Second, time.Since(start), "woken by the notification, not the 30 s interval")
		assert.Equal(t, "notifications/tasks/status", <-notes, "the host gets the notification too")
		srv.reply(m["id"], legacyTask("t-n", "working", "", 30000)) // the notification lied: still working
		// A flood of notifications polls at most every 100 ms.
		for range 50 {
			srv.notify("notifications/tasks/status", legacyTask("t-n", "completed", "", 30000))
		}
		m = expectGet(t, srv, "t-n")
		assert.Equal(t, 2100*time.Millisecond, time.Since(start))
		srv.reply(m["id"], legacyTask("t-n", "completed", "", 30000))
		m = srv.next()
		require.Equal(t, "tasks/result", m["method"])
		srv.reply(m["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

func TestLegacyTaskGivenUpByTheCallerIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		ctx, cancel := context.WithCancel(context.Background())
		d := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "research", nil, conduit.WithAwaitTask())
			d <- err
		}()
		startTask(t, srv, "t-c", 1000)
		m := expectGet(t, srv, "t-c")
		srv.reply(m["id"], legacyTask("t-c", "working", "", 1000))
		synctest.Wait()
		cancel()
		m = srv.next()
		require.Equal(t, "tasks/cancel", m["method"])
		srv.reply(m["id"], legacyTask("t-c", "cancelled", "", 1000))
		var ce *conduit.Error
		require.ErrorAs(t, <-d, &ce)
		assert.Equal(t, conduit.KindCancelled, ce.Kind)
	})
}

// A task awaited later (AwaitTask) is one call of its own: its input is
// tied to it, not to another call in flight, and pauses its deadline.
func TestLegacyTaskAwaitedLaterOwnsItsInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(10 * time.Second)
			return &conduit.ElicitResult{Action: "decline"}, nil
		}}
		audits := make(chan conduit.AuditRecord, 4)
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true, Handler: h, Audit: func(r conduit.AuditRecord) { audits <- r }}, taskServerCaps)
		d := callAsync(c, "research")
		startTask(t, srv, "t-l", 1000)
		r := <-d
		require.NoError(t, r.err)
		other := callAsync(c, "plain")
		otherCall := srv.next()
		require.Equal(t, "tools/call", otherCall["method"])

		errc := make(chan error, 1)
		go func() {
			_, err := c.AwaitTask(context.Background(), r.res.Task, conduit.WithTimeout(5*time.Second))
			errc <- err
		}()
		m := expectGet(t, srv, "t-l")
		srv.reply(m["id"], legacyTask("t-l", "input_required", "", 1000))
		res := srv.next()
		require.Equal(t, "tasks/result", res["method"])
		srv.request("e-1", "elicitation/create", map[string]any{"message": "Sure?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{}},
			"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t-l"}}})
		srv.expectResponse("e-1")
		rec := <-audits
		assert.False(t, rec.RelatedRequestID.IsZero(), "tied to the await")
		assert.NotEqual(t, fmt.Sprint(otherCall["id"]), rec.RelatedRequestID.String())
		srv.reply(res["id"], map[string]any{"content": []any{}})
		require.NoError(t, <-errc, "10 s of input did not count against the 5 s deadline")
		srv.reply(otherCall["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-other).err)
	})
}

// A session the server forgot (legacy HTTP 404) is renewed before a task
// is created, as for any call: the fresh session lists its tools and
// creates the task.
func TestLegacyTaskCallRenewsAForgottenSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newSessionTransport(t)
		handshake := func(s *memSession) {
			s.refuseDiscover()
			init := s.next()
			require.Equal(t, "initialize", init["method"])
			s.reply(init["id"], map[string]any{"protocolVersion": "2025-11-25", "capabilities": taskServerCaps, "serverInfo": map[string]any{"name": "fake", "version": "1"}})
			require.Equal(t, "notifications/initialized", s.next()["method"])
		}
		connected := make(chan *conduit.Client, 1)
		go func() {
			c, err := conduit.Connect(context.Background(), st, conduit.Options{Tasks: true})
			assert.NoError(t, err)
			connected <- c
		}()
		s1 := st.next()
		handshake(s1)
		c := <-connected
		defer c.Close()
		listed := make(chan error, 1)
		go func() { _, err := c.ListTools(context.Background()); listed <- err }()
		m := s1.next()
		s1.reply(m["id"], taskTools)
		require.NoError(t, <-listed, "the first session's tools are known")
		s1.lose()
		synctest.Wait()

		d := callAsync(c, "research")
		s2 := st.next()
		handshake(s2)
		m = s2.next()
		require.Equal(t, "tools/list", m["method"], "the fresh session's tools")
		s2.reply(m["id"], taskTools)
		m = s2.next()
		require.Equal(t, "tools/call", m["method"])
		require.Contains(t, m["params"], "task")
		s2.reply(m["id"], map[string]any{"task": legacyTask("t-r", "working", "", 1000)})
		r := <-d
		require.NoError(t, r.err)
		require.NotNil(t, r.res.Task)
		assert.Equal(t, "t-r", r.res.Task.TaskID)
	})
}

// A 2025-11-25 server that does not offer tasks.cancel is not sent
// tasks/cancel when the call's deadline gives up on its task.
func TestLegacyTaskNotCancelledWithoutTasksCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		caps := map[string]any{"tools": map[string]any{}, "tasks": map[string]any{"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}}
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, caps)
		d := callAsync(c, "research", conduit.WithAwaitTask(), conduit.WithTimeout(3*time.Second))
		startTask(t, srv, "t-x", 2000)
		for range 2 { // at 0 and 2 s
			m := expectGet(t, srv, "t-x")
			srv.reply(m["id"], legacyTask("t-x", "working", "", 2000))
		}
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		synctest.Wait()
		select {
		case f := <-srv.in:
			t.Fatalf("unexpected frame: %s", f.raw)
		default:
		}
	})
}

// A request of a task's call whose deadline passed between two requests
// (here while the caller's status callback ran) is never sent: the call
// has failed, and the task is cancelled. (It was sent, and stayed pending
// with nobody waiting, never cancelled.)
func TestLegacyTaskRequestAfterItsCallExpiredIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		status := func(t conduit.Task) {
			if t.Status == "input_required" {
				time.Sleep(20 * time.Second) // past the 10 s deadline
			}
		}
		d := callAsync(c, "research", conduit.WithAwaitTask(), conduit.WithTimeout(10*time.Second), conduit.WithTaskStatus(status))
		startTask(t, srv, "t-x", 1000)
		m := expectGet(t, srv, "t-x")
		srv.reply(m["id"], legacyTask("t-x", "input_required", "", 1000))
		m = srv.next()
		require.Equal(t, "tasks/cancel", m["method"], "frame: %v", m)
		srv.reply(m["id"], map[string]any{})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
	})
}

// While tasks/result is awaited and the status is shown, a status
// notification polls as it does before: at once, or 100 ms after the last
// poll when that was sooner; never dropped until the next interval.
func TestLegacyTaskStatusNotificationSoonAfterAPollWhileTheResultIsAwaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true}, taskServerCaps)
		st := &statuses{}
		d := callAsync(c, "research", conduit.WithAwaitTask(), conduit.WithTaskStatus(st.record))
		startTask(t, srv, "t-s", 30000)
		m := expectGet(t, srv, "t-s")
		srv.reply(m["id"], legacyTask("t-s", "input_required", "asking", 30000))
		res := srv.next()
		require.Equal(t, "tasks/result", res["method"])
		start := time.Now()
		time.Sleep(50 * time.Millisecond)
		srv.notify("notifications/tasks/status", legacyTask("t-s", "working", "answered", 30000))
		m = expectGet(t, srv, "t-s")
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "polled 100 ms after the last poll, not at the 30 s interval")
		srv.reply(m["id"], legacyTask("t-s", "working", "answered", 30000))
		synctest.Wait()
		assert.Equal(t, []string{"working queued", "input_required asking", "working answered"}, st.list())
		srv.reply(res["id"], map[string]any{"content": []any{}})
		m = expectGet(t, srv, "t-s")
		srv.reply(m["id"], legacyTask("t-s", "completed", "", 30000))
		require.NoError(t, (<-d).err)
	})
}

// The server asks for a task's input right after its CreateTaskResult (the
// normal input_required flow) while a plain call is in flight on stdio, so
// nothing but the related-task metadata ties the request to a call: the
// task is bound as its result is delivered, so the request belongs to the
// task call (its assigns, its id in the audit) and pauses its deadline.
func TestLegacyTaskInputRightAfterTheTaskResultBelongsToTheTaskCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(20500 * time.Millisecond) // twice the call's timeout: the deadline must be paused
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}}
		audits := make(chan conduit.AuditRecord, 4)
		c, srv, _ := connectTasks(t, conduit.Options{Tasks: true, Handler: h, Audit: func(r conduit.AuditRecord) { audits <- r }}, taskServerCaps)
		other := callAsync(c, "plain")
		list := srv.next()
		require.Equal(t, "tools/list", list["method"])
		srv.reply(list["id"], taskTools)
		otherCall := srv.next()
		require.Equal(t, "tools/call", otherCall["method"])

		d := make(chan callResult, 1)
		go func() {
			r, err := c.CallTool(context.Background(), "research", nil, conduit.WithAwaitTask(),
				conduit.WithTimeout(10*time.Second), conduit.WithAssigns(map[string]any{"who": "task call"}))
			d <- callResult{r, err}
		}()
		call := srv.next()
		require.Equal(t, "tools/call", call["method"])
		require.Contains(t, call["params"], "task")
		// The request follows the result at once. A long statusMessage keeps
		// the caller's goroutine decoding the result while the connection
		// reads the request: a binding made by the caller once it has the
		// task (as BindTask was) always comes too late.
		srv.reply(call["id"], map[string]any{"task": legacyTask("t-9", "input_required", strings.Repeat("x", 1<<20), 1000)})
		srv.request("e-1", "elicitation/create", map[string]any{"message": "Sure?",
			"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
			"_meta":           map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": "t-9"}}})
		status := legacyTask("t-9", "input_required", "", 1000)
		var res map[string]any // the tasks/result request, once sent
		next := func() map[string]any {
			for {
				m := srv.next()
				switch m["method"] {
				case "tasks/get":
					srv.reply(m["id"], status)
				case "tasks/result":
					res = m
				default:
					return m
				}
			}
		}
		answer := next()
		assert.Equal(t, "e-1", answer["id"])
		assert.Equal(t, map[string]any{"action": "accept", "content": map[string]any{"ok": true}}, answer["result"])
		rec := <-audits
		assert.Equal(t, conduit.OutcomeAnswered, rec.Outcome)
		assert.Equal(t, fmt.Sprint(call["id"]), rec.RelatedRequestID.String(), "audited with the tools/call that created the task")
		assert.Equal(t, map[string]any{"who": "task call"}, h.seen[0].Assigns, "the task call's assigns")
		require.NotNil(t, res, "input_required: tasks/result awaited meanwhile")
		srv.reply(res["id"], map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}})
		status = legacyTask("t-9", "completed", "", 1000)
		go func() {
			for { // the status it ended with, and any poll due meanwhile
				m, ok := <-srv.in
				if !ok {
					return
				}
				if m.m["method"] == "tasks/get" { // not srv.reply: no FailNow off the test's goroutine
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.m["id"], "result": status})
					_ = srv.conn.Write(context.Background(), b)
				}
			}
		}()
		r := <-d
		require.NoError(t, r.err, "20.5 s of input did not count against the 10 s deadline")
		assert.Equal(t, "done", r.res.Content[0].Text)
		srv.reply(otherCall["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-other).err)
	})
}
