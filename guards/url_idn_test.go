package guards

import (
	"encoding/json"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

// A host written in Unicode gets the verdict its punycode form gets, and
// the other way round: the same Host, Port, IDN and HostMapped (false:
// the Unicode form of an IDN is not a mapping), the same origin check, and
// through the elicitation guard the same request, whether the server
// writes the URL's characters as such or as JSON escapes.
func TestIDNVerdictIsTheSameInEitherForm(t *testing.T) {
	pairs := []struct{ unicode, punycode, host string }{
		{"https://аррӏе.com/connect", "https://xn--80ak6aa92e.com/connect", "xn--80ak6aa92e.com"},        // Cyrillic lookalike
		{"https://Аррӏе.com/connect", "https://XN--80AK6AA92E.com/connect", "xn--80ak6aa92e.com"},        // letter case
		{"https://bücher.example:8443/", "https://xn--bcher-kva.example:8443/", "xn--bcher-kva.example"}, // Latin, a port
		{"https://straße.de./", "https://xn--strae-oqa.de./", "xn--strae-oqa.de."},                       // ß kept (non-transitional), trailing dot
		{"https://пример.рф/", "https://xn--e1afmkfd.xn--p1ai/", "xn--e1afmkfd.xn--p1ai"},                // every label
		{"https://例え.jp/", "https://xn--r8jz45g.jp/", "xn--r8jz45g.jp"},                                  // CJK
		{"https://login.αβγ.example/", "https://login.xn--mxacd.example/", "login.xn--mxacd.example"},    // one label of three
	}
	for _, p := range pairs {
		t.Run(p.punycode, func(t *testing.T) {
			u, err := CheckURL(p.unicode)
			if err != nil {
				t.Fatalf("%s: %v", p.unicode, err)
			}
			a, err := CheckURL(p.punycode)
			if err != nil {
				t.Fatalf("%s: %v", p.punycode, err)
			}
			if u.Host != p.host || a.Host != p.host || !u.IDN || !a.IDN || u.HostMapped || a.HostMapped || u.Port != a.Port {
				t.Fatalf("unicode %+v, punycode %+v: want host %q, IDN, not mapped, one port", u, a, p.host)
			}
			for _, origin := range []string{p.unicode, p.punycode} {
				if !u.SameOrigin(origin) || !a.SameOrigin(origin) {
					t.Fatalf("origin %q: unicode same %v, punycode same %v", origin, u.SameOrigin(origin), a.SameOrigin(origin))
				}
			}
			cfg := Config{Elicitation: ElicitationConfig{Modes: []string{"url"}, Origin: "https://srv.example"}}
			escaped, _ := json.Marshal(map[string]any{"mode": "url", "message": "m", "elicitationId": "e", "url": p.unicode})
			var asciiOnly []byte // the same params with every non-ASCII character a \u escape
			for _, r := range string(escaped) {
				if r < 0x80 {
					asciiOnly = append(asciiOnly, byte(r))
				} else {
					asciiOnly = append(asciiOnly, []byte(jsonEscape(r))...)
				}
			}
			for _, params := range []string{urlParams(p.unicode, "e"), string(asciiOnly), urlParams(p.punycode, "e")} {
				req, r := New(cfg).Before(legacyIn(messages.MethodElicit, params))
				wantOK(t, r)
				er := req.(*messages.ElicitationRequest)
				if er.Host != p.host || !er.IDN || er.HostMapped || !er.OriginMismatch {
					t.Fatalf("%s: host %q idn %v mapped %v mismatch %v", params, er.Host, er.IDN, er.HostMapped, er.OriginMismatch)
				}
			}
		})
	}
}

// jsonEscape writes r as a JSON \u escape (a surrogate pair beyond the
// BMP).
func jsonEscape(r rune) string {
	if r >= 0x10000 {
		r -= 0x10000
		return jsonU(0xD800+(r>>10)) + jsonU(0xDC00+(r&0x3FF))
	}
	return jsonU(r)
}

func jsonU(r rune) string {
	const hex = "0123456789abcdef"
	return `\u` + string([]byte{hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF]})
}
