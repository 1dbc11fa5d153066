package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/transport"
)

// stdioPipes serves one stdio client of g (ServeIO) over two pipes and
// returns the client's ends: what the gateway writes, and its input.
func stdioPipes(t *testing.T, g *Gateway) (io.ReadCloser, io.WriteCloser) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- g.ServeIO(context.Background(), c2sR, s2cW) }()
	t.Cleanup(func() {
		_ = c2sW.Close() // end of input: the session ends
		_ = s2cR.Close() // a late write fails instead of blocking
		select {
		case err := <-done:
			assert.NoError(t, err, "the end of input is a clean end")
		case <-time.After(30 * time.Second):
			t.Error("ServeIO did not return at the end of its input")
		}
	})
	return s2cR, c2sW
}

// linesConn is a transport.Conn over the client's ends of stdioPipes.
type linesConn struct {
	r  *bufio.Scanner
	rc io.Closer
	w  io.WriteCloser
	mu sync.Mutex
}

func (p *linesConn) Read(context.Context) (transport.Message, error) {
	if p.r.Scan() {
		return transport.Message{Data: append([]byte(nil), p.r.Bytes()...)}, nil
	}
	if err := p.r.Err(); err != nil {
		return transport.Message{}, err
	}
	return transport.Message{}, io.EOF
}

func (p *linesConn) Write(_ context.Context, data []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.w.Write(append(data, '\n'))
	return err
}

func (p *linesConn) Close() error {
	_ = p.w.Close()
	return p.rc.Close()
}

// stdioGateway is a gateway on a legacy-pinned and a modern-pinned
// everything-server, prefixed ("l", "m").
func stdioGateway(t *testing.T) *Gateway {
	bin := everything(t)
	g, _ := serve(t, host.Config{Servers: map[string]host.Server{
		"l": {Command: bin, Conduit: host.Settings{Era: conduit.EraLegacy}},
		"m": {Command: bin, Conduit: host.Settings{Era: conduit.EraModern}},
	}})
	return g
}

// elicitAnswer answers a form elicitation with the field its schema asks
// for ("name" for the MRTR tool, "username" for the legacy one).
func elicitAnswer(asked *atomic.Int64) func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
	return func(_ context.Context, req *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
		asked.Add(1)
		field := "username"
		if _, ok := req.Fields["name"]; ok {
			field = "name"
		}
		return &conduit.ElicitResult{Action: conduit.ActionAccept, Content: map[string]any{field: "Ada"}}, nil
	}
}

// Over stdio the gateway serves both eras, chosen by what the client
// sends first: Conduit's client pinned legacy (initialize) and pinned
// modern (_meta on each request) gets a plain call, an MRTR elicitation
// round of a modern upstream, and a legacy upstream's elicitation/create,
// each relayed to it and answered, with exact results.
func TestStdioServesBothEras(t *testing.T) {
	g := stdioGateway(t)
	for _, era := range []conduit.Era{conduit.EraLegacy, conduit.EraModern} {
		t.Run(string(era), func(t *testing.T) {
			r, w := stdioPipes(t, g)
			sc := bufio.NewScanner(r)
			sc.Buffer(nil, 4<<20)
			var asked atomic.Int64
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := conduit.Connect(ctx, transport.NewMemoryTransport(&linesConn{r: sc, rc: r, w: w}),
				conduit.Options{Era: era, Handlers: conduit.Handlers{Elicitation: elicitAnswer(&asked)}})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, era, c.Era())

			res, err := c.CallTool(ctx, "m__test_simple_text", nil)
			require.NoError(t, err)
			assert.Equal(t, "This is a simple text response for testing.", text(t, res))

			res, err = c.CallTool(ctx, "m__test_input_required_result_elicitation", map[string]any{})
			require.NoError(t, err)
			assert.Equal(t, "Hello, Ada!", text(t, res))
			assert.Equal(t, int64(1), asked.Load())

			res, err = c.CallTool(ctx, "l__test_elicitation", map[string]any{"message": "name?"})
			require.NoError(t, err)
			assert.Equal(t, "Elicitation result: action=accept, content=map[username:Ada]", text(t, res))
			assert.Equal(t, int64(2), asked.Load())
		})
	}
}

// The go-sdk client over stdio: by default it probes server/discover and
// goes modern (opening subscriptions/listen, as its list-changed handler
// asks), with ProtocolVersion 2025-11-25 it initializes; both get the
// same tools and input relayed, and the catalog's changes.
func TestStdioGoSDKClient(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			g := stdioGateway(t) // each its own: the catalog change below is once
			r, w := stdioPipes(t, g)
			var asked atomic.Int64
			changed := make(chan struct{}, 16)
			client := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "1"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					field := "username"
					if schema, _ := json.Marshal(req.Params.RequestedSchema); strings.Contains(string(schema), `"name"`) {
						field = "name"
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{field: "Ada"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: r, Writer: w}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err)
			defer cs.Close()
			want := "2026-07-28"
			if version != "" {
				want = version
			}
			assert.Equal(t, want, cs.InitializeResult().ProtocolVersion)

			call := func(name string, args map[string]any) string {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				require.NoError(t, err)
				require.False(t, res.IsError, "%s failed", name)
				require.Len(t, res.Content, 1)
				return res.Content[0].(*mcp.TextContent).Text
			}
			assert.Equal(t, "This is a simple text response for testing.", call("l__test_simple_text", map[string]any{}))
			assert.Equal(t, "Hello, Ada!", call("m__test_input_required_result_elicitation", map[string]any{}))
			assert.Equal(t, "Elicitation result: action=accept, content=map[username:Ada]", call("l__test_elicitation", map[string]any{"message": "name?"}))
			assert.Equal(t, int64(2), asked.Load())

			// The catalog changing reaches the client: as a notification on
			// the legacy session, on the subscriptions/listen stream for the
			// modern client.
			assert.Equal(t, "tools_list_changed published", call("l__test_trigger_tool_change", map[string]any{}))
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("no notifications/tools/list_changed over stdio")
			}
		})
	}
}

// What a stdio client sends that the gateway cannot serve is answered
// with the spec's error, and the connection goes on: a line that is not
// JSON (-32700, id null), JSON that is no JSON-RPC message or a batch
// (-32600), a request whose _meta names a version the gateway does not
// serve (-32022 with data.supported and data.requested); then a
// server/discover on the same connection is served. Each refusal is
// counted.
func TestStdioRefusesWhatItCannotServe(t *testing.T) {
	g := stdioGateway(t)
	send, next := rawStdio(t, g)
	meta := func(v string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}`
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{`) // cut short: not JSON
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not JSON"}}`, next())
	send(`[]`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message (batches are not served)"}}`, next())
	send(`{"id":"x","method":7}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"x","error":{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message (batches are not served)"}}`, next())
	send(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + meta("2027-01-01") + `}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"Unsupported protocol version",
		"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2027-01-01"}}}`, next())
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + meta("2026-01-01") + `}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"Unsupported protocol version",
		"data":{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2026-01-01"}}}`, next())
	assert.Equal(t, int64(5), g.refusedLines.Load())

	send(`{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{` + meta("2026-07-28") + `}}`)
	var res struct {
		ID     int `json:"id"`
		Result struct {
			ResultType        string   `json:"resultType"`
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(next()), &res))
	assert.Equal(t, 4, res.ID)
	assert.Equal(t, "complete", res.Result.ResultType)
	assert.Equal(t, []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}, res.Result.SupportedVersions)
}

// rawStdio is a stdio client of g line by line: send writes a line, next
// reads the gateway's next line, failing the test after 30 s (a hang).
func rawStdio(t *testing.T, g *Gateway) (send func(string), next func() string) {
	r, w := stdioPipes(t, g)
	sc := bufio.NewScanner(r)
	next = func() string {
		t.Helper()
		line := make(chan string, 1)
		go func() {
			if sc.Scan() {
				line <- sc.Text()
			}
			close(line)
		}()
		select {
		case l := <-line:
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("no answer: the gateway hangs")
			return ""
		}
	}
	send = func(s string) {
		t.Helper()
		_, err := io.WriteString(w, s+"\n")
		require.NoError(t, err)
	}
	return send, next
}

// The first request that names an era chooses it for the connection: after
// initialize a request with the 2026-07-28 _meta is refused (-32600), and
// after a modern server/discover an initialize is; each connection's own
// era goes on being served.
func TestStdioPinsTheEraOfItsFirstRequest(t *testing.T) {
	g := stdioGateway(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

	send, next := rawStdio(t, g)
	send(initialize)
	assert.Contains(t, next(), `"protocolVersion":"2025-11-25"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"Invalid Request: this connection speaks the legacy era (it opened with initialize); a 2026-07-28 request needs a connection of its own"}}`, next())
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, next())

	send, next = rawStdio(t, g)
	send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	assert.Contains(t, next(), `"resultType":"complete"`)
	send(initialize)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: this connection speaks 2026-07-28 (its first request carried the _meta of that era); initialize needs a connection of its own"}}`, next())
	send(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + meta + `}}`)
	assert.Contains(t, next(), `"resultType":"complete"`)
	assert.Equal(t, int64(2), g.refusedLines.Load())
}

// A line longer than the limit is refused (-32600) without being held,
// and the next line is served.
func TestStdioLongLine(t *testing.T) {
	in := strings.NewReader(strings.Repeat("x", 100) + "\nshort\n" + strings.Repeat("y", 11) + "\r\nlast")
	r := bufio.NewReaderSize(in, 16)
	var got []string
	for {
		line, long, err := readBounded(r, 10)
		if long {
			got = append(got, "LONG")
		} else if line != nil || err == nil {
			got = append(got, string(line))
		}
		if err != nil {
			assert.ErrorIs(t, err, io.EOF)
			break
		}
	}
	assert.Equal(t, []string{"LONG", "short", "LONG", "last"}, got)
}
