package jsonscan

import (
	"bytes"
	"encoding/json"
)

// AppendString appends s as a JSON string, escaped as json.Marshal escapes
// it: a string with nothing to escape is copied, any other goes through
// json.Marshal.
func AppendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// Marshaled returns raw as json.Marshal writes a json.RawMessage:
// compacted, with <, >, &, U+2028 and U+2029 escaped inside strings, null
// for nil. Raw that is already so is returned as is, not copied. It
// reports false when raw is not valid JSON, empty included (json.Marshal's
// error words why).
func Marshaled(raw []byte) ([]byte, bool) {
	if raw == nil {
		return []byte("null"), true // as RawMessage.MarshalJSON
	}
	if !Valid(raw) {
		return nil, false
	}
	if plain(raw, true) {
		return raw, true
	}
	var compact, escaped bytes.Buffer
	_ = json.Compact(&compact, raw) // valid JSON always compacts
	json.HTMLEscape(&escaped, compact.Bytes())
	return escaped.Bytes(), true
}

// Compacted returns raw compacted and otherwise as it is: every string
// byte for byte, no escaping added (unlike Marshaled). Raw that is already
// compact is returned as is, not copied. It reports false when raw is not
// valid JSON, empty included; nil is null.
func Compacted(raw []byte) ([]byte, bool) {
	if raw == nil {
		return []byte("null"), true
	}
	if !Valid(raw) {
		return nil, false
	}
	if plain(raw, false) {
		return raw, true
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw) // valid JSON always compacts
	return compact.Bytes(), true
}

// plain reports whether valid JSON raw has no space outside strings and,
// when html is set, no byte json.Marshal would escape inside them (<, >, &
// and the first byte of U+2028 and U+2029).
func plain(raw []byte, html bool) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			case '<', '>', '&', 0xE2:
				if html {
					return false
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return true
}
