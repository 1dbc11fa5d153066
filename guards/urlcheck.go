package guards

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// URLInfo is what CheckURL learns from a URL-mode elicitation URL. The
// client never fetches the URL; these fields are for showing it.
type URLInfo struct {
	// URL is the URL exactly as the server sent it.
	URL string
	// Host is the hostname the URL leads to, normalised: IDNA ASCII form
	// (xn-- labels for non-ASCII names), lowercase, without port; an IPv6
	// literal in canonical form without brackets; a single trailing dot is
	// kept.
	Host string
	// Port is the effective port ("443" when the URL has none).
	Port string
	// IDN is true when any label of Host is a punycode (xn--) label, either
	// as sent or after IDNA conversion of a non-ASCII name.
	IDN bool
	// WrittenHost is the host as the URL writes it (without brackets and
	// port). HostMapped is true when it is not the host the URL leads to,
	// letter case and the Unicode form of an IDN aside: IDNA mapped some
	// of its characters (U+3002 IDEOGRAPHIC FULL STOP and the other dots
	// to ".", full-width letters to ASCII) or it is percent-encoded, so
	// "https://example.com。evil.com/" reads as example.com but leads to
	// example.com.evil.com. Show Host, and warn.
	WrittenHost string
	HostMapped  bool
}

// MaxURLBytes is the longest URL-mode elicitation URL CheckURL accepts:
// a URL a person is asked to read and consent to at a consent screen. A
// longer one is refused (-32602 from the guards).
const MaxURLBytes = 8 << 10

// hostProfile is the IDNA profile for URL hosts: UTS 46 lookup mapping
// (case folding, width mapping), STD3 ASCII rules, hyphen, joiner and Bidi
// checks, and DNS length limits (no empty labels).
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.VerifyDNSLength(true),
	idna.CheckHyphens(true),
	idna.CheckJoiners(true),
	idna.Transitional(false),
)

// CheckURL applies the URL-mode rules to raw: an absolute https URL (scheme
// case-insensitive) with a non-empty host and no userinfo. It also refuses,
// because a browser and this parser could read them differently or a user
// could be misled by them: any whitespace, control, format (bidi) or
// separator character anywhere in the URL, invalid UTF-8, backslashes, IPv6
// zones, ports outside 1..65535, hosts IDNA rejects, numeric hosts that
// are not canonical dotted IPv4 (a browser reads "https://2130706433/" as
// 127.0.0.1), and URLs longer than MaxURLBytes.
func CheckURL(raw string) (URLInfo, error) {
	if raw == "" {
		return URLInfo{}, errors.New("url is empty")
	}
	if len(raw) > MaxURLBytes {
		return URLInfo{}, fmt.Errorf("url is %d bytes, over the limit of %d", len(raw), MaxURLBytes)
	}
	if !utf8.ValidString(raw) {
		return URLInfo{}, errors.New("url is not valid UTF-8")
	}
	for _, r := range raw {
		if r == ' ' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Zs) {
			return URLInfo{}, fmt.Errorf("url contains the character %U", r)
		}
		if r == '\\' {
			return URLInfo{}, errors.New("url contains a backslash")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return URLInfo{}, errors.New("url does not parse")
	}
	if !strings.EqualFold(u.Scheme, "https") {
		if u.Scheme == "" {
			return URLInfo{}, errors.New("url is not absolute")
		}
		return URLInfo{}, fmt.Errorf("url scheme %q is not https", u.Scheme)
	}
	if u.Opaque != "" {
		return URLInfo{}, errors.New("url has no authority (https://host)")
	}
	if u.User != nil {
		return URLInfo{}, errors.New("url carries userinfo")
	}
	host, port, err := normalizeHost(u)
	if err != nil {
		return URLInfo{}, err
	}
	if port == "" {
		port = "443"
	}
	info := URLInfo{URL: raw, Host: host, Port: port, WrittenHost: writtenHost(raw, u.Scheme)}
	for _, l := range strings.Split(host, ".") {
		if strings.HasPrefix(l, "xn--") {
			info.IDN = true
		}
	}
	info.HostMapped = hostMapped(info.WrittenHost, host)
	return info, nil
}

// writtenHost is the host of raw, an absolute URL with an authority and no
// userinfo, as written: without brackets and port, not unescaped.
func writtenHost(raw, scheme string) string {
	authority := raw[len(scheme)+len("://"):]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if strings.HasPrefix(authority, "[") {
		h, _, _ := strings.Cut(authority[1:], "]")
		return h
	}
	if i := strings.LastIndexByte(authority, ':'); i >= 0 {
		authority = authority[:i]
	}
	return authority
}

// hostMapped reports whether written, a host as written, differs from
// host, where it leads, beyond letter case and an IDN's Unicode form. An
// IPv6 literal is never mapped: only its notation differs.
func hostMapped(written, host string) bool {
	if strings.EqualFold(written, host) {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() {
		return false
	}
	if unicode, err := hostProfile.ToUnicode(host); err == nil && strings.EqualFold(written, unicode) {
		return false
	}
	return true
}

// normalizeHost returns u's hostname (normalised as URLInfo.Host describes)
// and its explicit port ("" when none).
func normalizeHost(u *url.URL) (host, port string, err error) {
	if u.Host == "" {
		return "", "", errors.New("url has no host")
	}
	port = u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("url port %q is out of range", port)
		}
		port = strconv.Itoa(n)
	}
	name := u.Hostname()
	if name == "" {
		return "", "", errors.New("url has no host")
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(name)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", "", errors.New("url host is not a valid IPv6 literal")
		}
		return a.String(), port, nil
	}
	if strings.ContainsAny(name, "%[]:") {
		return "", "", errors.New("url host has invalid characters")
	}
	// One trailing dot (the DNS root) is allowed and kept; empty labels
	// anywhere else are not.
	trailingDot := strings.HasSuffix(name, ".")
	name = strings.TrimSuffix(name, ".")
	if slices.Contains(strings.Split(name, "."), "") {
		return "", "", errors.New("url host has an empty label")
	}
	if !utf8.ValidString(name) {
		return "", "", errors.New("url host is not valid UTF-8")
	}
	ascii, err := hostProfile.ToASCII(name)
	if err != nil {
		return "", "", errors.New("url host is not a valid domain name (IDNA)")
	}
	// The ASCII form must be stable: converting it again gives it back.
	if again, err := hostProfile.ToASCII(ascii); err != nil || again != ascii {
		return "", "", errors.New("url host is not a valid domain name (IDNA)")
	}
	ascii = strings.ToLower(ascii)
	// IDNA maps U+3002, U+FF0E and U+FF61 to ".": a dot that appears only
	// now is held to the same rules (one trailing dot, no empty label), and
	// the last label is read without it, as a browser reads it.
	if strings.HasSuffix(ascii, ".") {
		if trailingDot {
			return "", "", errors.New("url host has an empty label")
		}
		trailingDot = true
		ascii = strings.TrimSuffix(ascii, ".")
	}
	labels := strings.Split(ascii, ".")
	if slices.Contains(labels, "") {
		return "", "", errors.New("url host has an empty label")
	}
	if last := labels[len(labels)-1]; numericLabel(last) {
		a, err := netip.ParseAddr(ascii)
		if err != nil || !a.Is4() {
			return "", "", errors.New("url host is a non-canonical IPv4 address")
		}
	}
	if trailingDot {
		ascii += "."
	}
	return ascii, port, nil
}

// numericLabel reports whether a browser would take l (the last label) as
// the end of an IPv4 address: all decimal digits, or 0x followed by hex.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		for _, c := range l[2:] {
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// origin is a normalised scheme://host:port.
type origin struct{ scheme, host, port string }

// parseOrigin reads a server origin (scheme://host[:port], a path is
// ignored). ok is false when it is empty or unusable.
func parseOrigin(s string) (o origin, ok bool) {
	if s == "" {
		return origin{}, false
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.User != nil {
		return origin{}, false
	}
	host, port, err := normalizeHost(u)
	if err != nil {
		return origin{}, false
	}
	scheme := strings.ToLower(u.Scheme)
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		default:
			return origin{}, false
		}
	}
	return origin{scheme: scheme, host: host, port: port}, true
}

// SameOrigin reports whether the URL is on serverOrigin: same scheme, same
// normalised host, same port (443 when absent). An empty or unusable origin
// is never the same.
func (i URLInfo) SameOrigin(serverOrigin string) bool {
	o, ok := parseOrigin(serverOrigin)
	if !ok {
		return false
	}
	return o.scheme == "https" && o.host == i.Host && o.port == i.Port
}
