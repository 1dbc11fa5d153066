package era

// A scan of one JSON object's top-level members that reads no further than
// it must and checks nothing it need not: the results it reads come from
// decoded frames, which messages.Decode has already found to be valid
// JSON. Each index is bounds-checked all the same, so malformed input is
// never a panic: the scan gives up (ok false) or reads something that a
// full decode would have refused.

// scanObject calls fn with each top-level member of the object raw, in
// order: its key as written between the quotes, and its value. It reports
// false, having stopped, when fn does, and when the scan cannot read raw
// as json.Unmarshal would: raw is not an object, a key has an escape or a
// byte that is not printable ASCII (Unmarshal unescapes keys, mends bad
// UTF-8 and folds Unicode case), or raw is malformed after all. The caller
// then decodes raw in full.
func scanObject(raw []byte, fn func(key, value []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return false
	}
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) && raw[i] == '"' {
		end, plain := stringEnd(raw, i)
		if end < 0 || !plain {
			return false
		}
		key := raw[i+1 : end-1]
		if i = skipSpace(raw, end); i == len(raw) || raw[i] != ':' {
			return false
		}
		start := skipSpace(raw, i+1)
		if i = valueEnd(raw, start); i < 0 || !fn(key, raw[start:i]) {
			return false
		}
		if i = skipSpace(raw, i); i == len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
	return false
}

// stringMember reads what json.Unmarshal gives a *string struct field
// tagged name (ASCII only): the last top-level member of the object raw
// whose key equals name without regard to ASCII case decides; its text is
// returned with present true, or present is false when there is no such
// member or the last is null. ok is false when the scan cannot tell (see
// scanObject), or a matching member is neither null nor a string of
// printable ASCII without escapes: Unmarshal would unescape it, mend bad
// UTF-8, or refuse it, and a refusal anywhere fails the whole decode.
func stringMember(raw []byte, name string) (text []byte, present, ok bool) {
	ok = scanObject(raw, func(key, v []byte) bool {
		if !equalFoldASCII(key, name) {
			return true
		}
		switch {
		case isNull(v):
			text, present = nil, false
		case v[0] == '"':
			end, plain := stringEnd(v, 0)
			if !plain || end != len(v) {
				return false
			}
			text, present = v[1:len(v)-1], true
		default:
			return false
		}
		return true
	})
	if !ok {
		return nil, false, false
	}
	return text, present, true
}

// isNull reports whether the value v is the literal null.
func isNull(v []byte) bool { return string(v) == "null" }

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string that starts at i, and
// whether it is plain: printable ASCII without escapes. It returns -1
// when the string does not end.
func stringEnd(raw []byte, i int) (end int, plain bool) {
	plain = true
	for i++; i < len(raw); i++ {
		switch c := raw[i]; {
		case c == '"':
			return i + 1, plain
		case c == '\\':
			plain = false
			i++ // the escaped byte cannot end the string
		case c < 0x20 || c >= 0x7f:
			plain = false
		}
	}
	return -1, false
}

// valueEnd returns the index just past the value that starts at i, or -1
// when it does not end.
func valueEnd(raw []byte, i int) int {
	if i == len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		end, _ := stringEnd(raw, i)
		return end
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				end, _ := stringEnd(raw, i)
				if end < 0 {
					return -1
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(raw) && raw[i] != ',' && raw[i] != '}' && raw[i] != ']' && raw[i] != ' ' && raw[i] != '\t' && raw[i] != '\n' && raw[i] != '\r' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// equalFoldASCII reports whether the ASCII key equals name without regard
// to ASCII case, as encoding/json matches a key to a field.
func equalFoldASCII(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := range len(key) {
		a, b := key[i], name[i]
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}
