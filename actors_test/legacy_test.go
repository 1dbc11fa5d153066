package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

func TestHandshakeOffersLatestAndDeclaresHandlerCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{modes: []string{"form", "url"}}
		c, srv := connect(t, conduit.Options{Name: "acme", Handler: h}, "2025-11-25")
		params := srv.Init["params"].(map[string]any)
		assert.Equal(t, "2025-11-25", params["protocolVersion"])
		assert.Equal(t, map[string]any{
			"sampling":    map[string]any{},
			"elicitation": map[string]any{"form": map[string]any{}, "url": map[string]any{}},
			"roots":       map[string]any{"listChanged": true}, // RootsChanged sends notifications/roots/list_changed
		}, params["capabilities"])
		assert.Equal(t, "acme", params["clientInfo"].(map[string]any)["name"])
		assert.Equal(t, "2025-11-25", c.ProtocolVersion())
		assert.Equal(t, conduit.EraLegacy, c.Era())
		assert.Equal(t, "fake", c.ServerInfo().Name)
	})
}

func TestHandshakeWithoutHandlerDeclaresNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, srv := connect(t, conduit.Options{}, "2025-06-18")
		params := srv.Init["params"].(map[string]any)
		assert.Equal(t, map[string]any{}, params["capabilities"])
	})
}

func TestHandshakeRefusesUnknownVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clientSide, serverSide := transport.NewMemoryPair()
		srv := newFakeServer(t, serverSide)
		errc := make(chan error, 1)
		go func() {
			_, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{})
			errc <- err
		}()
		srv.refuseDiscover()
		init := srv.next()
		srv.reply(init["id"], map[string]any{"protocolVersion": "2024-11-05", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "old", "version": "1"}})
		err := <-errc
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindProtocol, ce.Kind)
		assert.Contains(t, err.Error(), `"2024-11-05"`)
		assert.Contains(t, err.Error(), "2025-11-25, 2025-06-18")
		_ = serverSide.Close()
		for range srv.in {
		}
	})
}

func TestPingAnsweredAndUnknownMethodRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, srv := connect(t, conduit.Options{}, "2025-11-25")
		srv.request("p1", "ping", nil)
		m := srv.expectResponse("p1")
		assert.Equal(t, map[string]any{}, m["result"])
		srv.request(2, "tools/list", nil)
		e := srv.expectError(2, messages.CodeMethodNotFound)
		assert.Contains(t, e["message"], "tools/list")
	})
}

func TestClientPingsServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		errc := make(chan error, 1)
		go func() { errc <- c.Ping(context.Background()) }()
		m := srv.next()
		assert.Equal(t, "ping", m["method"])
		srv.reply(m["id"], map[string]any{})
		require.NoError(t, <-errc)
	})
}

func TestUndeclaredCapabilityRefusedBeforeCallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Only roots: sampling and elicitation are not declared.
		var called atomic.Int32
		rootsOnly := rootsFunc(func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			called.Add(1)
			return &conduit.ListRootsResult{}, nil
		})
		_, srv := connect(t, conduit.Options{Handler: rootsOnly}, "2025-11-25")
		srv.request(1, "sampling/createMessage", samplingParams)
		srv.expectError(1, messages.CodeMethodNotFound)
		srv.request(2, "elicitation/create", formParams)
		srv.expectError(2, messages.CodeMethodNotFound)
		assert.Equal(t, int32(0), called.Load())
		srv.request(3, "roots/list", nil)
		m := srv.expectResponse(3)
		assert.Equal(t, map[string]any{"roots": []any{}}, m["result"])
		assert.Equal(t, int32(1), called.Load())
	})
}

type rootsFunc func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error)

func (f rootsFunc) ListRoots(ctx context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
	return f(ctx, r)
}

func TestRequestTiedToTheOnlyCallGetsItsAssignsAndContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connect(t, conduit.Options{Name: "acme", ServerID: "srv-1", Handler: h, Assigns: map[string]any{"who": "client"}}, "2025-11-25")
		done := callAsync(c, "t", conduit.WithAssigns(map[string]any{"who": "call"}))
		call := srv.next()
		srv.request("s1", "sampling/createMessage", samplingParams)
		m := srv.expectResponse("s1")
		assert.Equal(t, "hi", m["result"].(map[string]any)["content"].(map[string]any)["text"])
		srv.reply(call["id"], map[string]any{"content": []any{}})
		require.NoError(t, (<-done).err)

		// Not tied to a call: the client's assigns, no related id.
		srv.request("r1", "roots/list", nil)
		srv.expectResponse("r1")

		require.Len(t, h.seen, 2)
		tied := h.seen[0]
		assert.Equal(t, "acme", tied.Client)
		assert.Equal(t, "srv-1", tied.ServerID)
		assert.Equal(t, conduit.EraLegacy, tied.Era)
		assert.Equal(t, map[string]any{"who": "call"}, tied.Assigns)
		assert.Equal(t, fmt.Sprint(call["id"]), tied.RelatedRequestID.String())
		assert.Equal(t, `"s1"`, tied.RequestID.String())
		free := h.seen[1]
		assert.Equal(t, map[string]any{"who": "client"}, free.Assigns)
		assert.True(t, free.RelatedRequestID.IsZero())
	})
}

func TestTwoCallsInFlightMeanNoRelatedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{}
		c, srv := connect(t, conduit.Options{Handler: h, Assigns: map[string]any{"who": "client"}}, "2025-11-25")
		d1 := callAsync(c, "a", conduit.WithAssigns(map[string]any{"who": "a"}))
		d2 := callAsync(c, "b", conduit.WithAssigns(map[string]any{"who": "b"}))
		c1, c2 := srv.next(), srv.next()
		srv.request("r", "roots/list", nil)
		srv.expectResponse("r")
		srv.reply(c1["id"], map[string]any{"content": []any{}})
		srv.reply(c2["id"], map[string]any{"content": []any{}})
		<-d1
		<-d2
		require.Len(t, h.seen, 1)
		assert.True(t, h.seen[0].RelatedRequestID.IsZero())
		assert.Equal(t, map[string]any{"who": "client"}, h.seen[0].Assigns)
	})
}

func TestHandlerTimeoutsPerKind(t *testing.T) {
	for _, tc := range []struct {
		method string
		params any
		want   time.Duration
	}{
		{"elicitation/create", formParams, 5 * time.Minute},
		{"roots/list", nil, 60 * time.Second},
	} {
		t.Run(tc.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := &handler{
					elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
						return nil, block(ctx)
					},
					roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
						return nil, block(ctx)
					},
				}
				_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
				start := time.Now()
				srv.request(1, tc.method, tc.params)
				e := srv.expectError(1, messages.CodeInternalError)
				assert.Equal(t, tc.want, time.Since(start))
				assert.Contains(t, e["message"], "timed out after "+tc.want.String())
			})
		})
	}
}

func TestHandlerTimeoutOptionOverridesEveryKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return nil, block(ctx)
		}}
		_, srv := connect(t, conduit.Options{Handler: h, HandlerTimeout: 3 * time.Second}, "2025-11-25")
		start := time.Now()
		srv.request(1, "elicitation/create", formParams)
		srv.expectError(1, messages.CodeInternalError)
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

func TestBusyBeyondMaxServerRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			<-release
			return &conduit.ListRootsResult{}, nil
		}}
		var audits []conduit.AuditRecord
		c, srv := connect(t, conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { audits = append(audits, r) }}, "2025-11-25")
		// The default is the root's constant: the one that bites.
		const n = conduit.DefaultMaxServerRequests
		for i := range n {
			srv.request(i, "roots/list", nil)
		}
		synctest.Wait()
		assert.Equal(t, n, h.count())
		srv.request(n, "roots/list", nil)
		e := srv.expectError(n, messages.CodeBusy)
		assert.Equal(t, fmt.Sprintf("Server busy: %d requests already running", n), e["message"])
		assert.Equal(t, n, h.count())
		close(release)
		seen := map[float64]bool{}
		for range n {
			m := srv.next()
			seen[m["id"].(float64)] = true
		}
		assert.Len(t, seen, n)
		// Slots are free again.
		srv.request(n+1, "roots/list", nil)
		srv.expectResponse(n + 1)
		assert.EqualValues(t, 1, c.Stats().Busy)
		synctest.Wait()
		require.NotEmpty(t, audits)
		assert.Equal(t, "busy", audits[0].Outcome)
		assert.Equal(t, messages.CodeBusy, *audits[0].Code)
	})
}

func TestServerCancellationCancelsHandlerAndSendsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cancelled := make(chan error, 1)
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			<-ctx.Done()
			cancelled <- ctx.Err()
			return &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "late"}}, nil
		}}
		_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.request(7, "elicitation/create", formParams)
		synctest.Wait()
		srv.notify("notifications/cancelled", map[string]any{"requestId": 7, "reason": "user left"})
		assert.ErrorIs(t, <-cancelled, context.Canceled)
		// The next frame the server sees is the ping answer, not id 7.
		srv.request("after", "ping", nil)
		srv.expectResponse("after")
	})
}

func TestPanicAnswersInternalErrorAndTheRestGoOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(ctx context.Context, r *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			if r.RequestID.String() == "1" {
				panic("boom")
			}
			return &conduit.ListRootsResult{}, nil
		}}
		_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		e := srv.expectError(1, messages.CodeInternalError)
		assert.Equal(t, "Internal error: input handler panicked", e["message"])
		srv.request(2, "roots/list", nil)
		srv.expectResponse(2)
	})
}

func TestHandlerRPCErrorIsSentAsIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, fmt.Errorf("wrapped: %w", &conduit.RPCError{Code: -32042, Message: "no"})
		}}
		_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		e := srv.expectError(1, -32042)
		assert.Equal(t, "no", e["message"])
	})
}

// A handler's own error whose Data is not JSON cannot be sent as is: the
// server still gets an answer, -32603.
func TestHandlerRPCErrorThatCannotBeEncodedIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, &conduit.RPCError{Code: -32042, Message: "no", Data: json.RawMessage(`{not json`)}
		}}
		_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		e := srv.expectError(1, -32603)
		assert.Equal(t, "Internal error: answer could not be encoded", e["message"])
	})
}

func TestCallTimeoutSendsCancelledAndSaysHowLong(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		done := callAsync(c, "slow", conduit.WithTimeout(10*time.Second))
		call := srv.next()
		n := srv.next()
		assert.Equal(t, "notifications/cancelled", n["method"])
		assert.Equal(t, call["id"], n["params"].(map[string]any)["requestId"])
		r := <-done
		var ce *conduit.Error
		require.ErrorAs(t, r.err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, 10*time.Second, ce.Active)
		assert.Equal(t, time.Duration(0), ce.Paused)
		assert.Contains(t, ce.Error(), "active 10s, paused for input 0s")
		// A late answer is dropped and counted.
		srv.reply(call["id"], map[string]any{"content": []any{}})
		srv.request("sync", "ping", nil)
		srv.expectResponse("sync")
		assert.EqualValues(t, 1, c.Stats().UnknownResponses)
	})
}

func TestInputPausesTheCallDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(30 * time.Second) // a person answering
			return &conduit.ElicitResult{Action: "decline"}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		done := callAsync(c, "ask", conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(time.Minute))
		call := srv.next()
		time.Sleep(4 * time.Second)
		srv.request("e", "elicitation/create", formParams)
		srv.expectResponse("e") // 30 s later: the 10 s deadline was paused
		time.Sleep(5 * time.Second)
		srv.reply(call["id"], map[string]any{"content": []any{}})
		r := <-done
		require.NoError(t, r.err)
	})
}

func TestPausedCallStillExpiresAfterRemainingTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			time.Sleep(30 * time.Second)
			return &conduit.ElicitResult{Action: "decline"}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		start := time.Now()
		done := callAsync(c, "ask", conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(time.Minute))
		srv.next()
		time.Sleep(4 * time.Second)
		srv.request("e", "elicitation/create", formParams)
		srv.expectResponse("e")
		r := <-done // 6 s of deadline were left after the pause
		var ce *conduit.Error
		require.ErrorAs(t, r.err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, 40*time.Second, time.Since(start))
		assert.Equal(t, 40*time.Second, ce.Active)
		assert.Equal(t, 30*time.Second, ce.Paused)
		assert.Contains(t, ce.Error(), "active 40s, paused for input 30s")
	})
}

func TestPauseNeverBeyondMaxTotalTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{elicit: func(ctx context.Context, _ *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return nil, block(ctx)
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		start := time.Now()
		done := callAsync(c, "ask", conduit.WithTimeout(10*time.Second), conduit.WithMaxTotalTimeout(20*time.Second))
		call := srv.next()
		srv.request("e", "elicitation/create", formParams)
		r := <-done
		var ce *conduit.Error
		require.ErrorAs(t, r.err, &ce)
		assert.Equal(t, conduit.KindTimeout, ce.Kind)
		assert.Equal(t, 20*time.Second, time.Since(start))
		assert.Equal(t, 20*time.Second, ce.Paused)
		assert.Contains(t, ce.Error(), "max total timeout of 20s")
		n := srv.next()
		assert.Equal(t, "notifications/cancelled", n["method"])
		assert.Equal(t, call["id"], n["params"].(map[string]any)["requestId"])
	})
}

func TestCallerCancellationSendsCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, "x", nil)
			errc <- err
		}()
		call := srv.next()
		cancel()
		err := <-errc
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindCancelled, ce.Kind)
		n := srv.next()
		assert.Equal(t, "notifications/cancelled", n["method"])
		assert.Equal(t, call["id"], n["params"].(map[string]any)["requestId"])
	})
}

func TestBadInputFromServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, block(ctx)
		}}
		c, srv := connect(t, conduit.Options{Handler: h, HandlerTimeout: time.Second}, "2025-11-25")

		srv.sendRaw(`{"jsonrpc":"2.0","id":1,"method":`) // truncated
		e := srv.expectError(nil, messages.CodeParseError)
		assert.True(t, strings.HasPrefix(e["message"].(string), "Parse error"))

		srv.sendRaw(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`) // a batch
		srv.expectError(nil, messages.CodeInvalidRequest)

		srv.sendRaw(`{"jsonrpc":"1.0","id":5,"method":"ping"}`)
		srv.expectError(5, messages.CodeInvalidRequest)

		srv.sendRaw(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`)
		srv.expectError(nil, messages.CodeInvalidRequest)

		srv.request(9, "sampling/createMessage", "not an object")
		srv.expectError(9, messages.CodeInvalidRequest)

		// A response to an id nobody asked for: dropped and counted.
		srv.reply(424242, map[string]any{})

		// A second request with the id of one still running.
		srv.request(3, "roots/list", nil)
		synctest.Wait()
		srv.request(3, "roots/list", nil)
		srv.expectError(3, messages.CodeInvalidRequest)
		srv.expectError(3, messages.CodeInternalError) // the first one times out

		srv.request("p", "ping", nil)
		srv.expectResponse("p")
		st := c.Stats()
		assert.EqualValues(t, 5, st.Malformed)
		assert.EqualValues(t, 1, st.UnknownResponses)
	})
}

func TestServerExitFailsPendingCallsWithTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, block(ctx)
		}}
		clientSide, serverSide := transport.NewMemoryPair()
		srv := newFakeServer(t, serverSide)
		cc := make(chan *conduit.Client, 1)
		go func() {
			c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{Handler: h})
			assert.NoError(t, err)
			cc <- c
		}()
		srv.handshake("2025-11-25")
		c := <-cc
		d1 := callAsync(c, "a")
		d2 := callAsync(c, "b")
		srv.next()
		srv.next()
		srv.request(1, "roots/list", nil)
		synctest.Wait()
		require.NoError(t, serverSide.Close()) // the server goes away
		for _, d := range []<-chan callResult{d1, d2} {
			var ce *conduit.Error
			require.ErrorAs(t, (<-d).err, &ce)
			assert.Equal(t, conduit.KindTransport, ce.Kind)
		}
		<-c.Done()
		var ce *conduit.Error
		require.ErrorAs(t, c.Err(), &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind)
		_, err := c.CallTool(context.Background(), "after", nil)
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindTransport, ce.Kind)
		require.NoError(t, c.Close())
		for range srv.in {
		}
	})
}

func TestCloseFailsCallsWithClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		d := callAsync(c, "a")
		srv.next()
		require.NoError(t, c.Close())
		var ce *conduit.Error
		require.ErrorAs(t, (<-d).err, &ce)
		assert.Equal(t, conduit.KindClosed, ce.Kind)
	})
}

func TestRPCErrorFromServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		d := callAsync(c, "nope")
		call := srv.next()
		srv.send(map[string]any{"jsonrpc": "2.0", "id": call["id"], "error": map[string]any{"code": -32602, "message": "unknown tool"}})
		err := (<-d).err
		var ce *conduit.Error
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, conduit.KindRPC, ce.Kind)
		assert.True(t, errors.Is(err, messages.ErrInvalidParams))
	})
}

func TestHandlerIgnoringItsContextIsAbandonedAndCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			<-release // ignores ctx
			return &conduit.ListRootsResult{}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h, HandlerTimeout: time.Second}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		srv.expectError(1, messages.CodeInternalError)
		synctest.Wait()
		assert.EqualValues(t, 1, c.Stats().AbandonedHandlers)
		close(release)
		synctest.Wait()
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
		// Its late answer was discarded: the next frame answers the ping.
		srv.request("p", "ping", nil)
		srv.expectResponse("p")
	})
}

func TestAuditRecordsOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu = make(chan conduit.AuditRecord, 16)
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, block(ctx)
		}}
		_, srv := connect(t, conduit.Options{Handler: h, ServerID: "s", HandlerTimeout: time.Second, Sampling: conduit.SamplingOptions{AllowIdle: true}, Audit: func(r conduit.AuditRecord) { mu <- r }}, "2025-11-25")
		srv.request(1, "elicitation/create", formParams) // answered (decline)
		srv.expectResponse(1)
		srv.request(2, "roots/list", nil) // timeout
		srv.expectError(2, messages.CodeInternalError)
		srv.request(3, "sampling/createMessage", map[string]any{"maxTokens": "many"}) // refused by the guards
		srv.expectError(3, messages.CodeInvalidParams)
		want := []struct {
			id      string
			outcome string
			code    int
		}{{"1", "answered", 0}, {"2", "timeout", messages.CodeInternalError}, {"3", "refused", messages.CodeInvalidParams}}
		for _, w := range want {
			r := <-mu
			assert.Equal(t, w.id, r.RequestID.String())
			assert.Equal(t, w.outcome, r.Outcome)
			assert.Equal(t, "s", r.ServerID)
			if w.code == 0 {
				assert.Nil(t, r.Code)
				assert.Equal(t, &conduit.ElicitResult{Action: "decline"}, r.Result)
			} else {
				require.NotNil(t, r.Code)
				assert.Equal(t, w.code, *r.Code)
			}
		}
	})
}

// The schema of go-sdk's test_elicitation_sep1330_enums: every enum shape.
var sep1330Schema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"untitledSingle": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}},
		"titledSingle": map[string]any{"type": "string", "oneOf": []any{
			map[string]any{"const": "value1", "title": "First Option"},
			map[string]any{"const": "value2", "title": "Second Option"},
		}},
		"legacyEnum": map[string]any{"type": "string", "enum": []any{"opt1", "opt2"}, "enumNames": []any{"Option One", "Option Two"}},
		"untitledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
			"items": map[string]any{"type": "string", "enum": []any{"option1", "option2", "option3"}}},
		"titledMulti": map[string]any{"type": "array", "minItems": 1, "maxItems": 3,
			"items": map[string]any{"anyOf": []any{
				map[string]any{"const": "value1", "title": "First Option"},
				map[string]any{"const": "value2", "title": "Second Option"},
			}}},
	},
}

func TestEverySep1330EnumShapePassesTheGuards(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answer := map[string]any{
			"untitledSingle": "option2", "titledSingle": "value2", "legacyEnum": "opt1",
			"untitledMulti": []any{"option1", "option3"}, "titledMulti": []any{"value2"},
		}
		h := &handler{elicit: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
			return &conduit.ElicitResult{Action: "accept", Content: answer}, nil
		}}
		_, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.request(1, "elicitation/create", map[string]any{"message": "enums", "requestedSchema": sep1330Schema})
		m := srv.expectResponse(1)
		assert.Equal(t, map[string]any{"action": "accept", "content": answer}, m["result"])
		assert.Equal(t, 1, h.count())
	})
}

func TestCloseCancelsRunningHandlersAndAuditsThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := make(chan conduit.AuditRecord, 4)
		h := &handler{roots: func(ctx context.Context, _ *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return nil, block(ctx)
		}}
		c, srv := connect(t, conduit.Options{Handler: h, Audit: func(r conduit.AuditRecord) { got <- r }}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		synctest.Wait()
		require.NoError(t, c.Close())
		r := <-got
		assert.Equal(t, "cancelled", r.Outcome)
		assert.Nil(t, r.Code)
		assert.Empty(t, got, "audited once")
		synctest.Wait() // the handler returns once its ctx is cancelled
		assert.EqualValues(t, 0, c.Stats().AbandonedHandlers)
	})
}

func TestListToolsFollowsPagination(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, srv := connect(t, conduit.Options{}, "2025-11-25")
		type out struct {
			tools []conduit.Tool
			err   error
		}
		done := make(chan out, 1)
		go func() {
			tools, err := c.ListTools(context.Background())
			done <- out{tools, err}
		}()
		first := srv.next()
		assert.Equal(t, "tools/list", first["method"])
		srv.reply(first["id"], map[string]any{"tools": []any{map[string]any{"name": "a"}}, "nextCursor": "page2"})
		second := srv.next()
		assert.Equal(t, map[string]any{"cursor": "page2"}, second["params"])
		srv.reply(second["id"], map[string]any{"tools": []any{map[string]any{"name": "b"}}})
		r := <-done
		require.NoError(t, r.err)
		require.Len(t, r.tools, 2)
		assert.Equal(t, "a", r.tools[0].Name)
		assert.Equal(t, "b", r.tools[1].Name)
	})
}

// An answer the handler gave before Close, whose request child reports it
// to the connection only after Close began, is still sent (its record
// says answered: sent): it was dropped, the child no longer listed.
func TestAnswerGivenBeforeCloseIsSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		audit := func(r conduit.AuditRecord) {
			if r.Outcome == conduit.OutcomeAnswered {
				<-release // the child has its answer and is held before reporting it
			}
		}
		c, srv := connect(t, conduit.Options{Handler: &handler{}, Audit: audit}, "2025-11-25")
		srv.request(1, "roots/list", nil)
		synctest.Wait()
		closeWhileHeld(t, c, release)
		m := srv.expectResponse(1)
		assert.Equal(t, map[string]any{"roots": []any{map[string]any{"uri": "file:///srv/repo", "name": "repo"}}}, m["result"])
	})
}
