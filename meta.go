package conduit

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/conduitmcp/conduit/era"
)

// WithMeta adds meta to the request's _meta, in either era and for any
// method (Call and the typed methods alike), beside what Conduit puts there
// itself: the progress token (WithProgressToken) and, in the modern era,
// the protocol version, client capabilities, client info and log level.
// Those keys are Conduit's: a meta with "progressToken" or with a key under
// a prefix the protocol reserves (second label "modelcontextprotocol" or
// "mcp", as in io.modelcontextprotocol/…) is refused with KindUsage before
// anything is sent, as is a value that cannot be encoded. A _meta already in
// params given to Call is kept, WithMeta's keys over its own.
func WithMeta(meta map[string]any) CallOption { return func(o *callOptions) { o.meta = meta } }

// reservedMetaKey reports whether a _meta key belongs to the protocol (and
// so to Conduit): progressToken, or a prefix whose second label is
// modelcontextprotocol or mcp.
func reservedMetaKey(key string) bool {
	if key == era.MetaProgressToken {
		return true
	}
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	labels := strings.Split(prefix, ".")
	return len(labels) >= 2 && (labels[1] == "modelcontextprotocol" || labels[1] == "mcp")
}

// encodeCall encodes params as encodeParams does, with o's WithMeta members
// in their _meta.
func (o callOptions) encodeCall(method string, params any) (json.RawMessage, error) {
	raw, err := encodeParams(method, params)
	if err != nil || len(o.meta) == 0 {
		return raw, err
	}
	keys := make([]string, 0, len(o.meta))
	for k := range o.meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	members := make([]era.Member, 0, len(keys))
	for _, k := range keys {
		if reservedMetaKey(k) {
			return nil, &Error{Kind: KindUsage, Method: method, Message: fmt.Sprintf("WithMeta: _meta key %q is Conduit's (set by the protocol, or WithProgressToken)", k)}
		}
		v, err := json.Marshal(o.meta[k])
		if err != nil {
			return nil, &Error{Kind: KindUsage, Method: method, Message: fmt.Sprintf("WithMeta: _meta %q could not be encoded", k), Err: err}
		}
		members = append(members, era.Member{Key: k, Value: v})
	}
	raw, err = era.WithMeta(raw, nil, members)
	if err != nil {
		return nil, &Error{Kind: KindUsage, Method: method, Err: err}
	}
	return raw, nil
}
