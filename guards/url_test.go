package guards

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode"

	"github.com/conduitmcp/conduit/messages"
)

func TestCheckURL(t *testing.T) {
	cases := []struct {
		raw  string
		ok   bool
		host string
		port string
		idn  bool
	}{
		// accepted
		{"https://example.com/connect?x=1#f", true, "example.com", "443", false},
		{"HTTPS://EXAMPLE.COM/", true, "example.com", "443", false},
		{"hTtPs://Example.Com/Path", true, "example.com", "443", false},
		{"https://example.com:443/", true, "example.com", "443", false},
		{"https://example.com:8443/x", true, "example.com", "8443", false},
		{"https://example.com:08443/x", true, "example.com", "8443", false},
		{"https://example.com:/x", true, "example.com", "443", false},
		{"https://[::1]:8443/", true, "::1", "8443", false},
		{"https://[0:0:0:0:0:0:0:1]/", true, "::1", "443", false},
		{"https://[::ffff:1.2.3.4]/", true, "::ffff:1.2.3.4", "443", false},
		{"https://1.2.3.4/", true, "1.2.3.4", "443", false},
		{"https://example.com./", true, "example.com.", "443", false},
		{"https://аpple.com/", true, "xn--pple-43d.com", "443", true},            // Cyrillic а
		{"https://%D0%B0pple.com/", true, "xn--pple-43d.com", "443", true},       // the same, percent-encoded
		{"https://раураl.com/", true, "xn--l-7sba6dbr.com", "443", true},         // all-Cyrillic lookalike
		{"https://xn--80ak6aa92e.com/", true, "xn--80ak6aa92e.com", "443", true}, // punycode as sent
		{"https://login.xn--80ak6aa92e.com/", true, "login.xn--80ak6aa92e.com", "443", true},
		{"https://XN--80AK6AA92E.com/", true, "xn--80ak6aa92e.com", "443", true},
		{"https://bücher.example/", true, "xn--bcher-kva.example", "443", true},
		{"https://ＥＸＡＭＰＬＥ.com/", true, "example.com", "443", false}, // fullwidth maps to ASCII
		{"https://example.com/pfad/ü", true, "example.com", "443", false},

		// refused
		{"https://user@host/", false, "", "", false},
		{"https://user:pw@host", false, "", "", false},
		{"https://@host/", false, "", "", false},
		{"https://good.com@evil.com/", false, "", "", false},
		{"https:///x", false, "", "", false},
		{"https://", false, "", "", false},
		{"https:", false, "", "", false},
		{"https:/example.com", false, "", "", false},
		{"https:example.com", false, "", "", false},
		{"https://:443/", false, "", "", false},
		{"https://exa\x00mple.com/", false, "", "", false},
		{"https://exa mple.com/", false, "", "", false},
		{"https://example.com /", false, "", "", false},
		{" https://example.com/", false, "", "", false},
		{"https://example.com/a b", false, "", "", false},
		{"https://exa\tmple.com/", false, "", "", false},
		{"https://example.com/\n", false, "", "", false},
		{"https://exa\u00a0mple.com/", false, "", "", false},
		{"https://example.com/\u202etxt.exe", false, "", "", false}, // bidi override
		{"https://ex%E2%80%AEample.com/", false, "", "", false},
		{"https://exa%00mple.com/", false, "", "", false},
		{"https://example.com\\@evil.com/", false, "", "", false},
		{"https://example.com../", false, "", "", false},
		{"https://a..b/", false, "", "", false},
		{"https://./", false, "", "", false},
		{"https://-bad.com/", false, "", "", false},
		{"https://ex_ample.com/", false, "", "", false},
		{"https://xn--zz.com/", false, "", "", false},      // invalid punycode
		{"https://xn--example.com/", false, "", "", false}, // decodes to ASCII: refused by IDNA
		{"https://2130706433/", false, "", "", false},      // a browser reads 127.0.0.1
		{"https://0x7f.1/", false, "", "", false},
		{"https://127.1/", false, "", "", false},
		{"https://010.0.0.1/", false, "", "", false},
		{"https://[fe80::1%25en0]/", false, "", "", false}, // zone
		{"https://[1.2.3.4]/", false, "", "", false},
		{"https://[example.com]/", false, "", "", false},
		{"https://host:0/", false, "", "", false},
		{"https://host:65536/", false, "", "", false},
		{"https://host:99999999999999999999/", false, "", "", false},
		{"javascript:alert(1)", false, "", "", false},
		{"JavaScript://example.com/%0aalert(1)", false, "", "", false},
		{"data:text/html,<script>alert(1)</script>", false, "", "", false},
		{"file:///etc/passwd", false, "", "", false},
		{"http://example.com/", false, "", "", false},
		{"ftp://example.com/", false, "", "", false},
		{"wss://example.com/", false, "", "", false},
		{"/relative/path", false, "", "", false},
		{"relative", false, "", "", false},
		{"//example.com/x", false, "", "", false},
		{"", false, "", "", false},
		{"https://example.com/\xff", false, "", "", false},
		{"https://exa%6dple.com/", false, "", "", false},
		{"https://%800", false, "", "", false}, // decodes to invalid UTF-8
		{"https://%C0%80.com/", false, "", "", false},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			info, err := CheckURL(c.raw)
			if !c.ok {
				if err == nil {
					t.Fatalf("accepted: %+v", info)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if info.URL != c.raw || info.Host != c.host || info.Port != c.port || info.IDN != c.idn {
				t.Fatalf("got %+v, want host %q port %q idn %v", info, c.host, c.port, c.idn)
			}
		})
	}
}

// IDNA maps U+3002, U+FF0E and U+FF61 to ".": a dot that appears only
// after mapping is held to the rules of an ASCII one, so it can neither
// hide an empty label nor end a non-canonical IPv4 address a browser
// would open (it reads "0x7f.0.0.1。" as 127.0.0.1).
func TestCheckURLMappedDots(t *testing.T) {
	cases := []struct{ raw, host, err string }{
		{"https://example.com。/", "example.com.", ""},
		{"https://example.com%EF%BC%8E/", "example.com.", ""},
		{"https://example.com。。/", "", "url host has an empty label"},
		{"https://example.com.。/", "", "url host has an empty label"},
		{"https://example.com%E3%80%82%E3%80%82/", "", "url host has an empty label"},
		{"https://0x7f.0.0.1。/", "", "url host is a non-canonical IPv4 address"},
		{"https://127.1%E3%80%82/", "", "url host is a non-canonical IPv4 address"},
		{"https://2130706433｡/", "", "url host is a non-canonical IPv4 address"},
	}
	for _, c := range cases {
		info, err := CheckURL(c.raw)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: refused: %v", c.raw, err)
		case c.err == "" && info.Host != c.host:
			t.Errorf("%s: host %q, want %q", c.raw, info.Host, c.host)
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s: got %+v, %v; want the error %q", c.raw, info, err, c.err)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	cases := []struct {
		url, origin string
		same        bool
	}{
		{"https://example.com/x", "https://example.com", true},
		{"https://EXAMPLE.com:443/x", "https://example.COM", true},
		{"https://example.com/x", "HTTPS://example.com:443", true},
		{"https://example.com/x", "https://example.com/mcp/endpoint", true},
		{"https://example.com:8443/x", "https://example.com:8443", true},
		{"https://[::1]:8443/", "https://[::1]:8443", true},
		{"https://аpple.com/", "https://xn--pple-43d.com", true},
		{"https://аpple.com/", "https://apple.com", false},
		{"https://example.com/x", "https://example.com:8443", false},
		{"https://example.com:8443/x", "https://example.com", false},
		{"https://example.com/x", "http://example.com", false},
		{"https://example.com/x", "http://example.com:443", false},
		{"https://example.com./x", "https://example.com", false},
		{"https://evil.example.com/x", "https://example.com", false},
		{"https://example.com/x", "", false},
		{"https://example.com/x", "example.com", false},
		{"https://example.com/x", "https://user@example.com", false},
		{"https://example.com/x", "::garbage::", false},
	}
	for _, c := range cases {
		info, err := CheckURL(c.url)
		if err != nil {
			t.Fatalf("%s: %v", c.url, err)
		}
		if got := info.SameOrigin(c.origin); got != c.same {
			t.Errorf("SameOrigin(%q, %q) = %v, want %v", c.url, c.origin, got, c.same)
		}
	}
}

func urlParams(u, id string) string {
	m := map[string]any{"mode": "url", "message": "Link your account", "url": u}
	if id != "" {
		m["elicitationId"] = id
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func TestElicitationModes(t *testing.T) {
	both := Config{Elicitation: ElicitationConfig{Modes: []string{"form", "url"}}}
	urlOnly := Config{Elicitation: ElicitationConfig{Modes: []string{"url"}}}
	okURL := urlParams("https://example.com/x", "el-1")
	cases := []struct {
		name    string
		cfg     Config
		version string
		params  string
		mode    string // "" = refused -32602
	}{
		{"absent mode is form", Config{}, v1125, okForm, "form"},
		{"absent mode is form (06-18)", Config{}, v0618, okForm, "form"},
		{"explicit form", Config{}, v1125, `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{}}}`, "form"},
		{"null mode is form", Config{}, v1125, `{"mode":null,"message":"m","requestedSchema":{"type":"object","properties":{}}}`, "form"},
		{"url not declared", Config{}, v1125, okURL, ""},
		{"url declared", both, v1125, okURL, "url"},
		{"url declared modern", both, v0728, urlParams("https://example.com/x", ""), "url"},
		{"url in 06-18", both, v0618, okURL, ""},
		{"form not declared", urlOnly, v1125, okForm, ""},
		{"unknown mode", both, v1125, `{"mode":"popup","message":"m"}`, ""},
		{"empty mode", both, v1125, `{"mode":"","message":"m","requestedSchema":{"type":"object","properties":{}}}`, ""},
		{"mode not a string", both, v1125, `{"mode":1,"message":"m"}`, ""},
		{"params not an object", both, v1125, `[]`, ""},
		{"form without schema", both, v1125, `{"message":"m"}`, ""},
		{"form with null schema", both, v1125, `{"message":"m","requestedSchema":null}`, ""},
		{"url without url", both, v1125, `{"mode":"url","message":"m","elicitationId":"e"}`, ""},
		{"url without elicitationId (11-25)", both, v1125, urlParams("https://example.com/x", ""), ""},
		{"url with elicitationId (modern)", both, v0728, okURL, "url"},
		{"url javascript", both, v1125, urlParams("javascript:alert(1)", "e"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(messages.MethodElicit, c.version, messages.EraLegacy, c.params)
			req, r := New(c.cfg).Before(in)
			if c.mode == "" {
				wantRefusal(t, r, codeInvalid, "")
				return
			}
			wantOK(t, r)
			if got := req.(*messages.ElicitationRequest).Mode; got != c.mode {
				t.Fatalf("mode = %q, want %q", got, c.mode)
			}
		})
	}
}

func TestElicitationURLRequest(t *testing.T) {
	cfg := Config{Elicitation: ElicitationConfig{Modes: []string{"form", "url"}, Origin: "https://srv.example"}}
	cases := []struct {
		name, url, inOrigin, cfgOrigin string
		host                           string
		idn, mismatch                  bool
	}{
		{"config origin", "https://srv.example/connect", "", "https://srv.example", "srv.example", false, false},
		{"transport origin wins", "https://srv.example/connect", "https://other.example", "https://srv.example", "srv.example", false, true},
		{"transport origin", "https://SRV.example:443/c", "https://srv.example", "", "srv.example", false, false},
		{"unknown origin", "https://srv.example/connect", "", "", "srv.example", false, true},
		{"other host", "https://evil.example/", "", "https://srv.example", "evil.example", false, true},
		{"homograph", "https://аpple.com/", "https://apple.com", "", "xn--pple-43d.com", true, true},
		{"ipv6", "https://[::1]:8443/", "https://[::1]:8443", "", "::1", false, false},
		{"trailing dot", "https://srv.example./", "", "https://srv.example", "srv.example.", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg.Elicitation.Origin = c.cfgOrigin
			in := legacyIn(messages.MethodElicit, urlParams(c.url, "el-1"))
			in.Origin = c.inOrigin
			req, r := New(cfg).Before(in)
			wantOK(t, r)
			er := req.(*messages.ElicitationRequest)
			if er.URL != c.url || er.Host != c.host || er.IDN != c.idn || er.OriginMismatch != c.mismatch || er.Mode != "url" {
				t.Fatalf("got url %q host %q idn %v mismatch %v", er.URL, er.Host, er.IDN, er.OriginMismatch)
			}
			if er.Fields != nil {
				t.Fatalf("url mode has fields")
			}
			if er.Params.ElicitationID != "el-1" || er.Params.Message != "Link your account" {
				t.Fatalf("params: %+v", er.Params)
			}
		})
	}
	// Every refused URL of TestCheckURL is -32602 in a request.
	for _, u := range []string{"https://user@host/", "https://user:pw@host", "https:///x", "javascript:alert(1)", "data:,x", "file:///etc/passwd", "http://srv.example/", "/relative", "https://exa\x00mple.com/", "https://exa mple.com/"} {
		_, r := New(cfg).Before(legacyIn(messages.MethodElicit, urlParams(u, "el-1")))
		wantRefusal(t, r, codeInvalid, "")
	}
}

func TestElicitationURLAfter(t *testing.T) {
	p := New(Config{Elicitation: ElicitationConfig{Modes: []string{"url"}}})
	in := legacyIn(messages.MethodElicit, urlParams("https://example.com/", "el"))
	req, r := p.Before(in)
	wantOK(t, r)

	res, r := p.After(in, req, &messages.ElicitResult{Action: "accept"})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept"}` {
		t.Fatalf("wire %s", got)
	}
	res, r = p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{}})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept"}` {
		t.Fatalf("wire %s", got)
	}
	_, r = p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"done": true}})
	wantRefusal(t, r, codeInt, "Internal error: a url-mode accept carries no content")
	res, r = p.After(in, req, &messages.ElicitResult{Action: "decline", Content: map[string]any{"why": "no"}})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"decline"}` {
		t.Fatalf("wire %s", got)
	}
}

// FuzzURLVerdict: CheckURL never panics, and what it accepts is an
// absolute https URL without userinfo and with a host.
func FuzzURLVerdict(f *testing.F) {
	for _, s := range []string{
		"https://example.com/", "HTTPS://EXAMPLE.COM/", "https://user@host/", "https:///x",
		"https://[::1]:8443/", "https://аpple.com/", "https://xn--80ak6aa92e.com/",
		"javascript:alert(1)", "data:,x", "file:///etc/passwd", "http://x/", "/rel",
		"https://example.com./", "https://exa\x00mple.com/", "https://a b/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		info, err := CheckURL(raw)
		if err != nil {
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil {
			t.Fatalf("accepted unparsable %q: %v", raw, perr)
		}
		if !strings.EqualFold(u.Scheme, "https") {
			t.Fatalf("accepted scheme %q in %q", u.Scheme, raw)
		}
		if u.User != nil || u.Opaque != "" {
			t.Fatalf("accepted userinfo/opaque in %q", raw)
		}
		if u.Host == "" || u.Hostname() == "" || info.Host == "" {
			t.Fatalf("accepted empty host in %q", raw)
		}
		if info.URL != raw || info.Port == "" {
			t.Fatalf("info %+v for %q", info, raw)
		}
		for _, r := range raw {
			if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\\' {
				t.Fatalf("accepted %U in %q", r, raw)
			}
		}
		if info.Host != strings.ToLower(info.Host) {
			t.Fatalf("host %q not lowercase", info.Host)
		}
		if strings.HasPrefix(info.Host, "xn--") || strings.Contains(info.Host, ".xn--") {
			if !info.IDN {
				t.Fatalf("xn-- host %q without IDN", info.Host)
			}
		}
		// Idempotent on its own normalised form.
		again, err := CheckURL("https://" + bracket(info.Host) + ":" + info.Port + "/")
		if err != nil || again.Host != info.Host || again.IDN != info.IDN {
			t.Fatalf("normalised host %q of %q does not re-check: %v %+v", info.Host, raw, err, again)
		}
		if !info.SameOrigin("https://" + bracket(info.Host) + ":" + info.Port) {
			t.Fatalf("%q not on its own origin", raw)
		}
	})
}

func bracket(h string) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}
