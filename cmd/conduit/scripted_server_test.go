package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// scriptServerEnv makes the test binary a scripted stdio server (see
// scriptServer) when set; TestMain hands over to it.
const scriptServerEnv = "CONDUIT_SCRIPT_SERVER"

// scriptServer is a legacy (2025-11-25) MCP server on r/w whose tools/call
// does what mode says:
//
//   - "flood:N" sends N log entries in one write, waits 300 ms (the client
//     shows those that passed its rate limit before the answer ends the
//     call) and answers "done";
//   - "big:N" answers with one text block of N bytes "x", generated as it
//     is written: the server never holds the message;
//   - "lists:N" lists N resource templates, one a page, whose names and
//     descriptions hold escape sequences and newlines, and completes any
//     argument with such values and hasMore.
//   - "old:0" speaks only 2024-11-05 (see oldServer).
//
// It returns the process's exit status.
func scriptServer(mode string, r io.Reader, w io.Writer) int {
	kind, arg, _ := strings.Cut(mode, ":")
	n, err := strconv.Atoi(arg)
	if kind == "old" {
		return oldServer(r, w)
	}
	if err != nil || (kind != "flood" && kind != "big" && kind != "lists") {
		fmt.Fprintf(w, "script server: bad mode %q\n", mode)
		return 2
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	out := bufio.NewWriterSize(w, 64<<10)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for sc.Scan() {
		var m hostileMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		switch {
		case m.Method == "initialize":
			reply(m.ID, `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"logging":{}},"serverInfo":{"name":"scripted","version":"1"}}`)
		case m.Method == "tools/call" && kind == "flood":
			for i := range n {
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"entry %d"}}`+"\n", i)
			}
			_ = out.Flush()
			time.Sleep(300 * time.Millisecond)
			reply(m.ID, `{"content":[{"type":"text","text":"done"}]}`)
		case m.Method == "resources/templates/list" && kind == "lists":
			var p struct {
				Params struct{ Cursor string }
			}
			_ = json.Unmarshal(sc.Bytes(), &p)
			i, _ := strconv.Atoi(p.Params.Cursor)
			next := ""
			if i+1 < n {
				next = fmt.Sprintf(`,"nextCursor":"%d"`, i+1)
			}
			reply(m.ID, fmt.Sprintf(`{"resourceTemplates":[{"uriTemplate":"file:///t%d/{x}","name":"t\u001b[31m%d","description":"line one\nline two"}]%s}`, i, i, next))
		case m.Method == "completion/complete" && kind == "lists":
			reply(m.ID, `{"completion":{"values":["red\u001b[31m","two\nlines"],"hasMore":true}}`)
		case m.Method == "tools/call":
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":`, m.ID)
			writeBigResult(out, n)
			out.WriteString("}\n")
		default:
			reply(m.ID, `{}`)
		}
		if out.Flush() != nil {
			return 0 // the client went away
		}
	}
	return 0
}

// writeBigResult writes a CallToolResult with one text block of n bytes
// "x", a chunk at a time.
func writeBigResult(w io.Writer, n int) error {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	if _, err := io.WriteString(w, `{"content":[{"type":"text","text":"`); err != nil {
		return err
	}
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return err
		}
		n -= k
	}
	_, err := io.WriteString(w, `"}]}`)
	return err
}

// oldServer is a server that speaks only 2024-11-05, whatever the client
// offers. Its tools/call first sends elicitation/create, which that
// revision does not have, and answers the call with the code the client
// refused it with ("old-ok, elicitation refused -32601").
func oldServer(r io.Reader, w io.Writer) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var call json.RawMessage
	for sc.Scan() {
		var m hostileMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue
		}
		switch m.Method {
		case "":
			if string(m.ID) == `"e1"` && call != nil {
				code := 0
				if m.Error != nil {
					code = m.Error.Code
				}
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"old-ok, elicitation refused %d"}],"structuredContent":{"n":1}}}`+"\n", call, code)
				call = nil
			}
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}}`+"\n", m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"probe","inputSchema":{"type":"object"}}]}}`+"\n", m.ID)
		case "tools/call":
			call = m.ID
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`+"\n")
		default:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", m.ID)
		}
	}
	return 0
}
