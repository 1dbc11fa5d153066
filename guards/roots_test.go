package guards

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

func TestNormalizeRoot(t *testing.T) {
	cases := []struct {
		in, want string // want "" = dropped
	}{
		{"file:///home/dev/repo-a", "file:///home/dev/repo-a"},
		{"file:///home/dev/repo-a/", "file:///home/dev/repo-a/"},
		{"file:///", "file:///"},
		{"file://localhost/home/dev", "file:///home/dev"},
		{"file://LOCALHOST/home/dev", "file:///home/dev"},
		{"FILE:///home/dev", "file:///home/dev"},
		{"file:/home/dev", "file:///home/dev"},
		{"file:///home/dev/../../../../etc/passwd", "file:///etc/passwd"},
		{"file:///../../..", "file:///"},
		{"file:///home/dev/./repo/../x", "file:///home/dev/x"},
		{"file:///home/dev/%2e%2e/%2E%2E/etc", "file:///etc"},
		{"file:///home/dev/%2e%2E/x", "file:///home/x"},
		{"file:///home/dev/.%2e/.%2E/%2e./..", "file:///"},
		{"file:///home/dev/%2e/x/", "file:///home/dev/x/"},
		{"file:///home/dev/..", "file:///home"},
		{"file:///home/dev/../", "file:///home/"},
		{"file:///home//dev", "file:///home/dev"},
		{"file:///a%2F..%2F..%2Fetc", "file:///etc"},
		{"file:///home/dev/my%20repo", "file:///home/dev/my%20repo"},
		{"file:///home/dev/my repo", "file:///home/dev/my%20repo"},
		{"file:///home/jos%C3%A9", "file:///home/jos%C3%A9"},
		{"file:///C:/Users/dev/../x", "file:///C:/Users/x"},
		{"file:///home/...", "file:///home/..."},

		{"file://otherhost/share", ""},
		{"file://example.com/home/dev", ""},
		{"file://127.0.0.1/home", ""},
		{"file://localhost:8080/home", ""},
		{"file://user@localhost/home", ""},
		{"file://user@/home", ""},
		{"file:///home?x=1", ""},
		{"file:///home#frag", ""},
		{"file:///home#", ""},
		{"file:relative/path", ""},
		{"file:", ""},
		{"file://", ""},
		{"file://localhost", ""},
		{"http://example.com/repo", ""},
		{"https://localhost/home", ""},
		{"relative/path", ""},
		{"../repo", ""},
		{"/home/dev", ""},
		{"", ""},
		{"%zz", ""},
		{"file:///home/%zz", ""},
		{"file:///home/a%00b", ""},
		{"file:///home/a\\..\\..\\etc", ""},
		{"file:///home/a%5C..%5Cetc", ""},
		{"javascript:alert(1)", ""},
	}
	for _, c := range cases {
		got, err := NormalizeRoot(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("NormalizeRoot(%q) = %q, want dropped", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeRoot(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestRootsAfter(t *testing.T) {
	var logs bytes.Buffer
	p := New(Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	in := legacyIn(messages.MethodListRoots, ``)
	req, r := p.Before(in)
	wantOK(t, r)
	rr, ok := req.(*messages.RootsRequest)
	if !ok || rr.ServerID != "srv" {
		t.Fatalf("request %#v", req)
	}
	orig := &messages.ListRootsResult{Roots: []messages.Root{
		{URI: "file:///home/dev/repo-a", Name: "repo-a"},
		{URI: "file:///home/dev/repo-b/../../../etc", Name: "sneaky\u202ename"},
		{URI: "file:///home/dev/%2e%2e/%2e%2e/root"},
		{URI: "file://otherhost/share", Name: "remote"},
		{URI: "http://example.com/", Name: "web"},
		{URI: "repo-c", Name: "relative"},
		{URI: "file:///home/dev/x?y"},
	}}
	res, r := p.After(in, req, orig)
	wantOK(t, r)
	want := `{"roots":[{"uri":"file:///home/dev/repo-a","name":"repo-a"},{"uri":"file:///etc","name":"sneaky` + "\u202e" + `name"},{"uri":"file:///root"}]}`
	if got := mustJSON(t, res); got != want {
		t.Fatalf("wire\n got %s\nwant %s", got, want)
	}
	if got := p.RootsWithheld(); got != 4 {
		t.Fatalf("RootsWithheld = %d, want 4", got)
	}
	if orig.Roots[1].URI != "file:///home/dev/repo-b/../../../etc" || len(orig.Roots) != 7 {
		t.Fatalf("handler's value mutated")
	}
	out := logs.String()
	for _, s := range []string{"file://otherhost/share", "http://example.com/", "repo-c", "server_id=srv", "reason=", "another host"} {
		if !strings.Contains(out, s) {
			t.Errorf("log lacks %q:\n%s", s, out)
		}
	}
	if n := strings.Count(out, "root withheld"); n != 4 {
		t.Errorf("%d log records, want 4", n)
	}

	// No roots is an empty list, never null; a nil result is -32603.
	res, r = p.After(in, req, &messages.ListRootsResult{})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"roots":[]}` {
		t.Fatalf("wire %s", got)
	}
	_, r = p.After(in, req, (*messages.ListRootsResult)(nil))
	wantRefusal(t, r, codeInt, "")

	// A nil Logger discards.
	p = New(Config{})
	_, r = p.After(in, req, &messages.ListRootsResult{Roots: []messages.Root{{URI: "http://x/"}}})
	wantOK(t, r)
	if p.RootsWithheld() != 1 {
		t.Fatal("not counted")
	}
}

func TestRootsBeforeParams(t *testing.T) {
	_, r := New(Config{}).Before(legacyIn(messages.MethodListRoots, `{"_meta":{}}`))
	wantOK(t, r)
	_, r = New(Config{}).Before(legacyIn(messages.MethodListRoots, `null`))
	wantOK(t, r)
	_, r = New(Config{}).Before(legacyIn(messages.MethodListRoots, `[1]`))
	wantRefusal(t, r, codeInvalid, "")
}

func TestAfterUnexpected(t *testing.T) {
	p := New(Config{})
	in := legacyIn(messages.MethodListRoots, ``)
	_, r := p.After(in, nil, "a string")
	wantRefusal(t, r, codeInt, "")
}
