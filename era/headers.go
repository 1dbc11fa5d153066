package era

import (
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// HeaderAnnotation is the input-schema keyword that mirrors a tool argument
// into an Mcp-Param-{Name} header (2026-07-28, Streamable HTTP).
const HeaderAnnotation = "x-mcp-header"

// ToolHeaders reads a tool's x-mcp-header annotations: argument name →
// header name. An invalid annotation (empty, not an RFC 9110 token, a
// case-insensitive duplicate, on a property that is not a string, integer
// or boolean, or anywhere but directly on a top-level property) is an
// error: the client must drop that tool.
func ToolHeaders(inputSchema json.RawMessage) (map[string]string, error) {
	if len(inputSchema) == 0 {
		return nil, nil
	}
	var schema any
	if err := json.Unmarshal(inputSchema, &schema); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %w", err)
	}
	root, _ := schema.(map[string]any)
	props, _ := root["properties"].(map[string]any)
	out := map[string]string{}
	seen := map[string]string{}
	for arg, p := range props {
		prop, ok := p.(map[string]any)
		if !ok {
			continue
		}
		raw, ok := prop[HeaderAnnotation]
		if !ok {
			continue
		}
		name, ok := raw.(string)
		if !ok || !httpguts.ValidHeaderFieldName(name) { // an RFC 9110 token
			return nil, fmt.Errorf("argument %q: %s %v is not an HTTP token", arg, HeaderAnnotation, raw)
		}
		switch t, _ := prop["type"].(string); t {
		case "string", "integer", "boolean":
		default:
			return nil, fmt.Errorf("argument %q: %s on a property of type %q (want string, integer or boolean)", arg, HeaderAnnotation, t)
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			return nil, fmt.Errorf("arguments %q and %q: duplicate %s %q", other, arg, HeaderAnnotation, name)
		}
		seen[strings.ToLower(name)] = arg
		out[arg] = name
	}
	// Anywhere else (nested properties, items, combinators) is unreachable
	// purely via properties: invalid.
	for arg, p := range props {
		if prop, ok := p.(map[string]any); ok {
			for k, v := range prop {
				if k != HeaderAnnotation && containsAnnotation(v) {
					return nil, fmt.Errorf("argument %q: %s nested below the top-level property", arg, HeaderAnnotation)
				}
			}
		}
	}
	for k, v := range root {
		if k != "properties" && containsAnnotation(v) {
			return nil, fmt.Errorf("%s outside the top-level properties (under %q)", HeaderAnnotation, k)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func containsAnnotation(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[HeaderAnnotation]; ok {
			return true
		}
		for _, e := range x {
			if containsAnnotation(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsAnnotation(e) {
				return true
			}
		}
	}
	return false
}
