package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseSDKServer serves server on go-sdk v1.8.0's HTTP+SSE handler.
func sseSDKServer(t *testing.T, server *mcp.Server) string {
	t.Helper()
	srv := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

func dialSSE(t *testing.T, s SSE) Conn {
	t.Helper()
	conn, err := s.Connect(context.Background())
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

const legacyInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}`

// The go-sdk server on HTTP+SSE: the handshake, tools/list, tools/call,
// and a server request (roots/list) that arrives on the stream and whose
// answer is POSTed.
func TestSSEWithSDK(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		//lint:ignore SA1019 roots in 2024-11-05 are what is tested
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Roots[0].URI}}}, nil, nil
	})
	c := dialSSE(t, SSE{URL: sseSDKServer(t, server)})
	if got := c.(Origin).Origin(); !strings.HasPrefix(got, "http://127.0.0.1:") {
		t.Fatalf("Origin = %q", got)
	}

	send(t, c, legacyInit)
	r, _ := readResponse(t, c, "1")
	if r.Error != nil || !strings.Contains(string(r.Result), `"protocolVersion":"2024-11-05"`) {
		t.Fatalf("initialize: %s %+v", r.Result, r.Error)
	}
	send(t, c, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	r, _ = readResponse(t, c, "2")
	if !strings.Contains(string(r.Result), `"name":"roots"`) {
		t.Fatalf("tools/list: %s", r.Result)
	}
	send(t, c, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"roots","arguments":{}}}`)
	req := decode(t, next(t, c))
	if req.Method != "roots/list" {
		t.Fatalf("want roots/list, got %+v", req)
	}
	send(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///srv"}]}}`, req.ID))
	r, _ = readResponse(t, c, "3")
	if !strings.Contains(string(r.Result), "file:///srv") {
		t.Fatalf("tools/call: %s %+v", r.Result, r.Error)
	}
}

// scriptedSSE serves GET with the events first writes, then holds the
// stream until the request ends (or ends it at once when hold is false);
// POSTs get post's status.
func scriptedSSE(t *testing.T, first string, hold bool, post int) (url string, closed <-chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			io.Copy(io.Discard, r.Body)
			w.WriteHeader(post)
			if post >= 400 {
				io.WriteString(w, "no such session")
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		if hold {
			<-r.Context().Done()
			done <- struct{}{}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/sse", done
}

// An endpoint event that names another origin fails Connect: the client's
// messages are never sent elsewhere. So does a stream that ends before
// any endpoint, and a GET that is not an event stream.
func TestSSEHostileEndpoint(t *testing.T) {
	for _, tc := range []struct{ name, events, want string }{
		{"absolute", "event: endpoint\ndata: http://evil.example/messages\n\n", "names another origin (http://evil.example); refused"},
		{"scheme-relative", "event: endpoint\ndata: //evil.example:80/messages\n\n", "names another origin (http://evil.example:80); refused"},
		{"other scheme", "event: endpoint\ndata: https://127.0.0.1/messages\n\n", "names another origin (https://127.0.0.1); refused"},
		{"none", "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n", "ended before its endpoint event: EOF"},
		{"too long", "event: endpoint\ndata: /" + strings.Repeat("a", maxEndpointBytes) + "\n\n", "is 8193 bytes, over 8 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, _ := scriptedSSE(t, tc.events, false, 202)
			_, err := (&SSE{URL: url}).Connect(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Connect: %v, want %q", err, tc.want)
			}
		})
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := (&SSE{URL: srv.URL}).Connect(context.Background())
	var status *HTTPStatusError
	if !errors.As(err, &status) || status.Status != 404 {
		t.Fatalf("Connect to a 404: %v", err)
	}
}

// The endpoint is resolved against the SSE URL; a message before it is
// kept; the server ending the stream ends Read with an error wrapping
// io.EOF once what came before is read.
func TestSSEStreamLifecycle(t *testing.T) {
	got := make(chan string, 4)
	seen := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			got <- r.URL.RequestURI() + " " + string(b)
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"early\"}\n\nevent: endpoint\ndata: messages?s=1\n\n")
			w.(http.Flusher).Flush()
			body := <-got // the client's first POST
			seen <- body
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
		}
	}))
	defer srv.Close()
	c := dialSSE(t, SSE{URL: srv.URL + "/mcp/sse"})
	if m := decode(t, next(t, c)); m.Method != "early" {
		t.Fatalf("first message %+v", m)
	}
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if r, _ := readResponse(t, c, "1"); string(r.Result) != "{}" {
		t.Fatalf("ping: %s", r.Result)
	}
	if want, posted := `/mcp/messages?s=1 {"jsonrpc":"2.0","id":1,"method":"ping"}`, <-seen; posted != want {
		t.Fatalf("posted %q, want %q", posted, want)
	}
	_, err := c.Read(context.Background())
	if !errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "the server ended the SSE stream") {
		t.Fatalf("Read after the stream ended: %v", err)
	}
}

// A refused POST of a request fails that request only, with the status;
// Close ends the GET stream (the server sees its request end).
func TestSSERefusedPostAndClose(t *testing.T) {
	url, closed := scriptedSSE(t, "event: endpoint\ndata: /messages\n\n", true, http.StatusNotFound)
	conn, err := (&SSE{URL: url}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send(t, conn, `{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	err = nextFailure(t, conn, `"a"`)
	var status *HTTPStatusError
	if !errors.As(err, &status) || status.Status != 404 || err.Error() != "transport: HTTP 404 Not Found: no such session" {
		t.Fatalf("failure: %v", err)
	}
	send(t, conn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`) // logged, not an error
	conn.Close()
	<-closed
	if _, err := conn.Read(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"x"}`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

// An event over MaxEventBytes ends the stream with *MessageTooLongError
// naming SSE's setting; the messages before it are read first.
func TestSSEEventTooLong(t *testing.T) {
	big, _ := json.Marshal(strings.Repeat("x", 2000))
	events := "event: endpoint\ndata: /m\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"small\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"big\",\"params\":{\"s\":" + string(big) + "}}\n\n"
	url, _ := scriptedSSE(t, events, true, 202)
	c := dialSSE(t, SSE{URL: url, MaxEventBytes: 1024})
	if m := decode(t, next(t, c)); m.Method != "small" {
		t.Fatalf("got %+v", m)
	}
	_, err := c.Read(context.Background())
	var tooLong *MessageTooLongError
	if !errors.As(err, &tooLong) || tooLong.Setting != "transport.SSE.MaxEventBytes" || tooLong.Limit != 1024 {
		t.Fatalf("Read: %v", err)
	}
}

// roundTripFunc is an http.RoundTripper in a func: a server without a
// socket, which a synctest bubble can wait on.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server that opens the event stream and never names an endpoint fails
// Connect after ConnectTimeout; one whose Connect ctx ends first fails
// with that ctx's error. The stream is closed either way.
func TestSSENoEndpointInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		closed := make(chan struct{}, 2)
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			pr, pw := io.Pipe()
			context.AfterFunc(r.Context(), func() { pw.CloseWithError(context.Cause(r.Context())); closed <- struct{}{} })
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
		})}
		start := time.Now()
		_, err := (&SSE{URL: "http://srv/sse", Client: client, ConnectTimeout: 5 * time.Second}).Connect(context.Background())
		if err == nil || err.Error() != "transport: no endpoint event from http://srv/sse within 5s" {
			t.Fatalf("Connect: %v", err)
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Fatalf("gave up after %v", d)
		}
		<-closed

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = (&SSE{URL: "http://srv/sse", Client: client}).Connect(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Connect: %v", err)
		}
		<-closed
	})
}

// The stream is not read on while Read's caller is MaxQueuedBytes behind:
// the server's writes wait, and everything arrives in order once Read
// catches up.
func TestSSEStreamWaitsWhileTheQueueIsFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const events, size = 64, 1 << 20
		payload := strings.Repeat("x", size-80)
		written := 0
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPost {
				return &http.Response{StatusCode: 202, Body: http.NoBody, Request: r}, nil
			}
			pr, pw := io.Pipe()
			context.AfterFunc(r.Context(), func() { pw.CloseWithError(context.Cause(r.Context())) })
			go func() {
				io.WriteString(pw, "event: endpoint\ndata: /m\n\n")
				for i := range events {
					if _, err := fmt.Fprintf(pw, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"%d %s\"}}\n\n", i, payload); err != nil {
						return
					}
					written++
				}
			}()
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, Request: r}, nil
		})}
		conn, err := (&SSE{URL: "http://srv/sse", Client: client}).Connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		synctest.Wait()
		c := conn.(*sseConn)
		c.mu.Lock()
		queued := c.in.bytes
		c.mu.Unlock()
		if queued > MaxQueuedBytes+size || written >= events {
			t.Fatalf("%d MiB queued with nobody reading (%d events written), want at most %d MiB", queued>>20, written, (MaxQueuedBytes+size)>>20)
		}
		for i := range events {
			m := next(t, conn)
			if want := fmt.Sprintf(`"data":"%d `, i); !strings.Contains(string(m.Data[:80]), want) {
				t.Fatalf("message %d: got %.80s", i, m.Data)
			}
		}
	})
}
