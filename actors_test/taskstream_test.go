package actors_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// pushCaps offer task status on the listen stream (the tasks extension's
// "taskIds" setting) and nothing else.
var pushCaps = map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{"taskIds": true}}}

// A modern server that pushes task status: the awaited task's id joins
// the listen stream; its pushed terminal status wakes the await long
// before the poll interval, and the result is read with tasks/get at
// once; a status for a task not awaited is dropped and counted; the
// stream ends with the await.
func TestPushedTaskStatusWakesTheAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, ss := transport.NewMemoryPair()
		ch, srv := startListening(t, cs, ss, conduit.Options{Tasks: true}, pushCaps)
		c := <-ch // no hook: no stream at Connect
		type out struct {
			res *conduit.CallToolResult
			err error
		}
		done := make(chan out, 1)
		poll := int64(60000)
		go func() {
			r, err := c.AwaitTask(context.Background(), &conduit.Task{TaskID: "t1", Status: "working", PollIntervalMs: &poll}, conduit.WithTimeout(time.Hour))
			done <- out{r, err}
		}()
		var listen, get map[string]any
		for listen == nil || get == nil {
			m := srv.next()
			switch m["method"] {
			case "subscriptions/listen":
				listen = m
			case "tasks/get":
				get = m
			default:
				t.Fatalf("unexpected frame %v", m)
			}
		}
		assert.Equal(t, map[string]any{"taskIds": []any{"t1"}}, asked(listen))
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
		srv.ack(listen, map[string]any{"taskIds": []any{"t1"}})
		synctest.Wait()
		start := time.Now()
		meta := map[string]any{subID: listen["id"]}
		srv.notify("notifications/tasks", map[string]any{"taskId": "t9", "status": "completed", "_meta": meta})
		srv.notify("notifications/tasks", map[string]any{"taskId": "t1", "status": "completed", "_meta": meta})
		get = srv.next()
		assert.Equal(t, "tasks/get", get["method"])
		assert.Less(t, time.Since(start), time.Second, "woken by the push, not the 60 s poll")
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "completed",
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}})
		r := <-done
		require.NoError(t, r.err)
		assert.Equal(t, "done", r.res.Content[0].Text)
		assert.EqualValues(t, 1, c.Stats().Unsubscribed, "the status of a task not awaited is dropped and counted")
		end := srv.next() // the set is empty now: the stream ends
		assert.Equal(t, "notifications/cancelled", end["method"])
		assert.Equal(t, listen["id"], end["params"].(map[string]any)["requestId"])
	})
}

// A modern server that declares tasks is asked for the awaited task's
// status on the listen stream; one that refuses the stream (-32601) is
// polled at its pollIntervalMs, and asked no more.
func TestTaskStatusPolledWhenTheStreamIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, ss := transport.NewMemoryPair()
		caps := map[string]any{"tools": map[string]any{}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}
		ch, srv := startListening(t, cs, ss, conduit.Options{Tasks: true}, caps)
		c := <-ch
		done := make(chan error, 1)
		poll := int64(3000)
		go func() {
			_, err := c.AwaitTask(context.Background(), &conduit.Task{TaskID: "t1", Status: "working", PollIntervalMs: &poll}, conduit.WithTimeout(time.Hour))
			done <- err
		}()
		// The listen request and the first poll, in either order.
		var listens, gets int
		for listens == 0 || gets == 0 {
			m := srv.next()
			switch m["method"] {
			case "subscriptions/listen":
				listens++
				assert.Equal(t, []any{"t1"}, m["params"].(map[string]any)["notifications"].(map[string]any)["taskIds"])
				srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
			case "tasks/get":
				gets++
				srv.reply(m["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
			default:
				t.Fatalf("unexpected %v", m["method"])
			}
		}
		synctest.Wait()
		start := time.Now()
		get := srv.next()
		require.Equal(t, "tasks/get", get["method"], "polled; the refused stream is not asked again")
		assert.Equal(t, 3*time.Second, time.Since(start))
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "completed", "result": map[string]any{"content": []any{}}})
		require.NoError(t, <-done)
	})
}

// Over HTTP: the listen POST asks for the awaited task; its pushed
// terminal status ends an await whose poll interval is a minute, and a
// status for a task not awaited is dropped and counted.
func TestHTTPPushedTaskStatusWakesTheAwait(t *testing.T) {
	var pushed atomic.Bool
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Notifications map[string]any `json:"notifications"`
			} `json:"params"`
		}
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&m) != nil {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		reply := func(res map[string]any) {
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
			_, _ = w.Write(b)
		}
		switch m.Method {
		case "server/discover":
			res := map[string]any{}
			for k, v := range discoverResult {
				res[k] = v
			}
			res["capabilities"] = pushCaps
			reply(res)
		case "tasks/get":
			if n := gets.Add(1); n >= 2 && pushed.Load() { // the first poll says working, whenever it comes
				reply(map[string]any{"resultType": "complete", "taskId": "t1", "status": "completed", "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}})
				return
			}
			reply(map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": 60000})
		case "subscriptions/listen":
			w.Header().Set("Content-Type", "text/event-stream")
			event := func(v any) {
				b, _ := json.Marshal(v)
				_, _ = w.Write([]byte("data: " + string(b) + "\n\n"))
				w.(http.Flusher).Flush()
			}
			tag := map[string]any{subID: m.ID}
			event(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": map[string]any{"notifications": m.Params.Notifications, "_meta": tag}})
			if ids, _ := m.Params.Notifications["taskIds"].([]any); len(ids) == 1 && ids[0] == "t1" {
				pushed.Store(true)
				event(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": map[string]any{"taskId": "t9", "status": "completed", "_meta": tag}})
				event(map[string]any{"jsonrpc": "2.0", "method": "notifications/tasks", "params": map[string]any{"taskId": "t1", "status": "completed", "_meta": tag}})
			}
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.HTTP{URL: srv.URL}, conduit.Options{Tasks: true})
	require.NoError(t, err)
	defer c.Close()
	poll := int64(60000)
	r, err := c.AwaitTask(ctx, &conduit.Task{TaskID: "t1", Status: "working", PollIntervalMs: &poll}, conduit.WithTimeout(time.Hour))
	require.NoError(t, err, "woken by the push: the 60 s poll would outlast ctx")
	assert.Equal(t, "done", r.Content[0].Text)
	assert.EqualValues(t, 2, gets.Load())
	assert.EqualValues(t, 1, c.Stats().Unsubscribed)
}

// A flood of pushed statuses for the awaited task is bounded: the wake
// holds one pending signal, polls it causes are 100 ms apart at least
// (the burst costs two tasks/get: one at once, one for the pushes that
// came during it), and then the poll interval rules again.
func TestPushedTaskStatusFloodIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cs, ss := transport.NewMemoryPair()
		ch, srv := startListening(t, cs, ss, conduit.Options{Tasks: true}, pushCaps)
		c := <-ch
		done := make(chan error, 1)
		poll := int64(60000)
		go func() {
			_, err := c.AwaitTask(context.Background(), &conduit.Task{TaskID: "t1", Status: "working", PollIntervalMs: &poll}, conduit.WithTimeout(time.Hour))
			done <- err
		}()
		var listen, get map[string]any
		for listen == nil || get == nil {
			m := srv.next()
			if m["method"] == "subscriptions/listen" {
				listen = m
			} else {
				get = m
			}
		}
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
		srv.ack(listen, map[string]any{"taskIds": []any{"t1"}})
		synctest.Wait()
		for range 500 {
			srv.notify("notifications/tasks", map[string]any{"taskId": "t1", "status": "working", "_meta": map[string]any{subID: listen["id"]}})
		}
		get = srv.next()
		require.Equal(t, "tasks/get", get["method"])
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
		start := time.Now()
		get = srv.next()
		require.Equal(t, "tasks/get", get["method"])
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the pushes during the first poll: one more, 100 ms on")
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
		start = time.Now()
		get = srv.next()
		require.Equal(t, "tasks/get", get["method"])
		assert.Equal(t, time.Minute, time.Since(start), "500 pushes: two early polls, then the interval")
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "completed", "result": map[string]any{"content": []any{}}})
		require.NoError(t, <-done)
		assert.EqualValues(t, 0, c.Stats().Unsubscribed)
	})
}
