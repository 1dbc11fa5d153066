package era

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/conduitmcp/conduit/internal/jsonscan"
	"github.com/conduitmcp/conduit/messages"
)

// Member is one member of a JSON object. Value is JSON as json.Marshal
// writes it (valid, compact, with <, >, &, U+2028 and U+2029 escaped in
// strings), so an object of members is written by appending bytes.
type Member struct {
	Key   string
	Value json.RawMessage
}

// RawMember returns raw under key, as json.Marshal writes a
// json.RawMessage: an error when raw is not valid JSON.
func RawMember(key string, raw json.RawMessage) (Member, error) {
	if v, ok := jsonscan.Marshaled(raw); ok {
		return Member{Key: key, Value: v}, nil
	}
	_, err := json.Marshal(raw) // words the error
	return Member{}, fmt.Errorf("%s: %w", key, err)
}

// marshalValid returns valid JSON raw as json.Marshal writes it.
func marshalValid(raw json.RawMessage) json.RawMessage {
	v, _ := jsonscan.Marshaled(raw)
	return v
}

// Params are a request's own params, read once, to be written again with
// each round's members and _meta (With). The zero Params is {}.
type Params struct {
	members []Member // by key; values as json.Marshal writes them
	meta    []Member // the members of the params' own _meta, by key
}

// ParseParams reads params that are to carry _meta: an object, or nil or
// null for {}. Anything else is an error, as is a _meta that is not an
// object.
func ParseParams(raw json.RawMessage) (Params, error) {
	var p Params
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || string(trimmed) == "null" {
		return p, nil
	}
	obj, err := members(raw)
	if err != nil {
		return p, fmt.Errorf("params must be a JSON object: %w", err)
	}
	p.members = sorted(obj)
	if old, ok := obj["_meta"]; ok {
		m, err := members(old)
		if err != nil {
			return p, fmt.Errorf("params._meta must be an object: %w", err)
		}
		p.meta = sorted(m)
	}
	return p, nil
}

// members splits a JSON object into its members: in one scan when
// messages.Members can, else through json.Unmarshal (which words the
// error).
func members(raw json.RawMessage) (map[string]json.RawMessage, error) {
	if m, ok := messages.Members(raw); ok {
		return m, nil
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// sorted returns the members of a decoded object (valid JSON values) by
// key, their values as json.Marshal writes them.
func sorted(obj map[string]json.RawMessage) []Member {
	out := make([]Member, 0, len(obj))
	for k, v := range obj {
		out = append(out, Member{Key: k, Value: marshalValid(v)})
	}
	slices.SortFunc(out, byKey)
	return out
}

func byKey(a, b Member) int { return strings.Compare(a.Key, b.Key) }

// setIn sets each of add in members (sorted by key): it replaces the member
// of the same key, or is inserted in key order.
func setIn(members []Member, add ...Member) []Member {
	for _, m := range add {
		if i, found := slices.BinarySearchFunc(members, m, byKey); found {
			members[i] = m
		} else {
			members = slices.Insert(members, i, m)
		}
	}
	return members
}

// With writes the params with extra set (replacing members of the same
// key; extra holds no _meta) and, when meta has members, meta merged into
// their _meta (keys already in _meta are kept unless meta sets them). The
// output is what json.Marshal makes of the merged members: keys sorted, at
// both levels.
func (p Params) With(extra, meta []Member) json.RawMessage {
	// The merged lists live on the stack unless they are long.
	var topSpace, metaSpace [8]Member
	top := setIn(append(topSpace[:0], p.members...), extra...)
	var merged []Member
	if len(meta) > 0 {
		merged = setIn(append(metaSpace[:0], p.meta...), meta...)
		// A place for _meta in key order; its value is merged, written
		// in place below.
		top = setIn(top, Member{Key: "_meta"})
	}
	n := 2 + objectSize(top) + objectSize(merged)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, m := range top {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonscan.AppendString(b, m.Key), ':')
		if m.Key == "_meta" && merged != nil {
			b = appendObject(b, merged)
		} else {
			b = append(b, m.Value...)
		}
	}
	return append(b, '}')
}

// WithMeta is ParseParams then With, for params written once.
func WithMeta(params json.RawMessage, extra, meta []Member) (json.RawMessage, error) {
	p, err := ParseParams(params)
	if err != nil {
		return nil, err
	}
	return p.With(extra, meta), nil
}

// MarshalObject returns what json.Marshal makes of members, appending
// the values that are json.RawMessage (the answers to input requests are)
// without reflection.
func MarshalObject(members map[string]any) (json.RawMessage, error) {
	if members == nil {
		return json.RawMessage("null"), nil
	}
	var space [8]Member
	sorted := space[:0]
	for k, v := range members {
		raw, ok := v.(json.RawMessage)
		if !ok || !json.Valid(raw) {
			return json.Marshal(members) // the general way, which words any error
		}
		sorted = append(sorted, Member{Key: k, Value: marshalValid(raw)})
	}
	slices.SortFunc(sorted, byKey)
	return appendObject(make([]byte, 0, objectSize(sorted)), sorted), nil
}

// objectSize is about the length of members written as an object.
func objectSize(members []Member) int {
	n := 2
	for _, m := range members {
		n += len(m.Key) + len(m.Value) + 4
	}
	return n
}

// appendObject appends members (sorted by key) as a JSON object.
func appendObject(b []byte, members []Member) []byte {
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(jsonscan.AppendString(b, m.Key), ':'), m.Value...)
	}
	return append(b, '}')
}
