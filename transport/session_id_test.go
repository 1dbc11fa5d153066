package transport

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// A legacy server's Mcp-Session-Id over the limit, or with a byte outside
// visible ASCII, fails the initialize whose response carried it with
// *SessionIDError, and is never sent back; one at the limit is kept.
func TestHTTPSessionIDRefused(t *testing.T) {
	for _, tc := range []struct {
		name, sid string
		limit     int
		want      *SessionIDError
		text      string
	}{
		{"1 MiB", strings.Repeat("s", 1<<20), 0, &SessionIDError{Length: 1 << 20, Limit: 4 << 10},
			"transport: the server's Mcp-Session-Id is 1 MiB, over the limit of 4 KiB; raise transport.HTTP.MaxSessionIDBytes"},
		{"over a raised limit", strings.Repeat("s", 9000), 8 << 10, &SessionIDError{Length: 9000, Limit: 8 << 10},
			"transport: the server's Mcp-Session-Id is 9000 bytes, over the limit of 8 KiB; raise transport.HTTP.MaxSessionIDBytes"},
		{"a space", "abc def", 0, &SessionIDError{Length: 7, Byte: ' ', Offset: 3},
			"transport: the server's Mcp-Session-Id holds byte 0x20 at offset 3, outside visible ASCII"},
		{"not ASCII", "s\xc3\xa9", 0, &SessionIDError{Length: 3, Byte: 0xc3, Offset: 1},
			"transport: the server's Mcp-Session-Id holds byte 0xc3 at offset 1, outside visible ASCII"},
		{"at the limit", strings.Repeat("s", 4<<10), 0, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
				switch {
				case r.Method != http.MethodPost:
					w.WriteHeader(http.StatusMethodNotAllowed)
				case req.rpc == "initialize":
					w.Header().Set("Mcp-Session-Id", tc.sid)
					writeJSON(w, 200, result(req.id, `{}`))
				default:
					writeJSON(w, 200, result(req.id, `{}`))
				}
			})
			c := dial(t, ep, HTTP{MaxSessionIDBytes: tc.limit})
			send(t, c, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`)
			if tc.want == nil {
				if m := next(t, c); m.Err != nil {
					t.Fatalf("initialize failed: %v", m.Err)
				}
			} else {
				err := nextFailure(t, c, "0")
				var sidErr *SessionIDError
				if !errors.As(err, &sidErr) || *sidErr != *tc.want || err.Error() != tc.text {
					t.Fatalf("initialize failed with %v (%#v), want %#v: %s", err, sidErr, tc.want, tc.text)
				}
			}
			c.SetSession("2025-11-25", "legacy")
			send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			next(t, c)
			got := ep.request(t, "tools/list").header.Get("Mcp-Session-Id")
			if want := map[bool]string{true: "", false: tc.sid}[tc.want != nil]; got != want {
				t.Errorf("tools/list carried a session id of %d bytes, want %d", len(got), len(want))
			}
		})
	}
}

// A later response that gives an id the client refuses fails that request;
// the session keeps the id it had.
func TestHTTPSessionIDRefusedMidSession(t *testing.T) {
	ep := newEndpoint(t, func(w http.ResponseWriter, r *http.Request, req seenRequest) {
		switch {
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case req.rpc == "initialize":
			w.Header().Set("Mcp-Session-Id", "s-1")
			writeJSON(w, 200, result(req.id, `{}`))
		case req.id == "1":
			w.Header().Set("Mcp-Session-Id", strings.Repeat("t", 5000))
			writeJSON(w, 200, result(req.id, `{}`))
		default:
			writeJSON(w, 200, result(req.id, `{}`))
		}
	})
	c := dial(t, ep, HTTP{})
	legacySession(t, c)
	send(t, c, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	var sidErr *SessionIDError
	if err := nextFailure(t, c, "1"); !errors.As(err, &sidErr) || *sidErr != (SessionIDError{Length: 5000, Limit: 4 << 10}) {
		t.Fatalf("tools/list failed with %v, want a *SessionIDError of 5000 bytes", err)
	}
	send(t, c, `{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`)
	if m := next(t, c); m.Err != nil {
		t.Fatalf("prompts/list failed: %v", m.Err)
	}
	if got := ep.request(t, "prompts/list").header.Get("Mcp-Session-Id"); got != "s-1" {
		t.Errorf("prompts/list carried session id %.20q, want s-1", got)
	}
}
