package actors_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/conduitmcp/conduit/transport"
)

// floorClient is the least a JSON-RPC client for MCP can do, written by
// hand: the floor the benchmarks hold Conduit against. It encodes each
// request, keeps a map of pending ids, and runs one reader goroutine that
// decodes every message, hands responses to their callers and answers
// sampling requests inline (no handler goroutine, no guard, no timeout).
type floorClient struct {
	conn     transport.Conn
	answered *atomic.Int64 // sampling requests answered
	next     atomic.Int64
	mu       sync.Mutex
	pending  map[int64]chan floorResponse
	done     chan struct{}
}

type floorResponse struct {
	result json.RawMessage
	err    json.RawMessage
}

// floorEnvelope is every member of a JSON-RPC message the floor reads.
type floorEnvelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// floorMeta is the _meta a modern request carries, encoded once.
const floorMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"floor","version":"1"}}`

// startFloor connects a floor client over conn: server/discover (modern) or
// initialize and notifications/initialized (legacy).
func startFloor(conn transport.Conn, modern bool, answered *atomic.Int64) (*floorClient, error) {
	c := &floorClient{conn: conn, answered: answered, pending: map[int64]chan floorResponse{}, done: make(chan struct{})}
	go c.read()
	if modern {
		_, err := c.call("server/discover", json.RawMessage(`{"_meta":`+floorMeta+`}`))
		return c, err
	}
	if _, err := c.call("initialize", json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"floor","version":"1"}}`)); err != nil {
		return c, err
	}
	return c, conn.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// close ends the connection and waits for the reader.
func (c *floorClient) close() {
	_ = c.conn.Close()
	<-c.done
}

// call sends a request and waits for its response.
func (c *floorClient) call(method string, params json.RawMessage) (json.RawMessage, error) {
	id := c.next.Add(1)
	ch := make(chan floorResponse, 1)
	c.mu.Lock()
	c.pending[id] = ch
	c.mu.Unlock()
	b := make([]byte, 0, 64+len(method)+len(params))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":`...)
	b = strconv.AppendQuote(b, method)
	b = append(b, `,"params":`...)
	b = append(b, params...)
	b = append(b, '}')
	if err := c.conn.Write(context.Background(), b); err != nil {
		return nil, err
	}
	r, ok := <-ch
	if !ok {
		return nil, errors.New("floor: connection closed")
	}
	if r.err != nil {
		return nil, fmt.Errorf("floor: %s failed: %s", method, r.err)
	}
	return r.result, nil
}

// read is the one reader goroutine.
func (c *floorClient) read() {
	defer close(c.done)
	defer func() {
		c.mu.Lock()
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
	}()
	for {
		msg, err := c.conn.Read(context.Background())
		if err != nil {
			return
		}
		var env floorEnvelope
		if json.Unmarshal(msg.Data, &env) != nil {
			continue
		}
		if env.Method != "" {
			c.serverRequest(&env)
			continue
		}
		id, err := strconv.ParseInt(string(env.ID), 10, 64)
		if err != nil {
			continue
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- floorResponse{result: env.Result, err: env.Error}
		}
	}
}

// floorSampling is what the floor reads of a sampling request.
type floorSampling struct {
	Messages []struct {
		Role    string `json:"role"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"messages"`
	MaxTokens int `json:"maxTokens"`
}

// serverRequest answers a sampling request inline; anything else gets
// -32601.
func (c *floorClient) serverRequest(env *floorEnvelope) {
	if env.ID == nil {
		return // a notification
	}
	body := `,"error":{"code":-32601,"message":"Method not found"}}`
	var p floorSampling
	if env.Method == "sampling/createMessage" && json.Unmarshal(env.Params, &p) == nil && len(p.Messages) > 0 && p.MaxTokens > 0 {
		c.answered.Add(1)
		body = `,"result":{"role":"assistant","content":{"type":"text","text":"hi"},"model":"test"}}`
	}
	b := make([]byte, 0, 32+len(env.ID)+len(body))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, env.ID...)
	b = append(b, body...)
	_ = c.conn.Write(context.Background(), b)
}

// floorToolResult is what the floor reads of a tools/call result.
type floorToolResult struct {
	ResultType    string                     `json:"resultType"`
	Content       []struct{ Text string }    `json:"content"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	RequestState  json.RawMessage            `json:"requestState"`
}

// callTool calls the tool name and checks its text result (legacy: the
// sampling requests are answered by the reader meanwhile).
func (c *floorClient) callTool(name string) error {
	raw, err := c.call("tools/call", json.RawMessage(`{"name":`+strconv.Quote(name)+`,"arguments":{}}`))
	if err != nil {
		return err
	}
	var r floorToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if len(r.Content) != 1 {
		return fmt.Errorf("%w: %s", errScripted, raw)
	}
	return scriptedCheck(r.Content[0].Text)
}

// callToolMRTR calls the tool name at 2026-07-28: while the result is
// input_required it answers each form elicitation with {"name":"Ada"} and
// retries with the answers and the request state.
func (c *floorClient) callToolMRTR(name string) error {
	base := `{"name":` + strconv.Quote(name) + `,"arguments":{},"_meta":` + floorMeta
	params := json.RawMessage(base + `}`)
	for range 10 {
		raw, err := c.call("tools/call", params)
		if err != nil {
			return err
		}
		var r floorToolResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.ResultType != "input_required" {
			if len(r.Content) != 1 {
				return fmt.Errorf("%w: %s", errScripted, raw)
			}
			return scriptedCheck(r.Content[0].Text)
		}
		answers := make(map[string]json.RawMessage, len(r.InputRequests))
		for k, req := range r.InputRequests {
			var in struct {
				Method string `json:"method"`
			}
			if err := json.Unmarshal(req, &in); err != nil || in.Method != "elicitation/create" {
				return fmt.Errorf("%w: input request %s", errScripted, req)
			}
			c.answered.Add(1)
			answers[k] = json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)
		}
		resp, err := json.Marshal(answers)
		if err != nil {
			return err
		}
		p := append([]byte(base), `,"inputResponses":`...)
		p = append(p, resp...)
		if r.RequestState != nil {
			p = append(append(p, `,"requestState":`...), r.RequestState...)
		}
		params = append(p, '}')
	}
	return fmt.Errorf("%w: still input_required after 10 rounds", errScripted)
}
