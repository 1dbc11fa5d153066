package actors_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/conduitmcp/conduit/transport"
)

// scriptedServer is an MCP server reduced to pre-built bytes, so that a
// benchmark measures the client, not the server. It reads the id and the
// method of each message by scanning for the first `"id":` and `"method":"`
// (every client benchmarked writes the envelope's members before params and
// result, in the order jsonrpc, id, method), and answers from templates:
//
//   - server/discover: a discover result (modern) or -32601 (legacy);
//   - initialize: a 2025-11-25 result; any other request: {};
//   - tools/call, legacy: one sampling/createMessage per call (burst of
//     them when the call names the tool "burst"), and the call's result
//     once every one is answered;
//   - tools/call, modern: input_required with one form elicitation (key
//     user_name) when the params carry no inputResponses, else the result.
//
// It runs on one goroutine; its state is that goroutine's.
type scriptedServer struct {
	conn   transport.Conn
	modern bool
	burst  int
	// failed counts answers that were not results (an error response to
	// a sampling request, or a retry without the answer).
	failed atomic.Int64
	done   chan struct{}

	next    int64
	pending map[int64]*scriptedCall // sampling request id → its call
}

type scriptedCall struct {
	id   []byte // the tools/call id, raw
	left int    // sampling requests not answered yet
}

// Pre-built pieces of the replies (an id goes between a prefix and its
// suffix).
var (
	scriptResultPrefix   = []byte(`{"jsonrpc":"2.0","id":`)
	scriptDiscoverLegacy = []byte(`,"error":{"code":-32601,"message":"Method not found"}}`)
	scriptDiscoverModern = []byte(`,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"scripted","version":"1"}}}}`)
	scriptInitialize     = []byte(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`)
	scriptEmpty          = []byte(`,"result":{}}`)
	scriptToolResult     = []byte(`,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}]}}`)
	scriptInputRequired  = []byte(`,"result":{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"s1"}}`)
	scriptSamplingPrefix = []byte(`{"jsonrpc":"2.0","id":`)
	scriptSamplingSuffix = []byte(`,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}`)
)

// scriptedWant is the text of every tools/call result of the scripted server.
const scriptedWant = "done"

// startScripted starts a scripted server on one end of a memory pair and
// returns the other end; the server stops when the client closes its end.
// burst is how many sampling requests a call of the tool "burst" gets.
func startScripted(tb testing.TB, modern bool, burst int) transport.Conn {
	tb.Helper()
	client, server := transport.NewMemoryPair()
	s := &scriptedServer{conn: server, modern: modern, burst: burst, done: make(chan struct{}), pending: map[int64]*scriptedCall{}}
	go s.run()
	tb.Cleanup(func() {
		_ = client.Close()
		<-s.done
		_ = server.Close()
		if n := s.failed.Load(); n > 0 {
			tb.Errorf("scripted server: %d answers were not results", n)
		}
	})
	return client
}

func (s *scriptedServer) run() {
	defer close(s.done)
	ctx := context.Background()
	var out []byte
	for {
		msg, err := s.conn.Read(ctx)
		if err != nil {
			return
		}
		d := msg.Data
		id := scanValue(d, `"id":`)
		method := scanString(d, `"method":"`)
		reply := func(body []byte) {
			out = append(append(append(out[:0], scriptResultPrefix...), id...), body...)
			_ = s.conn.Write(ctx, out) // Write copies out
		}
		switch {
		case method == "" && id != nil: // an answer to a sampling request
			n, err := strconv.ParseInt(string(id), 10, 64)
			c := s.pending[n]
			if err != nil || c == nil || !bytes.Contains(d, []byte(`"result":`)) {
				s.failed.Add(1)
				continue
			}
			delete(s.pending, n)
			if c.left--; c.left == 0 {
				id = c.id
				reply(scriptToolResult)
			}
		case id == nil: // a notification
		case method == "server/discover" && s.modern:
			reply(scriptDiscoverModern)
		case method == "server/discover":
			reply(scriptDiscoverLegacy)
		case method == "initialize":
			reply(scriptInitialize)
		case method == "tools/call" && s.modern:
			if bytes.Contains(d, []byte(`"inputResponses"`)) {
				if !bytes.Contains(d, []byte(`"Ada"`)) {
					s.failed.Add(1)
				}
				reply(scriptToolResult)
			} else {
				reply(scriptInputRequired)
			}
		case method == "tools/call":
			c := &scriptedCall{id: bytes.Clone(id), left: 1}
			if bytes.Contains(d, []byte(`"burst"`)) {
				c.left = s.burst
			}
			for range c.left {
				s.next++
				s.pending[s.next] = c
				out = append(strconv.AppendInt(append(out[:0], scriptSamplingPrefix...), s.next, 10), scriptSamplingSuffix...)
				_ = s.conn.Write(ctx, out)
			}
		default:
			reply(scriptEmpty)
		}
	}
}

// scanValue returns the raw JSON scalar after the first key (up to the
// next ',' or '}'), or nil.
func scanValue(d []byte, key string) []byte {
	i := bytes.Index(d, []byte(key))
	if i < 0 {
		return nil
	}
	v := d[i+len(key):]
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return nil
	}
	return bytes.TrimSpace(v[:end])
}

// scanString returns the string after the first key (which ends with the
// opening quote), or "".
func scanString(d []byte, key string) string {
	i := bytes.Index(d, []byte(key))
	if i < 0 {
		return ""
	}
	v := d[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end < 0 {
		return ""
	}
	return string(v[:end])
}

// memTransport lets the go-sdk client use one end of a memory pair: the
// same pipe Conduit and the floor client use, with the go-sdk's own
// encoding and decoding of each message.
type memTransport struct{ conn transport.Conn }

func (t memTransport) Connect(context.Context) (mcp.Connection, error) { return memConnection(t), nil }

type memConnection struct{ conn transport.Conn }

func (c memConnection) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	return jsonrpc.DecodeMessage(m.Data)
}

func (c memConnection) Write(ctx context.Context, msg jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.conn.Write(ctx, b)
}

func (c memConnection) Close() error      { return c.conn.Close() }
func (c memConnection) SessionID() string { return "" }

// errScripted is a floor client call that did not get the scripted result.
var errScripted = errors.New("unexpected result from the scripted server")

func scriptedCheck(text string) error {
	if text != scriptedWant {
		return fmt.Errorf("%w: %q", errScripted, text)
	}
	return nil
}
