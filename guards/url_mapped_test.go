package guards

import (
	"strconv"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

// A host written otherwise than the host it leads to is flagged: the user
// reads example.com in "https://example.com。evil.com/", the browser goes
// to example.com.evil.com. Letter case, an IDN's Unicode form (flagged IDN
// already) and an IPv6 literal's notation are not mappings.
func TestCheckURLHostMapped(t *testing.T) {
	cases := []struct {
		raw, written, host string
		idn, mapped        bool
	}{
		{"https://example.com。evil.com/", "example.com。evil.com", "example.com.evil.com", false, true},
		{"https://example.com．evil.com/login", "example.com．evil.com", "example.com.evil.com", false, true},
		{"https://example.com｡evil.com:8443/", "example.com｡evil.com", "example.com.evil.com", false, true},
		{"https://example.com%E3%80%82evil.com/", "example.com%E3%80%82evil.com", "example.com.evil.com", false, true},
		{"https://ｅxample.com/", "ｅxample.com", "example.com", false, true},
		{"https://example.com。/", "example.com。", "example.com.", false, true},
		{"https://example.com/", "example.com", "example.com", false, false},
		{"https://EXAMPLE.Com:443/x?y#z", "EXAMPLE.Com", "example.com", false, false},
		{"https://example.com./", "example.com.", "example.com.", false, false},
		{"https://аpple.com/", "аpple.com", "xn--pple-43d.com", true, false},
		{"https://xn--pple-43d.com/", "xn--pple-43d.com", "xn--pple-43d.com", true, false},
		{"https://Straße.de/", "Straße.de", "xn--strae-oqa.de", true, false},
		{"https://[0:0::1]:8443/", "0:0::1", "::1", false, false},
		{"https://127.0.0.1/", "127.0.0.1", "127.0.0.1", false, false},
	}
	for _, c := range cases {
		t.Run(c.raw, func(t *testing.T) {
			info, err := CheckURL(c.raw)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if info.WrittenHost != c.written || info.Host != c.host || info.IDN != c.idn || info.HostMapped != c.mapped {
				t.Fatalf("got written %q host %q idn %v mapped %v, want %q %q %v %v",
					info.WrittenHost, info.Host, info.IDN, info.HostMapped, c.written, c.host, c.idn, c.mapped)
			}
		})
	}
}

// A URL longer than MaxURLBytes never reaches a consent screen.
func TestCheckURLLength(t *testing.T) {
	prefix := "https://example.com/"
	atLimit := prefix + strings.Repeat("a", MaxURLBytes-len(prefix))
	if _, err := CheckURL(atLimit); err != nil {
		t.Fatalf("%d bytes: refused: %v", len(atLimit), err)
	}
	for _, n := range []int{MaxURLBytes + 1, 2 << 20} {
		raw := prefix + strings.Repeat("a", n-len(prefix))
		_, err := CheckURL(raw)
		want := "url is " + strconv.Itoa(n) + " bytes, over the limit of 8192"
		if err == nil || err.Error() != want {
			t.Fatalf("%d bytes: err %v, want %q", n, err, want)
		}
	}

	// In a request: -32602, before the handler, in both eras.
	cfg := Config{Elicitation: ElicitationConfig{Modes: []string{"url"}}}
	long := prefix + strings.Repeat("a", 2<<20-len(prefix))
	for _, in := range []*Input{legacyIn(messages.MethodElicit, urlParams(long, "el-1")), input(messages.MethodElicit, v0728, messages.EraModern, urlParams(long, ""))} {
		_, r := New(cfg).Before(in)
		wantRefusal(t, r, codeInvalid, "Invalid params: url is 2097152 bytes, over the limit of 8192")
	}
}

// The request a handler gets carries the verdict.
func TestElicitationURLRequestHostMapped(t *testing.T) {
	cfg := Config{Elicitation: ElicitationConfig{Modes: []string{"url"}, Origin: "https://example.com"}}
	req, r := New(cfg).Before(legacyIn(messages.MethodElicit, urlParams("https://example.com。evil.com/", "el-1")))
	wantOK(t, r)
	er := req.(*messages.ElicitationRequest)
	if er.Host != "example.com.evil.com" || er.WrittenHost != "example.com。evil.com" || !er.HostMapped || er.IDN || !er.OriginMismatch {
		t.Fatalf("got host %q written %q mapped %v idn %v mismatch %v", er.Host, er.WrittenHost, er.HostMapped, er.IDN, er.OriginMismatch)
	}
}
