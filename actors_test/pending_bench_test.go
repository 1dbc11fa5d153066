package actors_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// pendingSampling is the sampling request of BenchmarkPendingRequests: a
// system prompt, model preferences and a message, as a real server sends.
const pendingSampling = `","method":"sampling/createMessage","params":{"maxTokens":100,"systemPrompt":"You are a helpful assistant.",` +
	`"modelPreferences":{"hints":[{"name":"claude"}],"intelligencePriority":0.8},` +
	`"messages":[{"role":"user","content":{"type":"text","text":"What is the capital of France?"}}]}}`

// BenchmarkPendingRequests measures what a pending server request holds:
// conns connections (default Connect, the cap raised to perConn), each sent
// perConn sampling requests whose handler blocks, as when a person has not
// answered yet; once every handler is blocked it reports heap + stack in
// use per pending request (after GC) and goroutines per pending request,
// then releases them all and checks every one was answered. Beside it, the
// floor: a goroutine per request holding its decoded params, blocked the
// same way. A gateway holds thousands of these for minutes.
//
//	go test -run '^$' -bench BenchmarkPendingRequests -benchtime 1x ./actors_test/
func BenchmarkPendingRequests(b *testing.B) {
	const conns, perConn = 100, 100
	b.Run("conduit", func(b *testing.B) {
		for range b.N {
			benchPendingConduit(b, conns, perConn)
		}
	})
	b.Run("floor", func(b *testing.B) {
		for range b.N {
			benchPendingFloor(b, conns*perConn)
		}
	})
}

func benchPendingConduit(b *testing.B, conns, perConn int) {
	release := make(chan struct{})
	var blocked atomic.Int64
	opts := conduit.Options{
		InputRateLimit: rate.Inf, MaxServerRequests: perConn,
		Sampling: conduit.SamplingOptions{AllowIdle: true},
		Handlers: conduit.Handlers{Sampling: func(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
			blocked.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text("Paris"), Model: "test"}, nil
		}},
	}
	_, closeFirst := idleClient(b, opts)
	closeFirst() // what is made once per process
	b.StopTimer()
	before, goroutines := memInUse(), runtime.NumGoroutine()
	b.StartTimer()
	clients := make([]*conduit.Client, 0, conns)
	servers := make([]transport.Conn, 0, conns)
	for range conns {
		c, srv := handshaken(b, opts)
		clients, servers = append(clients, c), append(servers, srv)
		for i := range perConn {
			require.NoError(b, srv.Write(context.Background(), []byte(`{"jsonrpc":"2.0","id":"`+strconv.Itoa(i)+pendingSampling)))
		}
	}
	want := int64(conns * perConn)
	waitFor(b, func() bool { return blocked.Load() == want })
	b.StopTimer()
	after := memInUse()
	b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/float64(want), "B/pending")
	b.ReportMetric(float64(after.stack-before.stack)/float64(want), "stack-B/pending")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(want), "goroutines/pending")
	close(release)
	for i, srv := range servers {
		for range perConn {
			m, err := srv.Read(context.Background())
			require.NoError(b, err)
			require.Contains(b, string(m.Data), `"model":"test"`)
		}
		require.Zero(b, clients[i].Stats().Busy)
		_ = clients[i].Close()
		_ = srv.Close()
	}
	b.StartTimer()
}

// floorPending is what the floor's pending request holds: its id and its
// decoded params.
type floorPending struct {
	ID     json.RawMessage `json:"id"`
	Params struct {
		MaxTokens        int             `json:"maxTokens"`
		SystemPrompt     string          `json:"systemPrompt"`
		ModelPreferences json.RawMessage `json:"modelPreferences"`
		Messages         []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	} `json:"params"`
}

func benchPendingFloor(b *testing.B, n int) {
	release := make(chan struct{})
	var blocked atomic.Int64
	var wg sync.WaitGroup
	b.StopTimer()
	before, goroutines := memInUse(), runtime.NumGoroutine()
	b.StartTimer()
	for i := range n {
		data := []byte(`{"jsonrpc":"2.0","id":"` + strconv.Itoa(i) + pendingSampling)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p floorPending
			if err := json.Unmarshal(data, &p); err != nil {
				panic(err)
			}
			blocked.Add(1)
			<-release
			runtime.KeepAlive(&p)
		}()
	}
	waitFor(b, func() bool { return blocked.Load() == int64(n) })
	b.StopTimer()
	after := memInUse()
	b.ReportMetric(float64(after.heap+after.stack-before.heap-before.stack)/float64(n), "B/pending")
	b.ReportMetric(float64(after.stack-before.stack)/float64(n), "stack-B/pending")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(n), "goroutines/pending")
	close(release)
	wg.Wait()
	b.StartTimer()
}

// waitFor polls cond until it holds (a minute at most).
func waitFor(b *testing.B, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatal("condition not met within a minute")
		}
		time.Sleep(time.Millisecond)
	}
}
