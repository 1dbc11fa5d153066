package sanitize

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// TruncatedNesting replaces a map or slice that Value cuts off for being
// deeper than MaxDepth, so the user can see that something was removed.
const TruncatedNesting = "[truncated: nesting]"

// Level returns level if it is one of the eight RFC 5424 severity names used
// by MCP ("debug", "info", "notice", "warning", "error", "critical", "alert",
// "emergency"; exact, lower-case match), else "info". A server cannot invent
// levels, smuggle text through the level, or make an entry look more severe
// by misspelling one.
func Level(level string) string {
	switch level {
	case "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency":
		return level
	}
	return "info"
}

// Value returns a sanitised copy of v, a value decoded by encoding/json into
// an any (map[string]any, []any, string, float64, bool, nil, json.Number),
// that is safe to display and always encodes with encoding/json.
//
//   - Every string, map keys included, goes through Text(s, MaxString).
//     If sanitising makes two keys equal, the key that was already clean
//     wins; otherwise the smallest original key wins, so the result does not
//     depend on map iteration order.
//   - Depth: the top-level value is at depth 1 and the elements of a
//     container at depth d are at depth d+1. Maps and slices at depth up to
//     MaxDepth are kept; one at a greater depth is replaced by the string
//     TruncatedNesting. Scalars are kept at any depth. The result therefore
//     nests at most MaxDepth containers, and recursion is bounded by it.
//   - A json.Number that is a valid JSON number of at most MaxString bytes is
//     kept as is, so big integers survive; any other becomes a sanitised
//     string. A NaN or infinite float64 becomes its strconv string, since
//     JSON cannot encode it.
//   - Any other type (map[any]any, []string, int, structs, ...) becomes its
//     fmt.Sprint text through Text(s, MaxString). Values fmt could not print
//     in bounded time and stack (cycles, very deep or very large graphs) and
//     values whose formatting panics become "[unprintable: TYPE]".
//
// Containers are copied per reference, so a caller-built value that shares
// sub-values many times over is expanded; values decoded from JSON are trees,
// so the result is proportional to the input.
func Value(v any) any {
	return value(v, 1)
}

func value(v any, depth int) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return Text(x, MaxString)
	case bool:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case json.Number:
		if len(x) <= MaxString && validNumber(string(x)) {
			return x
		}
		return Text(string(x), MaxString)
	case map[string]any:
		if depth > MaxDepth {
			return TruncatedNesting
		}
		if x == nil {
			return x
		}
		return sanitizeMap(x, depth)
	case []any:
		if depth > MaxDepth {
			return TruncatedNesting
		}
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = value(e, depth+1)
		}
		return out
	default:
		return Text(sprint(v), MaxString)
	}
}

// sanitizeMap copies m with sanitised keys and values, resolving key
// collisions deterministically (see Value).
func sanitizeMap(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	var dirty []string
	for k, e := range m {
		if Text(k, MaxString) == k {
			out[k] = value(e, depth+1)
		} else {
			dirty = append(dirty, k)
		}
	}
	sort.Strings(dirty)
	for _, k := range dirty {
		sk := Text(k, MaxString)
		if _, taken := out[sk]; !taken {
			out[sk] = value(m[k], depth+1)
		}
	}
	return out
}

// validNumber reports whether s matches the JSON number grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func validNumber(s string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// Limits on the graph sprint lets fmt walk. fmt follows maps, slices, arrays,
// structs and interfaces without cycle detection, so a cyclic value would
// overflow the stack (a fatal error, not a recoverable panic).
const (
	fmtMaxDepth = 64
	fmtMaxNodes = 1 << 16
)

// sprint formats v with fmt.Sprint if that is known to terminate, recovering
// from panics in the value's own String or Error methods.
func sprint(v any) (s string) {
	unprintable := "[unprintable: " + reflect.TypeOf(v).String() + "]"
	defer func() {
		if recover() != nil {
			s = unprintable
		}
	}()
	rv := reflect.ValueOf(v)
	if x, ok := v.(reflect.Value); ok {
		rv = x // fmt prints the value a reflect.Value holds
	}
	budget := fmtMaxNodes
	if !fmtSafe(rv, 0, &budget) {
		return unprintable
	}
	return fmt.Sprint(v)
}

// fmtSafe reports whether fmt's %v walk of v, starting at fmt's depth, stays
// within fmtMaxDepth levels and the remaining node budget. It mirrors fmt,
// which expands a pointer only at the top level and prints deeper pointers
// as addresses; it is conservative in also walking values that fmt would
// print through their String method.
func fmtSafe(v reflect.Value, depth int, budget *int) bool {
	if !v.IsValid() {
		return true
	}
	*budget--
	if *budget < 0 || depth > fmtMaxDepth {
		return false
	}
	switch v.Kind() {
	case reflect.Interface:
		return v.IsNil() || fmtSafe(v.Elem(), depth+1, budget)
	case reflect.Pointer:
		if depth > 0 || v.IsNil() {
			return true
		}
		return fmtSafe(v.Elem(), depth+1, budget)
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if !fmtSafe(it.Key(), depth+1, budget) || !fmtSafe(it.Value(), depth+1, budget) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		if leafKind(v.Type().Elem().Kind()) {
			return true
		}
		for i := 0; i < v.Len(); i++ {
			if !fmtSafe(v.Index(i), depth+1, budget) {
				return false
			}
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if !fmtSafe(v.Field(i), depth+1, budget) {
				return false
			}
		}
	}
	return true
}

// leafKind reports whether fmt prints a value of kind k, below the top level,
// without descending into anything.
func leafKind(k reflect.Kind) bool {
	switch k {
	case reflect.Interface, reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		return false
	}
	return true
}
