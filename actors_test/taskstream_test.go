package actors_test

import (
	"context"
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

// A modern server that offers tasks but not their status on the stream is
// polled at its pollIntervalMs and never sent a listen request.
func TestTaskStatusPolledWithoutPush(t *testing.T) {
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
		get := srv.next()
		require.Equal(t, "tasks/get", get["method"])
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "working", "pollIntervalMs": poll})
		start := time.Now()
		get = srv.next()
		require.Equal(t, "tasks/get", get["method"], "no listen request")
		assert.Equal(t, 3*time.Second, time.Since(start))
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t1", "status": "completed", "result": map[string]any{"content": []any{}}})
		require.NoError(t, <-done)
	})
}
