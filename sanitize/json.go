package sanitize

import (
	"unicode/utf16"
	"unicode/utf8"
)

// JSON returns the JSON text b with every character that Text removes
// written, inside strings, as a \u escape, so that the JSON means exactly
// what it meant and shows in a terminal as it is. encoding/json escapes the
// C0 controls already, and U+2028 and U+2029, but not DEL, the C1 controls
// (U+0080–U+009F: U+009B starts a terminal control sequence and U+009D an
// operating system command, as ESC [ and ESC ] do), the bidirectional
// controls (Trojan Source) nor the invisible characters: this does.
//
// An invalid UTF-8 byte inside a string becomes \ufffd, as encoding/json
// reads it. Outside strings valid JSON has only ASCII and whitespace; what
// else b holds there (it is then not JSON) is escaped all the same, so no
// input gets through raw. When nothing needs escaping b itself is returned.
func JSON(b []byte) []byte {
	if !needsJSONEscape(b) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	inString, backslash := false, false
	for i := 0; i < len(b); {
		c := b[i]
		if !inString && (c == '\n' || c == '\t' || c == '\r') {
			out = append(out, c)
			i++
			continue
		}
		if c < utf8.RuneSelf && c >= 0x20 && c != 0x7F {
			switch {
			case !inString:
				inString = c == '"'
			case backslash:
				backslash = false
			case c == '\\':
				backslash = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
			i++
			continue
		}
		backslash = false
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = appendEscape(out, utf8.RuneError)
		case forbidden(r):
			out = appendEscape(out, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// needsJSONEscape reports whether b holds a byte that JSON may have to
// escape: anything but printable ASCII and JSON's whitespace.
func needsJSONEscape(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c >= 0x7F) && c != '\n' && c != '\t' && c != '\r' {
			return true
		}
	}
	return false
}

// appendEscape appends r as \uXXXX, or a surrogate pair of them beyond the
// Basic Multilingual Plane.
func appendEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	one := func(out []byte, u rune) []byte {
		return append(out, '\\', 'u', hex[u>>12&0xF], hex[u>>8&0xF], hex[u>>4&0xF], hex[u&0xF])
	}
	if r > 0xFFFF {
		hi, lo := utf16.EncodeRune(r)
		return one(one(out, hi), lo)
	}
	return one(out, r)
}
