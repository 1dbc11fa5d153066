package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

var discoverResult = map[string]any{
	"resultType":        "complete",
	"supportedVersions": []any{"2026-07-28", "2025-11-25"},
	"capabilities":      map[string]any{"tools": map[string]any{}},
	"ttlMs":             0, "cacheScope": "private",
	"_meta": map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "modern-fake", "version": "2"}},
}

// connectModernFake connects to a fake server that answers the probe as a
// modern server.
func connectModernFake(t *testing.T, opts conduit.Options) (*conduit.Client, *fakeServer) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	srv := newFakeServer(t, serverSide)
	ch := make(chan *conduit.Client, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
		assert.NoError(t, err)
		ch <- c
	}()
	probe := srv.next()
	require.Equal(t, "server/discover", probe["method"])
	srv.reply(probe["id"], discoverResult)
	c := <-ch
	require.NotNil(t, c)
	t.Cleanup(func() {
		_ = c.Close()
		_ = serverSide.Close()
		for range srv.in {
		}
	})
	return c, srv
}

func meta(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	p, ok := m["params"].(map[string]any)
	require.True(t, ok, "no params: %v", m)
	mt, ok := p["_meta"].(map[string]any)
	require.True(t, ok, "no _meta: %v", m)
	return mt
}

func TestModernProbeSetsSessionAndEveryRequestCarriesMeta(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{modes: []string{"form", "url"}}
		c, srv := connectModernFake(t, conduit.Options{Name: "acme", Version: "9", Handler: h})
		assert.Equal(t, conduit.EraModern, c.Era())
		assert.Equal(t, "2026-07-28", c.ProtocolVersion())
		assert.Equal(t, "modern-fake", c.ServerInfo().Name)
		require.NoError(t, c.SetLogLevel(context.Background(), "warning"))
		d := callAsync(c, "deploy", conduit.WithProgressToken("p-1"))
		call := srv.next()
		assert.Equal(t, map[string]any{
			"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{
				"sampling":    map[string]any{},
				"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
				"roots":       map[string]any{},
			},
			"io.modelcontextprotocol/clientInfo": map[string]any{"name": "acme", "version": "9"},
			"io.modelcontextprotocol/logLevel":   "warning",
			"progressToken":                      "p-1",
		}, meta(t, call))
		srv.reply(call["id"], map[string]any{"content": []any{}}) // no resultType: complete
		require.NoError(t, (<-d).err)
	})
}

func TestModernMRTRRetryKeepsParamsEchoesStateAndUsesNewIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			assert.Equal(t, conduit.EraModern, r.Era)
			assert.True(t, r.RelatedRequestID.IsZero())
			assert.Equal(t, map[string]any{"who": "call"}, r.Assigns)
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		d := make(chan callResult, 1)
		go func() {
			r, err := c.CallTool(context.Background(), "deploy", map[string]any{"env": "staging"}, conduit.WithAssigns(map[string]any{"who": "call"}))
			d <- callResult{r, err}
		}()
		first := srv.next()
		// An odd but valid state string: it must come back byte for byte.
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + jsonOf(first["id"]) + `,"result":{"resultType":"input_required","content":null,` +
			`"inputRequests":{"confirm":{"method":"elicitation/create","params":{"message":"Deploy?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}},"ws":{"method":"roots/list"}},` +
			`"requestState":"v1.\u00e9\/x=="}}`)
		retry := srv.next()
		assert.NotEqual(t, first["id"], retry["id"])
		assert.Equal(t, "tools/call", retry["method"])
		p := retry["params"].(map[string]any)
		assert.Equal(t, "deploy", p["name"])
		assert.Equal(t, map[string]any{"env": "staging"}, p["arguments"])
		assert.Equal(t, "v1.é/x==", p["requestState"])
		assert.Equal(t, map[string]any{
			"confirm": map[string]any{"action": "accept", "content": map[string]any{"ok": true}},
			"ws":      map[string]any{"roots": []any{map[string]any{"uri": "file:///srv/repo", "name": "repo"}}},
		}, p["inputResponses"])
		assert.Contains(t, meta(t, retry), "io.modelcontextprotocol/protocolVersion")
		srv.reply(retry["id"], map[string]any{"resultType": "complete", "content": []any{map[string]any{"type": "text", "text": "Deployed."}}})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "Deployed.", r.res.Content[0].Text)
		assert.Equal(t, 2, h.count())
	})
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestModernRequestStateEchoedExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		d := callAsync(c, "x")
		first := srv.next()
		// Escapes the client must not re-encode.
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + jsonOf(first["id"]) + `,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":"a\u0041\"b"}}`)
		retry := srv.nextRaw()
		assert.Contains(t, retry, `"requestState":"a\u0041\"b"`)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(retry), &m))
		srv.reply(m["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

func TestModernNoRequestStateWhenNoneCameAndStateOnlyRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}})
		d := callAsync(c, "x")
		first := srv.next()
		srv.reply(first["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"r": map[string]any{"method": "roots/list"}}})
		second := srv.next()
		assert.NotContains(t, second["params"], "requestState")
		start := time.Now()
		srv.reply(second["id"], map[string]any{"resultType": "input_required", "requestState": "busy"}) // state only
		third := srv.next()
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "a short back-off")
		p := third["params"].(map[string]any)
		assert.Equal(t, "busy", p["requestState"])
		assert.NotContains(t, p, "inputResponses")
		srv.reply(third["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

// TestModernRequestStateIsTheBytesReceived: <, >, & and a raw U+2028 or
// U+2029 are sent back as they came, not escaped as json.Marshal would (a
// server may sign or compare the bytes); escapes that came stay escapes.
func TestModernRequestStateIsTheBytesReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}})
		d := callAsync(c, "x")
		first := srv.next()
		state := "\"<a>&b\u2028c\u2029\\u003c\u00e9\""
		srv.sendRaw(`{"jsonrpc":"2.0","id":` + jsonOf(first["id"]) + `,"result":{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}},"requestState":` + state + `}}`)
		retry := srv.nextRaw()
		assert.Contains(t, retry, `,"requestState":`+state+`}`)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(retry), &m))
		srv.reply(m["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

func TestModernRoundCapCarriesTheLastInputRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}, MaxRounds: 3})
		d := callAsync(c, "x")
		for i := range 3 {
			m := srv.next()
			srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{fmt.Sprint("r", i): map[string]any{"method": "roots/list"}}})
		}
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, ce.Error(), "still input_required after 3 rounds")
		assert.JSONEq(t, `{"r2":{"method":"roots/list"}}`, string(ce.InputRequests))
	})
}

func TestModernResultType(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result map[string]any
		kind   conduit.Kind
	}{
		{"unknown", map[string]any{"resultType": "partial", "content": []any{}}, conduit.KindProtocol},
		{"task without the extension", map[string]any{"resultType": "task", "taskId": "t"}, conduit.KindProtocol},
		{"neither inputRequests nor requestState", map[string]any{"resultType": "input_required"}, conduit.KindProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv := connectModernFake(t, conduit.Options{})
				d := callAsync(c, "x")
				m := srv.next()
				srv.reply(m["id"], tc.result)
				var ce *conduit.Error
				require.ErrorAs(t, (<-d).err, &ce)
				assert.Equal(t, tc.kind, ce.Kind)
			})
		})
	}
}

func TestModernUndeclaredInputRequestFailsBeforeAnyCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := rootsFunc(func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			t.Error("no callback may run")
			return nil, nil
		})
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"a": map[string]any{"method": "roots/list"},
			"b": map[string]any{"method": "sampling/createMessage", "params": samplingParams},
		}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, ce.Error(), `input request "b" asks for sampling/createMessage, which the client did not declare`)
	})
}

// A round refused for an undeclared capability is audited whole, in key
// order: each undeclared input request refused -32601, each other one
// cancelled (no callback ran for it).
func TestModernUndeclaredRoundIsAuditedWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		c, srv := connectModernFake(t, conduit.Options{Handler: rootsFunc(func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			t.Error("no callback may run")
			return nil, nil
		}), Audit: func(r conduit.AuditRecord) {
			mu.Lock()
			defer mu.Unlock()
			code := 0
			if r.Code != nil {
				code = *r.Code
			}
			got = append(got, fmt.Sprint(r.Key, " ", r.Method, " ", r.Outcome, " ", code))
		}})
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"a": map[string]any{"method": "roots/list"},
			"b": map[string]any{"method": "sampling/createMessage", "params": samplingParams},
			"c": map[string]any{"method": "elicitation/create", "params": map[string]any{"message": "m", "requestedSchema": map[string]any{"type": "object"}}},
		}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, ce.Error(), `input request "b" asks for sampling/createMessage, which the client did not declare`)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []string{"a roots/list cancelled 0", "b sampling/createMessage refused -32601", "c elicitation/create refused -32601"}, got)
	})
}

func TestModernGuardRefusalAndHandlerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("llm down")
		h := &handler{sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			return nil, boom
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})

		// A guard refusal: the code the legacy path would send.
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"u": map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "url", "message": "m", "url": "http://evil.example/"}}}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindRefused, ce.Kind)
		require.NotNil(t, ce.RPC)
		assert.Equal(t, messages.CodeInvalidParams, ce.RPC.Code)

		// A handler error: input_handler wrapping the cause.
		d = callAsync(c, "y")
		m = srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"s": map[string]any{"method": "sampling/createMessage", "params": samplingParams}}})
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindInputHandler, ce.Kind)
		assert.ErrorIs(t, ce, boom)
	})
}

func TestModernFirstFailureCancelsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan error, 1)
		h := &handler{
			sampling: func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
				time.Sleep(time.Second)
				return nil, errors.New("no model")
			},
			roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				<-ctx.Done()
				cancelled <- ctx.Err()
				return nil, ctx.Err()
			},
		}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"s": map[string]any{"method": "sampling/createMessage", "params": samplingParams},
			"r": map[string]any{"method": "roots/list"}}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindInputHandler, ce.Kind)
		assert.ErrorIs(t, <-cancelled, context.Canceled)
	})
}

// An input of a round that had not started when a sibling failed (held
// back by MaxServerRequests) is audited as cancelled, as a started one is:
// the hook hears of every input request once, whatever the limit.
func TestModernInputsHeldBackWhenASiblingFailsAreAuditedCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		outcomes := map[string]string{}
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, errors.New("no roots")
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h, MaxServerRequests: 1, Audit: func(r conduit.AuditRecord) {
			mu.Lock()
			defer mu.Unlock()
			outcomes[r.Key] = r.Outcome
		}})
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"a": map[string]any{"method": "roots/list"},
			"b": map[string]any{"method": "sampling/createMessage", "params": samplingParams},
			"c": map[string]any{"method": "sampling/createMessage", "params": samplingParams}}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindInputHandler, ce.Kind)
		assert.Contains(t, ce.Error(), `input request "a"`)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]string{"a": "refused", "b": "cancelled", "c": "cancelled"}, outcomes)
		assert.Equal(t, 1, h.count(), "no callback after the failure")
	})
}

func TestModernDeadlinePausedAcrossRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(30 * time.Second) // a person answering
			return &conduit.ElicitResult{Action: "decline"}, nil
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		start := time.Now()
		d := callAsync(c, "x", conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(time.Hour))
		for range 2 { // two rounds of 4 s server time + 30 s of input each
			m := srv.next()
			time.Sleep(4 * time.Second)
			srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"e": map[string]any{"method": "elicitation/create", "params": formParams}}})
		}
		last := srv.next()
		// 8 s of the 10 s deadline are spent: it fires 2 s into this round.
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, 70*time.Second, time.Since(start))
		assert.Equal(t, 60*time.Second, ce.Paused)
		n := srv.next()
		assert.Equal(t, "notifications/cancelled", n["method"])
		assert.Equal(t, last["id"], n["params"].(map[string]any)["requestId"])
	})
}

// Two calls gathering input at once each pause their own deadline, and
// the end of one's input resumes that call only (the pause's token was one
// shared zero-size pointer: the first input to end resumed the other call,
// which then timed out while its person was still answering).
func TestModernConcurrentInputsPauseTheirOwnCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(_ context.Context, r *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			d, err := time.ParseDuration(r.Params.Message) // how long the person takes
			if err != nil {
				return nil, err
			}
			time.Sleep(d)
			return &conduit.ElicitResult{Action: "decline"}, nil
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		start := time.Now()
		opts := []conduit.CallOption{conduit.WithTimeout(10 * time.Second), conduit.WithMaxTotalTimeout(time.Hour)}
		a := callAsync(c, "a", opts...)
		ma := srv.next()
		b := callAsync(c, "b", opts...)
		mb := srv.next()
		ask := func(m map[string]any, answerIn string) {
			srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"e": map[string]any{"method": "elicitation/create",
				"params": map[string]any{"message": answerIn, "requestedSchema": formParams["requestedSchema"]}}}})
		}
		ask(ma, "30s")
		synctest.Wait() // a's input has started: b's starts second
		ask(mb, "60s")
		retryA := srv.next()
		assert.Equal(t, 30*time.Second, time.Since(start))
		srv.reply(retryA["id"], map[string]any{"resultType": "complete", "content": []any{}})
		require.NoError(t, (<-a).err)
		retryB := srv.next()
		require.Equal(t, "tools/call", retryB["method"], "b's deadline ran while its person answered")
		assert.Equal(t, 60*time.Second, time.Since(start))
		// b's retry goes unanswered: its deadline runs again, from where
		// it was paused.
		var ce *conduit.Error
		require.ErrorAs(t, (<-b).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, 70*time.Second, time.Since(start))
		assert.Equal(t, 60*time.Second, ce.Paused)
	})
}

func TestModernMaxTotalTimeoutEndsInputGathering(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return nil, block(ctx)
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		start := time.Now()
		d := callAsync(c, "x", conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(time.Minute))
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"e": map[string]any{"method": "elicitation/create", "params": formParams}}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, time.Minute, time.Since(start))
	})
}

func TestModernServerRequestIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}})
		srv.request(1, "roots/list", nil)
		e := srv.expectError(1, messages.CodeMethodNotFound)
		assert.Contains(t, e["message"], "there are no server requests in 2026-07-28")
		assert.EqualValues(t, 1, c.Stats().Refused)
	})
}

func TestModernAnswersOfOneCallNeverReachAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Handler: &handler{}})
		d1 := callAsync(c, "a")
		m1 := srv.next()
		srv.reply(m1["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"r": map[string]any{"method": "roots/list"}}, "requestState": "s1"})
		retry := srv.next()
		d2 := callAsync(c, "b")
		other := srv.next()
		assert.NotContains(t, other["params"], "inputResponses")
		assert.NotContains(t, other["params"], "requestState")
		srv.reply(retry["id"], map[string]any{"content": []any{}})
		srv.reply(other["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-d1).err)
		require.NoError(t, (<-d2).err)
	})
}

// startClient connects in the background; the test plays the server.
func startClient(t *testing.T, opts conduit.Options) (chan *conduit.Client, chan error, *fakeServer, transport.Conn) {
	t.Helper()
	clientSide, serverSide := transport.NewMemoryPair()
	srv := newFakeServer(t, serverSide)
	cc, ec := make(chan *conduit.Client, 1), make(chan error, 1)
	go func() {
		c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), opts)
		cc <- c
		ec <- err
	}()
	return cc, ec, srv, serverSide
}

func finish(t *testing.T, c *conduit.Client, srv *fakeServer, serverSide transport.Conn) {
	if c != nil {
		_ = c.Close()
	}
	_ = serverSide.Close()
	for range srv.in {
	}
}

func TestProbeFallsBackToInitializeOnAnyNonModernAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(srv *fakeServer, id any)
		wait   time.Duration
	}{
		{"method not found", func(srv *fakeServer, id any) {
			srv.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}, 0},
		{"bare {}", func(srv *fakeServer, id any) { srv.reply(id, map[string]any{}) }, 0},
		{"-32000", func(srv *fakeServer, id any) {
			srv.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32000, "message": "not initialized"}})
		}, 0},
		{"-32602 with unrelated data", func(srv *fakeServer, id any) {
			srv.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32602, "message": "x", "data": map[string]any{"supported": []any{"2025-06-18"}}}})
		}, 0},
		{"silence", func(*fakeServer, any) {}, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc, ec, srv, serverSide := startClient(t, conduit.Options{})
				start := time.Now()
				probe := srv.next()
				require.Equal(t, "server/discover", probe["method"])
				tc.answer(srv, probe["id"])
				init := srv.next()
				assert.Equal(t, "initialize", init["method"])
				assert.Equal(t, tc.wait, time.Since(start))
				srv.reply(init["id"], map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "old", "version": "1"}})
				assert.Equal(t, "notifications/initialized", srv.next()["method"])
				c := <-cc
				require.NoError(t, <-ec)
				assert.Equal(t, conduit.EraLegacy, c.Era())
				finish(t, c, srv, serverSide)
			})
		})
	}
}

// A modern server slow to answer the probe (a loaded machine: 5 s) is
// still found modern: the probe waits DefaultDiscoverTimeout (10 s); it
// waited 3 s, then fell back to initialize, and the late answer was
// warned of as a response to an unknown id.
func TestSlowProbeAnswerIsStillModern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var warned atomic.Int64
		logger := slog.New(levelCounter{level: slog.LevelWarn, n: &warned})
		cc, ec, srv, serverSide := startClient(t, conduit.Options{Logger: logger})
		probe := srv.next()
		require.Equal(t, "server/discover", probe["method"])
		time.Sleep(5 * time.Second)
		srv.reply(probe["id"], discoverResult)
		c := <-cc
		require.NoError(t, <-ec)
		assert.Equal(t, conduit.EraModern, c.Era())
		assert.Zero(t, warned.Load(), "nothing to warn of")
		finish(t, c, srv, serverSide)
	})
	assert.Equal(t, 10*time.Second, conduit.DefaultDiscoverTimeout)
}

// levelCounter is a slog.Handler that counts the records at level or above.
type levelCounter struct {
	level slog.Level
	n     *atomic.Int64
}

func (h levelCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }
func (h levelCounter) Handle(context.Context, slog.Record) error {
	h.n.Add(1)
	return nil
}
func (h levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h levelCounter) WithGroup(string) slog.Handler      { return h }

func TestProbeRetriesAfterUnsupportedVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc, ec, srv, serverSide := startClient(t, conduit.Options{})
		probe := srv.next()
		assert.Equal(t, "2026-07-28", meta(t, probe)["io.modelcontextprotocol/protocolVersion"])
		srv.send(map[string]any{"jsonrpc": "2.0", "id": probe["id"], "error": map[string]any{"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{"supported": []any{"2026-07-28"}, "requested": "2026-07-28"}}})
		again := srv.next()
		assert.Equal(t, "server/discover", again["method"], "stays modern: no fallback to initialize")
		assert.NotEqual(t, probe["id"], again["id"])
		srv.reply(again["id"], discoverResult)
		c := <-cc
		require.NoError(t, <-ec)
		assert.Equal(t, conduit.EraModern, c.Era())
		finish(t, c, srv, serverSide)
	})
}

func TestPinnedModernFailsAgainstALegacyServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc, ec, srv, serverSide := startClient(t, conduit.Options{Era: conduit.EraModern})
		probe := srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": probe["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
		c := <-cc
		err := <-ec
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, err.Error(), "does not speak the modern era")
		finish(t, c, srv, serverSide)
	})
}

func TestPinnedLegacySkipsTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc, ec, srv, serverSide := startClient(t, conduit.Options{ProtocolVersion: "2025-06-18"})
		init := srv.next()
		assert.Equal(t, "initialize", init["method"])
		assert.Equal(t, "2025-06-18", init["params"].(map[string]any)["protocolVersion"])
		srv.reply(init["id"], map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "old", "version": "1"}})
		srv.next()
		c := <-cc
		require.NoError(t, <-ec)
		assert.Equal(t, "2025-06-18", c.ProtocolVersion())
		finish(t, c, srv, serverSide)
	})
}

func TestTasksAnswerInputOncePerKeyAndReturnTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connectModernFake(t, conduit.Options{Handler: h, Tasks: true})
		d := callAsync(c, "long", conduit.WithAwaitTask())
		call := srv.next()
		caps := meta(t, call)["io.modelcontextprotocol/clientCapabilities"].(map[string]any)
		assert.Equal(t, map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}, caps["extensions"])
		srv.reply(call["id"], map[string]any{"resultType": "task", "taskId": "t-1", "status": "working", "pollIntervalMs": 2000})
		start := time.Now()
		get := srv.next()
		assert.Equal(t, "tasks/get", get["method"])
		assert.Equal(t, "t-1", get["params"].(map[string]any)["taskId"])
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t-1", "status": "working", "pollIntervalMs": 2000})
		ask := map[string]any{"resultType": "complete", "taskId": "t-1", "status": "input_required",
			"inputRequests": map[string]any{"ws": map[string]any{"method": "roots/list"}}}
		get = srv.next()
		assert.Equal(t, 2*time.Second, time.Since(start), "pollIntervalMs honoured")
		srv.reply(get["id"], ask)
		upd := srv.next()
		assert.Equal(t, "tasks/update", upd["method"])
		assert.Equal(t, map[string]any{"ws": map[string]any{"roots": []any{map[string]any{"uri": "file:///srv/repo", "name": "repo"}}}}, upd["params"].(map[string]any)["inputResponses"])
		srv.reply(upd["id"], map[string]any{"resultType": "complete"})
		get = srv.next()
		srv.reply(get["id"], ask) // the same key again: not answered twice
		get = srv.next()
		assert.Equal(t, "tasks/get", get["method"])
		srv.reply(get["id"], map[string]any{"resultType": "task", "taskId": "t-1", "status": "completed",
			"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}, "isError": true}})
		r := <-d
		require.NoError(t, r.err)
		assert.Equal(t, "done", r.res.Content[0].Text)
		assert.True(t, r.res.IsError, "a completed task may carry isError")
		assert.Equal(t, 1, h.count())
	})
}

func TestTasksFailedCancelledAndCallerGivingUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Tasks: true})

		d := callAsync(c, "a", conduit.WithAwaitTask())
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-2", "status": "working"})
		m = srv.next()
		srv.reply(m["id"], map[string]any{"taskId": "t-2", "status": "failed", "error": map[string]any{"code": -32603, "message": "disk full"}})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindRPC, ce.Kind)
		assert.Equal(t, "disk full", ce.RPC.Message)

		d = callAsync(c, "b", conduit.WithAwaitTask())
		m = srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-3", "status": "working"})
		m = srv.next()
		srv.reply(m["id"], map[string]any{"taskId": "t-3", "status": "cancelled"})
		err := (<-d).err
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTaskCancelled, ce.Kind, "the server cancelled it, not the caller")
		assert.Equal(t, "conduit: tools/call: task_cancelled: task cancelled by the server", err.Error())

		// Without WithAwaitTask the task comes back to the caller.
		d = callAsync(c, "c")
		m = srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-4", "status": "working"})
		r := <-d
		require.NoError(t, r.err)
		require.NotNil(t, r.res.Task)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.AwaitTask(ctx, r.res.Task)
			errc <- err
		}()
		m = srv.next()
		srv.reply(m["id"], map[string]any{"taskId": "t-4", "status": "working"})
		synctest.Wait()
		cancel()
		require.ErrorAs(t, <-errc, &ce)
		assert.Equal(t, conduit.KindCancelled, ce.Kind)
		m = srv.next()
		assert.Equal(t, "tasks/cancel", m["method"])
		assert.Equal(t, "t-4", m["params"].(map[string]any)["taskId"])
		srv.reply(m["id"], map[string]any{"resultType": "complete"})
	})
}

// A pollIntervalMs too large for a time.Duration is a very long wait, not
// a negative one: the poller does not ask tasks/get again at once, over and
// over; the call's deadline ends the wait.
func TestTaskPollIntervalBeyondDurationIsNotABusyLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Tasks: true})
		d := callAsync(c, "long", conduit.WithAwaitTask(), conduit.WithTimeout(5*time.Second))
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-9", "status": "working"})
		m = srv.next()
		assert.Equal(t, "tasks/get", m["method"])
		start := time.Now()
		srv.reply(m["id"], map[string]any{"resultType": "complete", "taskId": "t-9", "status": "working", "pollIntervalMs": int64(1e13)})
		m = srv.next()
		assert.Equal(t, "tasks/cancel", m["method"], "no tasks/get before the deadline")
		assert.Equal(t, 5*time.Second, time.Since(start))
		srv.reply(m["id"], map[string]any{"resultType": "complete"})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
	})
}

// headerConn records what the client tells the transport.
type headerConn struct {
	transport.Conn
	mu       sync.Mutex
	headers  map[string]map[string]string
	sessions []string
}

func (h *headerConn) SetToolHeaders(m map[string]map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.headers = m
}

func (h *headerConn) SetSession(version string, e messages.Era) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions = append(h.sessions, version+" "+string(e))
}

func TestModernToolsWithInvalidHeaderAnnotationsAreDroppedAndMismatchRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clientSide, serverSide := transport.NewMemoryPair()
		hc := &headerConn{Conn: clientSide}
		srv := newFakeServer(t, serverSide)
		cc := make(chan *conduit.Client, 1)
		go func() {
			c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(hc), conduit.Options{})
			assert.NoError(t, err)
			cc <- c
		}()
		probe := srv.next()
		srv.reply(probe["id"], discoverResult)
		c := <-cc
		defer finish(t, c, srv, serverSide)
		assert.Equal(t, []string{"2026-07-28 modern"}, hc.sessions)

		type out struct {
			tools []conduit.Tool
			err   error
		}
		lc := make(chan out, 1)
		toolsList := map[string]any{"tools": []any{
			map[string]any{"name": "good", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}}}},
			map[string]any{"name": "bad", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number", "x-mcp-header": "X"}}}},
			map[string]any{"name": "plain", "inputSchema": map[string]any{"type": "object"}},
		}}
		list := func() {
			go func() {
				tools, err := c.ListTools(context.Background())
				lc <- out{tools, err}
			}()
			m := srv.next()
			srv.reply(m["id"], map[string]any{"tools": []any{
				map[string]any{"name": "good", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}}}},
				map[string]any{"name": "bad", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number", "x-mcp-header": "X"}}}},
				map[string]any{"name": "plain", "inputSchema": map[string]any{"type": "object"}},
			}})
		}
		list()
		r := <-lc
		require.NoError(t, r.err)
		require.Len(t, r.tools, 2)
		assert.Equal(t, "good", r.tools[0].Name)
		assert.Equal(t, "plain", r.tools[1].Name)
		assert.Equal(t, map[string]map[string]string{"good": {"region": "Region"}}, hc.headers)

		// -32020: refresh tools/list, then retry the call once.
		d := callAsync(c, "good")
		m := srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32020, "message": "Header mismatch"}})
		refresh := srv.next()
		assert.Equal(t, "tools/list", refresh["method"])
		srv.reply(refresh["id"], toolsList)
		retry := srv.next()
		assert.Equal(t, "tools/call", retry["method"])
		assert.NotEqual(t, m["id"], retry["id"])
		srv.reply(retry["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

func TestTaskWhoseInputIsRefusedIsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{Tasks: true}) // no handler: nothing declared
		d := callAsync(c, "a", conduit.WithAwaitTask())
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-9", "status": "working"})
		m = srv.next()
		srv.reply(m["id"], map[string]any{"taskId": "t-9", "status": "input_required",
			"inputRequests": map[string]any{"q": map[string]any{"method": "roots/list"}}})
		m = srv.next()
		assert.Equal(t, "tasks/cancel", m["method"])
		assert.Equal(t, "t-9", m["params"].(map[string]any)["taskId"])
		srv.reply(m["id"], map[string]any{"resultType": "complete"})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
	})
}

// An answer that does not fit the form fails a modern call with the
// guards' typed reason: a host (or a UI) finds the field with errors.As.
func TestModernFormAnswerRefusalCarriesTheFieldError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": 42}}, nil
		}}
		c, srv := connectModernFake(t, conduit.Options{Handler: h})
		d := callAsync(c, "x")
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"f": map[string]any{"method": "elicitation/create", "params": formParams}}})
		err := (<-d).err
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindInputHandler, ce.Kind)
		var fe *conduit.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "name", fe.Field)
		assert.Equal(t, messages.ReasonType, fe.Reason)
		assert.Equal(t, `conduit: tools/call: input_handler: input request "f": answer refused: jsonrpc error -32603: Internal error: elicitation answer does not fit the schema: field "name" fails "type"`, err.Error())
	})
}

// A task's input whose call's deadline passed before the input started
// (here while the caller's status callback ran) belongs to no call: not
// to the only other call in flight, whose assigns it would carry and
// whose deadline it would pause.
func TestTaskInputAfterItsCallExpiredBelongsToNoOtherCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connectModernFake(t, conduit.Options{Handler: h, Tasks: true})
		other := callAsync(c, "other", conduit.WithAssigns(map[string]any{"who": "other"}))
		mo := srv.next()
		status := func(t conduit.Task) {
			if t.Status == "input_required" {
				time.Sleep(20 * time.Second) // past the 10 s deadline
			}
		}
		d := callAsync(c, "long", conduit.WithAwaitTask(), conduit.WithTimeout(10*time.Second),
			conduit.WithAssigns(map[string]any{"who": "long"}), conduit.WithTaskStatus(status))
		m := srv.next()
		srv.reply(m["id"], map[string]any{"resultType": "task", "taskId": "t-1", "status": "working"})
		get := srv.next()
		require.Equal(t, "tasks/get", get["method"])
		srv.reply(get["id"], map[string]any{"resultType": "complete", "taskId": "t-1", "status": "input_required",
			"inputRequests": map[string]any{"ws": map[string]any{"method": "roots/list"}}})
		cancelTask := srv.next()
		require.Equal(t, "tasks/cancel", cancelTask["method"])
		srv.reply(cancelTask["id"], map[string]any{"resultType": "complete"})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		synctest.Wait()
		// No handler runs for a call whose time was up (a person would see
		// a prompt flash up and vanish); the tracker's side of this test,
		// the input granted to no other call, is TestTrackerInputOfAnEndedCallBelongsToNone.
		assert.Zero(t, h.count(), "a handler ran for a call whose time was up")
		h.mu.Lock()
		for _, rc := range h.seen {
			assert.NotEqual(t, "other", rc.Assigns["who"], "the input got another call's assigns")
		}
		h.mu.Unlock()
		srv.reply(mo["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-other).err)
	})
}

// Once the server answered -32022 listing a version, it is modern: a
// second probe it does not accept fails Connect, never falls back to
// initialize.
func TestProbeDoesNotFallBackAfterUnsupportedVersion(t *testing.T) {
	unsupported := func(srv *fakeServer, id any) {
		srv.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{"supported": []any{"2026-07-28"}, "requested": "2026-07-28"}}})
	}
	for _, tc := range []struct {
		name  string
		again func(srv *fakeServer, id any)
	}{
		{"-32022 again", unsupported},
		{"method not found", func(srv *fakeServer, id any) {
			srv.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}},
		{"silence", func(*fakeServer, any) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc, ec, srv, serverSide := startClient(t, conduit.Options{})
				probe := srv.next()
				unsupported(srv, probe["id"])
				again := srv.next()
				require.Equal(t, "server/discover", again["method"])
				tc.again(srv, again["id"])
				err := <-ec
				c := <-cc
				require.Nil(t, c, "a server that said it is modern is not spoken to as a legacy one")
				var ce *conduit.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, conduit.KindProtocol, ce.Kind)
				assert.Equal(t, "conduit: server/discover: protocol: the server answered -32022 listing 2026-07-28, then did not accept it", err.Error())
				_ = serverSide.Close()
				for f := range srv.in {
					assert.NotEqual(t, "initialize", f.m["method"], "no fallback after -32022")
				}
			})
		})
	}
}

func TestUnknownEraOrVersionFailsConnectBeforeAnyRequest(t *testing.T) {
	for _, tc := range []struct {
		opts conduit.Options
		want string
	}{
		{conduit.Options{Era: "Legacy"}, `conduit: usage: unknown era "Legacy": want "", "legacy" or "modern"`},
		{conduit.Options{ProtocolVersion: "2024-10-07"}, `conduit: usage: Conduit does not speak protocol version "2024-10-07"`},
		{conduit.Options{Era: "legacy", ProtocolVersion: "2026-07-28"}, `conduit: usage: protocol version 2026-07-28 is not of the legacy era`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cc, ec, srv, serverSide := startClient(t, tc.opts)
				err := <-ec
				require.Nil(t, <-cc)
				var ce *conduit.Error
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, conduit.KindUsage, ce.Kind, "the caller's options")
				assert.Equal(t, tc.want, err.Error())
				_ = serverSide.Close()
				for f := range srv.in {
					t.Errorf("nothing is sent: %v", f.m)
				}
			})
		})
	}
}

func TestPinnedLegacyVersionIsNotTradedForAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc, ec, srv, serverSide := startClient(t, conduit.Options{ProtocolVersion: "2025-06-18"})
		init := srv.next()
		require.Equal(t, "initialize", init["method"])
		srv.reply(init["id"], map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "newer", "version": "1"}})
		err := <-ec
		require.Nil(t, <-cc, "the pinned version is the session's or none")
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Equal(t, `conduit: initialize: protocol: server answered initialize with protocol version "2025-11-25"; Conduit offered 2025-06-18, pinned by Options.ProtocolVersion`, err.Error())
		_ = serverSide.Close()
		for f := range srv.in {
			assert.NotEqual(t, "notifications/initialized", f.m["method"])
		}
	})
}

// A level that is not one of the eight RFC 5424 names is refused at once in
// the modern era, as a legacy server refuses it (-32602): stored, it would
// go in the _meta of every later request, each of which the server refuses.
func TestModernUnknownLogLevelIsRefusedNotStored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{})
		require.NoError(t, c.SetLogLevel(context.Background(), "notice"))
		err := c.SetLogLevel(context.Background(), "verbose")
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindUsage, ce.Kind, "the caller's level")
		assert.Equal(t, `conduit: logging/setLevel: usage: unknown log level "verbose": want one of debug, info, notice, warning, error, critical, alert, emergency`, err.Error())
		d := callAsync(c, "x")
		call := srv.next()
		assert.Equal(t, "notice", meta(t, call)["io.modelcontextprotocol/logLevel"], "the level set before is kept")
		srv.reply(call["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-d).err)
	})
}

// Ping in the modern era, which has no ping, asks server/discover: a
// server that speaks only 2026-07-28 answers that, where it answers ping
// -32601 (and a host's keep-alive pings would have restarted a healthy
// server over and over).
func TestModernPingAsksServerDiscover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connectModernFake(t, conduit.Options{})
		done := make(chan error, 1)
		go func() { done <- c.Ping(context.Background()) }()
		m := srv.next()
		require.Equal(t, "server/discover", m["method"])
		assert.Equal(t, "2026-07-28", meta(t, m)["io.modelcontextprotocol/protocolVersion"])
		srv.reply(m["id"], discoverResult)
		require.NoError(t, <-done)
	})
}

// TestTasksInputRoundsShareTheCallCap: a modern task whose server asks
// for fresh input forever is capped by Options.MaxRounds as CallModern is
// (its creating call, then each tasks/update), with the same error, and
// the task is cancelled.
func TestTasksInputRoundsShareTheCallCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connectModernFake(t, conduit.Options{Handler: h, Tasks: true, MaxRounds: 3})
		d := callAsync(c, "long", conduit.WithAwaitTask())
		call := srv.next()
		srv.reply(call["id"], map[string]any{"resultType": "task", "taskId": "t-1", "status": "working"})
		ask := func(key string) map[string]any {
			return map[string]any{"resultType": "complete", "taskId": "t-1", "status": "input_required",
				"inputRequests": map[string]any{key: map[string]any{"method": "roots/list"}}}
		}
		for i := range 2 { // rounds 2 and 3: answered
			get := srv.next()
			require.Equal(t, "tasks/get", get["method"])
			srv.reply(get["id"], ask(fmt.Sprint("r", i)))
			upd := srv.next()
			require.Equal(t, "tasks/update", upd["method"])
			srv.reply(upd["id"], map[string]any{"resultType": "complete"})
		}
		get := srv.next()
		require.Equal(t, "tasks/get", get["method"])
		srv.reply(get["id"], ask("r2"))
		cancel := srv.next()
		assert.Equal(t, "tasks/cancel", cancel["method"])
		assert.Equal(t, "t-1", cancel["params"].(map[string]any)["taskId"])
		srv.reply(cancel["id"], map[string]any{"resultType": "complete", "taskId": "t-1", "status": "cancelled"})
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, ce.Error(), "still input_required after 3 rounds")
		assert.JSONEq(t, `{"r2":{"method":"roots/list"}}`, string(ce.InputRequests))
		assert.Equal(t, 2, h.count(), "the third round is not answered")
	})
}
