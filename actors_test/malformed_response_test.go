package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

// A malformed answer to a call in flight fails that call at once
// (KindProtocol, saying what was wrong), on every transport: the runtime
// and the transports agree on which call a response names
// (messages.ResponseTo), so none of them waits for another answer.

// malformedAnswers are answers to the call with id %[1]s, each wrong in
// one way, and what the call's error then says.
var malformedAnswers = []struct {
	name, format, want string
}{
	{"both result and error", `{"jsonrpc":"2.0","id":%s,"result":{"content":[]},"error":{"code":-32603,"message":"boom"}}`,
		`malformed response: a response needs exactly one of "result" and "error"`},
	{"neither", `{"jsonrpc":"2.0","id":%s}`, `malformed response: a response needs exactly one of "result" and "error"`},
	{"id written as a float", `{"jsonrpc":"2.0","id":%s.0,"result":{"content":[]}}`,
		`malformed response: jsonrpc: id %s.0 is not an integer (ids are strings or integers)`},
	{"not UTF-8", "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xc3\x28\"}]}}",
		"malformed response: the message is not valid UTF-8"},
}

// requireMalformed checks err is the KindProtocol failure of tools/call
// that says want.
func requireMalformed(t *testing.T, err error, want string) {
	t.Helper()
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindProtocol, ce.Kind, err.Error())
	assert.Equal(t, "tools/call", ce.Method)
	assert.Equal(t, want, ce.Message)
	assert.Nil(t, ce.RPC, "no JSON-RPC error: the answer could not be read")
}

func TestMalformedAnswerFailsTheCallAtOnce(t *testing.T) {
	for _, tc := range malformedAnswers {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, srv := connect(t, conduit.Options{}, "2025-11-25")
				start := time.Now()
				d := callAsync(c, "anything", conduit.WithTimeout(10*time.Second))
				call := srv.next()
				require.Equal(t, "tools/call", call["method"])
				id := fmt.Sprint(call["id"])
				srv.sendRaw(fmt.Sprintf(tc.format, id))
				r := <-d
				assert.Zero(t, time.Since(start), "failed at once, not at the deadline")
				requireMalformed(t, r.err, strings.ReplaceAll(tc.want, "%s", id))
				assert.EqualValues(t, 1, c.Stats().Malformed)
				assert.Zero(t, c.Stats().UnknownResponses)
				// The bad message is answered as any, with a null id: its id
				// is the client's own, not one of the server's requests.
				bad := srv.next()
				assert.Contains(t, bad, "error", "frame: %v", bad)
				require.Contains(t, bad, "id")
				assert.Nil(t, bad["id"], "frame: %v", bad)
				// The connection goes on.
				d = callAsync(c, "anything")
				call = srv.next()
				srv.reply(call["id"], map[string]any{"content": []any{}})
				require.NoError(t, (<-d).err)
			})
		})
	}
}

// The transport ends the request a malformed answer names and the call
// fails at once, on a response stream the server keeps open (legacy SSE)
// and in a JSON body (modern).
func TestHTTPMalformedAnswerFailsTheCallAtOnce(t *testing.T) {
	for _, sse := range []bool{true, false} {
		for _, tc := range malformedAnswers {
			t.Run(fmt.Sprintf("sse=%v/%s", sse, tc.name), func(t *testing.T) {
				ids := make(chan string, 1)
				closed := make(chan struct{})
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method != http.MethodPost {
						w.WriteHeader(http.StatusMethodNotAllowed)
						return
					}
					method, id := rpcOf(t, r)
					switch {
					case method == "server/discover" && sse:
						w.WriteHeader(http.StatusNotFound) // legacy
					case method == "server/discover":
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"1"}}}}`, id)
					case method == "initialize":
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}}`, id)
					case method != "tools/call":
						w.WriteHeader(http.StatusAccepted)
					case !sse:
						ids <- string(id)
						w.Header().Set("Content-Type", "application/json")
						fmt.Fprintf(w, tc.format, id)
					default:
						ids <- string(id)
						w.Header().Set("Content-Type", "text/event-stream")
						fmt.Fprintf(w, "id: e1\ndata: "+tc.format+"\n\n", id)
						w.(http.Flusher).Flush()
						<-r.Context().Done() // held open: only the client ends it
						close(closed)
					}
				}))
				defer srv.Close()
				c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL + "/mcp"}, conduit.Options{})
				require.NoError(t, err)
				defer c.Close()
				want := conduit.EraModern
				if sse {
					want = conduit.EraLegacy
				}
				require.Equal(t, want, c.Era())
				start := time.Now()
				_, err = c.CallTool(connectCtx(t), "anything", nil, conduit.WithTimeout(5*time.Second))
				assert.Less(t, time.Since(start), 4*time.Second, "failed at once, not at the deadline")
				requireMalformed(t, err, strings.ReplaceAll(tc.want, "%s", <-ids))
				assert.EqualValues(t, 1, c.Stats().Malformed)
				if sse {
					select {
					case <-closed: // the client ended the stream: it too took the answer as the call's
					case <-time.After(4 * time.Second):
						t.Fatal("the response stream was left open")
					}
				}
			})
		}
	}
}

// A message that is not UTF-8 is not JSON: a request whose id holds
// invalid UTF-8 is answered -32700 with a null id (never with the id
// decoded, "\ufffd(", which the server cannot correlate), counted as
// malformed, and no handler runs.
func TestRequestWithAnIDThatIsNotUTF8IsAParseError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{}, nil
		}}
		c, srv := connect(t, conduit.Options{Handler: h}, "2025-11-25")
		srv.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}")
		raw := srv.nextRaw()
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the message is not valid UTF-8"}}`, raw)
		srv.sendRaw("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"roots/list\",\"params\":{\"_meta\":{\"k\":\"\xff\"}}}")
		raw = srv.nextRaw()
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the message is not valid UTF-8"}}`, raw)
		// An id with an unpaired surrogate escape would decode to U+FFFD too.
		srv.sendRaw(`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`)
		raw = srv.nextRaw()
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: jsonrpc: string id is not valid Unicode"}}`, raw)
		st := c.Stats()
		assert.EqualValues(t, 3, st.Malformed)
		assert.Zero(t, st.ServerRequests)
		assert.Zero(t, h.count())
	})
}

// Over a real stdio subprocess: the malformed answers fail the call at
// once, each in its turn, and the connection goes on.
func TestStdioMalformedAnswerFailsTheCallAtOnce(t *testing.T) {
	script := `read init; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"bad","version":"1"}}}'; read initialized; `
	for i, tc := range malformedAnswers {
		// Up to the next call (the client answers each bad message too).
		script += `while read line; do case "$line" in *tools/call*) break;; esac; done; `
		script += fmt.Sprintf(`printf '%%s\n' '%s'; `, strings.ReplaceAll(tc.format, "%s", fmt.Sprint(i+2)))
	}
	script += `cat >/dev/null`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.Command{Path: "sh", Args: []string{"-c", script}, CloseTimeout: time.Second}, conduit.Options{Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	for i, tc := range malformedAnswers {
		start := time.Now()
		_, err := c.CallTool(ctx, "anything", nil, conduit.WithTimeout(5*time.Second))
		assert.Less(t, time.Since(start), 4*time.Second, "failed at once, not at the deadline")
		requireMalformed(t, err, strings.ReplaceAll(tc.want, "%s", fmt.Sprint(i+2)))
	}
	assert.EqualValues(t, len(malformedAnswers), c.Stats().Malformed)
}

// Over Streamable HTTP, a request on a call's stream whose id is not UTF-8
// is answered -32700 with a null id, and the call goes on to its result.
func TestHTTPRequestWithAnIDThatIsNotUTF8IsAParseError(t *testing.T) {
	answers := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &m)
		switch {
		case m.Method == "server/discover":
			w.WriteHeader(http.StatusNotFound)
		case m.Method == "initialize":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"bad","version":"1"}}}`, m.ID)
		case m.Method == "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}\n\n")
			w.(http.Flusher).Flush()
			// The result once the answer came (it does: -32700, null id).
			<-answered(answers)
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", m.ID)
		case m.Method == "" && m.ID != nil:
			answers <- string(body)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	c, err := conduit.Connect(connectCtx(t), &transport.HTTP{URL: srv.URL + "/mcp"}, conduit.Options{})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CallTool(connectCtx(t), "anything", nil, conduit.WithTimeout(5*time.Second))
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the message is not valid UTF-8"}}`, <-answers)
	assert.EqualValues(t, 1, c.Stats().Malformed)
}

// answered returns a channel closed once answers has a value (put back
// for the test to read).
func answered(answers chan string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		a := <-answers
		answers <- a
		close(done)
	}()
	return done
}
