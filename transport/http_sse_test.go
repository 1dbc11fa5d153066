package transport

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestSSEParser(t *testing.T) {
	long := strings.Repeat("x", 2000)
	cases := []struct {
		name   string
		in     string
		want   []string
		lastID string
		retry  time.Duration // 0: none
		limit  bool          // ends with *MessageTooLongError
	}{
		{name: "lf", in: "data: a\n\ndata: b\n\n", want: []string{"a", "b"}},
		{name: "crlf and lone cr", in: "data: a\r\n\r\ndata: b\r\rdata: c\r\n\n", want: []string{"a", "b", "c"}},
		{name: "multi-line data", in: "data: 1\ndata:2\ndata:  3\n\n", want: []string{"1\n2\n 3"}},
		{name: "comments", in: ":x\n: y\ndata: a\n:z\n\n", want: []string{"a"}},
		{name: "field without colon", in: "data\n\ndata:a\n\n", want: []string{"a"}},
		{name: "unknown field", in: "foo: bar\ndata: a\n\n", want: []string{"a"}},
		{name: "leading byte order mark", in: "\ufeffid: 1\ndata: a\n\n", want: []string{"a"}, lastID: "1"},
		{name: "only one, only leading, byte order mark", in: "\ufeff\ufeffdata: a\n\n\ufeffdata: b\n\ndata: c\n\n", want: []string{"c"}},
		{name: "event types", in: "event: message\ndata: a\n\nevent: close\nretry: 7\ndata: b\n\nevent: x\n\ndata: c\n\n",
			want: []string{"a", "c"}, retry: 7 * time.Millisecond},
		{name: "priming id", in: "id: 1\ndata:\n\nid: 2\n\n", lastID: "2"},
		{name: "id with NUL ignored", in: "id: 1\n\nid: a\x00b\n\n", lastID: "1"},
		{name: "empty id clears", in: "id: 1\n\nid\n\n", lastID: ""},
		{name: "id of an unterminated event not kept", in: "id: 1\n\nid: 2\ndata: a\n", lastID: "1"},
		{name: "id of an unterminated id-only event not kept", in: "id: 1\ndata: a\n\nid: 2\n", want: []string{"a"}, lastID: "1"},
		{name: "retry", in: "retry: 5s\nretry: 250\nretry: x\nretry: -1\n\n", retry: 250 * time.Millisecond},
		{name: "huge retry", in: "retry: 99999999999999999999\n\n", retry: maxRetry},
		{name: "unterminated event dropped", in: "data: a\n\ndata: b\n", want: []string{"a"}},
		{name: "unterminated line dropped", in: "data: a\n\ndata: b", want: []string{"a"}},
		{name: "whitespace payload skipped", in: "data:  \n\ndata: a\n\n", want: []string{"a"}},
		{name: "event too large", in: "data: " + long + "\n\n", limit: true},
		{name: "line too large, no end", in: "data: " + long, limit: true},
		{name: "event too large in many lines", in: strings.Repeat("data: "+long[:50]+"\n", 30) + "\n", limit: true},
		{name: "comments do not count", in: strings.Repeat(":"+long[:500]+"\n", 10) + "data: a\n\n", want: []string{"a"}},
		{name: "limits reset per event", in: strings.Repeat("data: "+long[:900]+"\n\n", 3), want: []string{long[:900], long[:900], long[:900]}},
	}
	for _, tc := range cases {
		for _, mode := range []string{"whole", "bytewise"} {
			var r io.Reader = strings.NewReader(tc.in)
			if mode == "bytewise" {
				r = iotest.OneByteReader(r)
			}
			p := newSSEParser(1024)
			p.reset(r)
			var got []string
			var err error
			for {
				var data []byte
				if data, err = p.next(); err != nil {
					break
				}
				got = append(got, string(data))
			}
			var lim *MessageTooLongError
			switch {
			case tc.limit && (!errors.As(err, &lim) || *lim != MessageTooLongError{What: "SSE event", Limit: 1024, Setting: "transport.HTTP.MaxEventBytes"}):
				t.Errorf("%s/%s: err = %v, want the limit", tc.name, mode, err)
			case !tc.limit && !errors.Is(err, io.EOF):
				t.Errorf("%s/%s: err = %v, want EOF", tc.name, mode, err)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("%s/%s: got %q, want %q", tc.name, mode, got, tc.want)
			}
			if p.lastID != tc.lastID {
				t.Errorf("%s/%s: lastID %q, want %q", tc.name, mode, p.lastID, tc.lastID)
			}
			if p.retryOr(0) != tc.retry {
				t.Errorf("%s/%s: retry %v, want %v", tc.name, mode, p.retryOr(0), tc.retry)
			}
		}
	}
}

func TestSSEParserKeepsStateAcrossStreams(t *testing.T) {
	p := newSSEParser(1024)
	p.reset(strings.NewReader("retry: 30\nid: a\ndata: x\n\ndata: partial"))
	if d, err := p.next(); err != nil || string(d) != "x" {
		t.Fatalf("first stream: %q %v", d, err)
	}
	if _, err := p.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF, got %v", err)
	}
	if !p.takeProgress() || p.takeProgress() {
		t.Error("progress not reported exactly once")
	}
	p.reset(strings.NewReader("\ndata: y\n\n")) // the partial event does not leak
	if d, err := p.next(); err != nil || string(d) != "y" {
		t.Fatalf("second stream: %q %v", d, err)
	}
	if p.lastID != "a" || p.retryOr(0) != 30*time.Millisecond {
		t.Errorf("state lost: id %q retry %v", p.lastID, p.retryOr(0))
	}
	p.reset(strings.NewReader("\ufeffid: b\n\n")) // every stream may start with a BOM
	if _, err := p.next(); !errors.Is(err, io.EOF) || p.lastID != "b" {
		t.Errorf("third stream: %v, id %q; want EOF, b", err, p.lastID)
	}
}

func TestHeaderValues(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"=?base64?open":      "=?base64?open",
		"inner space":        "inner space",
		"tab\tinside":        "=?base64?dGFiCWluc2lkZQ==?=",
		"del\x7f":            "=?base64?ZGVsfw==?=",
		"":                   "",
	} {
		if got := encodeHeaderValue(in); got != want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
	for raw, want := range map[string]string{
		`"s"`: "s", `true`: "true", `false`: "false", `0`: "0", `-0`: "0", `7`: "7", `42.0`: "42", `4.2e1`: "42",
		`9007199254740991`: "9007199254740991", `123456789012345678901`: "123456789012345678901",
	} {
		if got, ok := headerScalar([]byte(raw)); !ok || got != want {
			t.Errorf("headerScalar(%s) = %q %v, want %q", raw, got, ok, want)
		}
	}
	for _, raw := range []string{`null`, `1.5`, `1e300`, `{}`, `[]`, ``} {
		if got, ok := headerScalar([]byte(raw)); ok {
			t.Errorf("headerScalar(%s) = %q, want no header", raw, got)
		}
	}
}

// The 64 MiB default reserves nothing: parsing small events takes memory
// for them, not for the limit.
func TestSSEParserDefaultLimitAllocatesOnDemand(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := newSSEParser(defaultMaxEventBytes)
	p.reset(strings.NewReader(strings.Repeat("data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n\n", 10)))
	for range 10 {
		if _, err := p.next(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("parsing 10 small events with the 64 MiB default allocated %d bytes", got)
	}
	runtime.ReadMemStats(&before)
	body, err := readAll(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`), defaultMaxBodyBytes)
	runtime.ReadMemStats(&after)
	if err != nil || string(body) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("readAll = %q, %v", body, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading a small body with the 64 MiB default allocated %d bytes", got)
	}
}
