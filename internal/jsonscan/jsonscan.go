// Package jsonscan reads JSON text by hand where encoding/json's scanner
// and reflection cost more than the job: checking that a message is JSON,
// splitting an object into its members, reading a plain string, filling a
// struct's members; and writes a string or a raw value as json.Marshal
// does. Every answer is the one encoding/json gives for the
// same bytes; where a function cannot be sure of that (an escaped key,
// say) it reports false and the caller asks encoding/json. It is plumbing
// shared by messages, guards and the Client, not API.
package jsonscan

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is encoding/json's nesting limit: Valid refuses deeper text, as
// json.Valid does.
const maxDepth = 10000

// Valid reports whether data is one JSON value with optional space around
// it: exactly json.Valid, in one pass without its per-byte state machine
// (no UTF-8 check inside strings, nesting up to 10 000 levels).
func Valid(data []byte) bool {
	var buf [32]byte
	open := buf[:0] // '{' or '[' of each container not yet closed
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		switch c := data[i]; c {
		case '{', '[':
			if len(open) >= maxDepth {
				return false
			}
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			if i = skipSpace(data, i+1); i < len(data) && data[i] == end {
				i++ // empty: the value ends here
				break
			}
			open = append(open, c)
			if c == '{' {
				if i = memberValue(data, i); i < 0 {
					return false
				}
			}
			continue
		case '"':
			i = validString(data, i)
		case 't':
			i = literal(data, i, "true")
		case 'f':
			i = literal(data, i, "false")
		case 'n':
			i = literal(data, i, "null")
		default:
			i = number(data, i)
		}
		if i < 0 {
			return false
		}
		// A value ended at i: close the containers it ends, up to the
		// next value.
		for {
			i = skipSpace(data, i)
			if len(open) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := open[len(open)-1]
			if data[i] == ',' {
				i = skipSpace(data, i+1)
				if top == '{' {
					if i = memberValue(data, i); i < 0 {
						return false
					}
				}
				break
			}
			if (top == '{' && data[i] != '}') || (top == '[' && data[i] != ']') {
				return false
			}
			open = open[:len(open)-1]
			i++
		}
	}
}

// memberValue reads a member's key and colon at i and returns where its
// value starts (after space), or -1 when they are not there.
func memberValue(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = validString(data, i); i < 0 {
		return -1
	}
	if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

// validString returns the index just past the string starting at i, or -1
// when it is not a valid JSON string (an unknown escape, a control byte, no
// closing quote). Bytes beyond ASCII are not checked, as in json.Valid.
func validString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			if i++; i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return -1
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal returns the index just past word at i, or -1.
func literal(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// number returns the index just past the number -?(0|[1-9][0-9]*)
// (.[0-9]+)?([eE][+-]?[0-9]+)? at i, or -1.
func number(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return -1
	case data[i] == '0':
		i++
	case isDigit(data[i]):
		i = digits(data, i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		if i = digits(data, i+1); i < 0 {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		if i++; i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i = digits(data, i); i < 0 {
			return -1
		}
	}
	return i
}

// digits returns the index just past the one or more digits at i, or -1.
func digits(data []byte, i int) int {
	start := i
	for i < len(data) && isDigit(data[i]) {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// Object calls fn with each member of the object data, which must be valid
// JSON (as Valid reports), in order: the key's bytes between its quotes,
// and the value without the space around it (aliasing data). It reports
// false when data is not an object, when a key holds an escape or a byte
// beyond ASCII (its text is not its bytes: encoding/json unescapes it, and
// mends bad UTF-8), or when fn reports false; fn may have been called for
// the members before.
func Object(data []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	for i = skipSpace(data, i+1); data[i] != '}'; {
		end := stringEnd(data, i)
		key := data[i+1 : end-1]
		for _, c := range key {
			if c == '\\' || c >= 0x80 {
				return false
			}
		}
		i = skipSpace(data, skipSpace(data, end)+1) // past the colon
		start := i
		i = valueEnd(data, i)
		if !fn(key, data[start:i]) {
			return false
		}
		if i = skipSpace(data, i); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

// Array calls fn with each element of the array data, which must be valid
// JSON (as Valid reports), in order, without the space around it. It
// reports false when data is not an array or fn reports false.
func Array(data []byte, fn func(elem []byte) bool) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return false
	}
	for i = skipSpace(data, i+1); data[i] != ']'; {
		start := i
		i = valueEnd(data, i)
		if !fn(data[start:i]) {
			return false
		}
		if i = skipSpace(data, i); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return true
}

// aliasMin is the size from which a plain string is not copied out of the
// message it is in (String).
const aliasMin = 1 << 20

// String decodes the JSON value raw as json.Unmarshal into a string does: a
// plain string (printable ASCII, no escape) by slicing, any other string by
// unquoting it into one buffer, the string returned (json.Unmarshal copies
// twice: a big text with escapes was held three times), anything else
// (null, space around a string) through encoding/json. It reports false
// when raw is not a string.
//
// A plain string of aliasMin bytes or more is not copied at all: the string
// shares raw's bytes (a 50 MB tool result is then held once, not in the
// message and again in its text). That is safe because a message is never
// written to once read: a transport hands each one over for good
// (transport.Conn.Read), and the json.RawMessage of results and params
// already share its bytes the same way. It keeps the message's buffer
// alive as long as the string.
func String(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		// null, a value that is not a string, space around one: rare.
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	plain := true
	for i := 1; plain && i < n-1; i++ {
		c := raw[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	switch {
	case plain && n-2 >= aliasMin:
		return unsafe.String(&raw[1], n-2), true
	case plain:
		return string(raw[1 : n-1]), true
	}
	return unquote(raw[1 : n-1])
}

// unquote decodes s, the inside of a JSON string, as encoding/json does:
// escapes decoded, a \u escape of a lone surrogate or a byte that is not
// UTF-8 become U+FFFD. It reports false for what is not a JSON string (a
// control character, a quote, a bad escape). Only text with bytes that are
// not UTF-8 outgrows len(s).
func unquote(s []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		// A run of bytes copied as they are.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '"' && s[j] != '\\' {
			j++
		}
		b.Write(s[i:j])
		if i = j; i == len(s) {
			break
		}
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) {
				return "", false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := hex4(s[i+2:])
				if r < 0 {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(s) >= i+6 && s[i] == '\\' && s[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(s[i+2:])); dec != unicode.ReplacementChar {
							b.WriteRune(dec)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				b.WriteRune(r)
				continue
			default:
				return "", false
			}
			i += 2
		case c < 0x20 || c == '"':
			return "", false
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.Write(s[i : i+size])
			}
			i += size
		}
	}
	return b.String(), true
}

// hex4 reads the four hex digits at the start of s, or returns -1.
func hex4(s []byte) rune {
	if len(s) < 4 {
		return -1
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// Interner holds strings every message repeats (the JSON-RPC version,
// method names, roles, content types), so that decoding one of them
// allocates nothing: Interner.String gives the Interner's own copy.
type Interner map[string]string

// NewInterner returns the Interner of ss. Each must be plain (printable
// ASCII, no quote or backslash): then raw bytes equal to it between quotes
// are that string, with no escape to decode.
func NewInterner(ss ...string) Interner {
	in := make(Interner, len(ss))
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
				panic("jsonscan: an interned string must be plain: " + s)
			}
		}
		in[s] = s
	}
	return in
}

// String is jsonscan.String, but a string in holds comes back as in's own
// copy, without an allocation.
func (in Interner) String(raw []byte) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		if s, ok := in[string(raw[1:n-1])]; ok {
			return s, true
		}
	}
	return String(raw)
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the valid string starting at i.
func stringEnd(data []byte, i int) int {
	for i++; data[i] != '"'; i++ {
		if data[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// valueEnd returns the index just past the valid JSON value starting at i.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(data) && data[i] != ',' && data[i] != '}' && data[i] != ']' && data[i] != ' ' && data[i] != '\t' && data[i] != '\n' && data[i] != '\r' {
		i++
	}
	return i
}
