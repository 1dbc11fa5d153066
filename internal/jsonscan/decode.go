package jsonscan

import (
	"encoding/json"
	"strconv"
	"strings"
)

// The decoders below fill Go values from valid JSON (as Valid reports) in
// one pass, for the fast paths of messages, guards and the client: each
// reports false wherever it cannot be sure to give what json.Unmarshal
// gives, and its caller then decodes with encoding/json.

// Struct walks the members of the object raw as json.Unmarshal into a
// struct with the JSON field names names (at most 64) does: set gets each
// member whose key is one of the names, members with other keys are
// skipped. It reports false when raw is not an object, a key is escaped or
// beyond ASCII, a key matches a name only when case is ignored
// (encoding/json would take it for the field), a name comes twice
// (encoding/json would merge the two values) or set reports false.
func Struct(raw []byte, names []string, set func(name string, value []byte) bool) bool {
	var seen uint64
	return Object(raw, func(key, value []byte) bool {
		// The key as written first: a name matches only itself when case
		// is ignored (the names of one struct differ in more than case),
		// so the case-blind comparisons are needed only for a key that is
		// none of them.
		for i, name := range names {
			if string(key) != name {
				continue
			}
			if seen&(1<<i) != 0 {
				return false
			}
			seen |= 1 << i
			return set(name, value)
		}
		for _, name := range names {
			if strings.EqualFold(string(key), name) {
				return false
			}
		}
		return true
	})
}

// Slice decodes the array raw into a new slice, non-nil even when empty
// (as encoding/json makes it), each element by elem; it reports false
// when raw is not an array or elem reports false.
func Slice[T any](raw []byte, elem func(raw []byte) (T, bool)) ([]T, bool) {
	out := []T{}
	ok := Array(raw, func(e []byte) bool {
		v, ok := elem(e)
		out = append(out, v)
		return ok
	})
	return out, ok
}

// SliceInto is Slice appending to buf[:0]: a caller that lends storage
// for the common length saves the slice's allocation.
func SliceInto[T any](buf []T, raw []byte, elem func(raw []byte) (T, bool)) ([]T, bool) {
	out := buf[:0]
	if out == nil {
		out = []T{}
	}
	ok := Array(raw, func(e []byte) bool {
		v, ok := elem(e)
		out = append(out, v)
		return ok
	})
	return out, ok
}

// Raw is value as a json.RawMessage field decodes it: a copy (null
// included).
func Raw(value []byte) json.RawMessage { return append(json.RawMessage(nil), value...) }

// IsNull reports whether value, without space around it, is null.
func IsNull(value []byte) bool { return string(value) == "null" }

// Bool decodes true, false or null as a bool field of a zero struct
// decodes it (null leaves it false).
func Bool(value []byte) (b, ok bool) {
	switch string(value) {
	case "true":
		return true, true
	case "false", "null":
		return false, true
	}
	return false, false
}

// BoolPointer decodes true, false or null as a *bool field decodes it.
func BoolPointer(value []byte) (*bool, bool) {
	if IsNull(value) {
		return nil, true
	}
	b, ok := Bool(value)
	if !ok {
		return nil, false
	}
	return &b, true
}

// FloatPointer decodes a number or null as a *float64 field decodes it.
func FloatPointer(value []byte) (*float64, bool) {
	if IsNull(value) {
		return nil, true
	}
	if len(value) == 0 {
		return nil, false
	}
	if c := value[0]; c != '-' && (c < '0' || c > '9') {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(value), 64)
	if err != nil {
		return nil, false
	}
	return &f, true
}
