package conduit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/conduitmcp/conduit/messages"
)

// MaxOutputSchemaBytes bounds a tool's outputSchema: a larger one is not
// compiled, and calls of the tool fail with KindInvalidResult (see
// CallTool). Compiling and applying a schema costs in proportion to its
// size, so a server cannot make every call of a tool expensive with a
// huge one.
const MaxOutputSchemaBytes = 256 << 10

// MaxStructuredContentDepth bounds how deep a structuredContent checked
// against an outputSchema may nest (objects and arrays): deeper fails the
// call with KindInvalidResult. jsonschema/v5 takes time quadratic in the
// depth of a value checked against a recursive schema (1.5 s at 1 000
// levels, minutes at 5 000), so the value is not given to it. An
// outputSchema nesting deeper is refused likewise.
const MaxStructuredContentDepth = 64

// maxSchemaExpansion bounds the subschemas a value may be checked against
// once every local $ref is followed (see schemaExpansion): references can
// share a subschema between many places, and a chain of anyOf over shared
// subschemas would make validation exponential in the schema's size.
const maxSchemaExpansion = 100_000

// WithUnvalidatedResult returns a tool's result as the server sent it:
// CallTool does not check its structuredContent against the tool's
// outputSchema (from the session's last tools/list).
func WithUnvalidatedResult() CallOption { return func(o *callOptions) { o.unvalidated = true } }

// toolIndex is what a session's last tools/list said about each tool.
type toolIndex struct {
	taskSupport map[string]string        // execution.taskSupport, where given
	output      map[string]*outputSchema // outputSchema, where given
}

// outputSchema is one tool's outputSchema, compiled on first use, once.
type outputSchema struct {
	tool string
	raw  json.RawMessage
	once sync.Once
	s    *jsonschema.Schema
	err  error // why the schema cannot be used; the same for every call
}

// rememberTools records what s listed: each tool's task support and
// output schema. A new listing replaces the last, compiled schemas
// included.
func rememberTools(s *session, tools []Tool) {
	idx := &toolIndex{taskSupport: make(map[string]string, len(tools)), output: map[string]*outputSchema{}}
	for _, t := range tools {
		if t.Execution != nil {
			idx.taskSupport[t.Name] = t.Execution.TaskSupport
		}
		if len(t.OutputSchema) > 0 && string(t.OutputSchema) != "null" {
			idx.output[t.Name] = &outputSchema{tool: t.Name, raw: t.OutputSchema}
		}
	}
	s.tools.Store(idx)
}

// listedTools is the session's tool index, listing the tools first when
// nobody has on s and the server declares the tools capability (the
// 2025-11-25 task path, which needs a tool's task support before the
// call). A list that fails is logged and gives nil.
func (c *Client) listedTools(ctx context.Context, s *session, why string) *toolIndex {
	if idx := s.tools.Load(); idx != nil {
		return idx
	}
	var caps struct {
		Tools json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(s.init.Capabilities, &caps) != nil || !declared(caps.Tools) {
		return nil // no tools/list to ask
	}
	if _, err := c.ListTools(ctx); err != nil {
		c.opts.Logger.Warn("tools/list failed: "+why, "err", err)
		return nil
	}
	return s.tools.Load()
}

// checkResult checks a tool's result against its outputSchema (see
// CallTool). An IsError result, a task handle and a tool without an
// outputSchema pass as they are.
func (c *Client) checkResult(name string, res *CallToolResult, o callOptions) error {
	if o.unvalidated || res == nil || res.IsError || res.Task != nil {
		return nil
	}
	// The schema is the session's last listing's: CallTool sends no
	// tools/list of its own, which would hold every first result until a
	// server that is slow to list, or never does, answered it.
	idx := c.sess().tools.Load()
	if idx == nil {
		return nil
	}
	out := idx.output[name]
	if out == nil {
		return nil
	}
	schema, err := out.compiled(c)
	if err != nil {
		return &Error{Kind: KindInvalidResult, Method: messages.MethodCallTool, Message: fmt.Sprintf("tool %q: %v", name, err)}
	}
	if len(res.StructuredContent) == 0 || string(res.StructuredContent) == "null" {
		return &Error{Kind: KindInvalidResult, Method: messages.MethodCallTool,
			Message: fmt.Sprintf("tool %q declares an outputSchema but its result has no structuredContent", name)}
	}
	if err := validateValue(schema, res.StructuredContent); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.Message = fmt.Sprintf("tool %q: %s", name, ce.Message)
		}
		return err
	}
	return nil
}

// validateValue checks a structuredContent against its compiled schema:
// what each call with an outputSchema pays.
func validateValue(schema *jsonschema.Schema, raw json.RawMessage) error {
	if d := jsonDepth(raw); d > MaxStructuredContentDepth {
		return &Error{Kind: KindInvalidResult, Method: messages.MethodCallTool,
			Message: fmt.Sprintf("structuredContent nests %d levels deep, over the limit of %d (MaxStructuredContentDepth): not checked", d, MaxStructuredContentDepth)}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // as the validator wants numbers
	if err := dec.Decode(&v); err != nil {
		return &Error{Kind: KindProtocol, Method: messages.MethodCallTool, Message: "malformed structuredContent", Err: err}
	}
	if err := schema.Validate(v); err != nil {
		return &Error{Kind: KindInvalidResult, Method: messages.MethodCallTool,
			Message: "structuredContent does not match its outputSchema: " + describeMismatch(err)}
	}
	return nil
}

// errRemoteRef is what the compiler's loader answers: a schema is
// compiled from its own bytes, never from anything fetched.
var errRemoteRef = errors.New("a $ref outside the schema (Conduit loads nothing)")

// compiled compiles the schema on first use; a schema that cannot be used
// is logged once, and each call of the tool fails with the same error.
func (o *outputSchema) compiled(c *Client) (*jsonschema.Schema, error) {
	o.once.Do(func() {
		o.s, o.err = compileOutputSchema(o.raw)
		if o.err != nil {
			c.opts.Logger.Warn("tool's outputSchema is invalid: its calls fail with KindInvalidResult unless WithUnvalidatedResult is given", "tool", o.tool, "err", o.err)
		}
	})
	return o.s, o.err
}

// compileOutputSchema compiles raw (JSON Schema 2020-12 unless its
// $schema names another draft), refusing to load anything.
func compileOutputSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(raw) > MaxOutputSchemaBytes {
		return nil, fmt.Errorf("invalid outputSchema: %d bytes, over the limit of %d (MaxOutputSchemaBytes)", len(raw), MaxOutputSchemaBytes)
	}
	if d := jsonDepth(raw); d > MaxStructuredContentDepth {
		return nil, fmt.Errorf("invalid outputSchema: it nests %d levels deep, over the limit of %d (MaxStructuredContentDepth)", d, MaxStructuredContentDepth)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("invalid outputSchema: %w", err)
	}
	if n := schemaExpansion(doc); n > maxSchemaExpansion {
		return nil, fmt.Errorf("invalid outputSchema: its $refs expand to over %d subschemas", maxSchemaExpansion)
	}
	const url = "conduit:///outputSchema.json"
	comp := jsonschema.NewCompiler()
	comp.Draft = jsonschema.Draft2020
	comp.LoadURL = func(string) (io.ReadCloser, error) { return nil, errRemoteRef }
	if err := comp.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("invalid outputSchema: %w", err)
	}
	s, err := comp.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("invalid outputSchema: %w", err)
	}
	return s, nil
}

// schemaExpansion counts the subschemas of doc with every local $ref
// ("#/…") replaced by what it points to, stopping past
// maxSchemaExpansion. A $ref back into its own chain counts once: it
// recurses only as deep as the value nests. Other references ("#anchor",
// relative to an $id) count one each.
func schemaExpansion(doc any) int {
	memo := map[string]int{}
	onPath := map[string]bool{}
	var walk func(v any, depth int) int
	walk = func(v any, depth int) int {
		n := 1
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if k == "$ref" || k == "$dynamicRef" {
					if ref, ok := sub.(string); ok && strings.HasPrefix(ref, "#/") {
						n += refCost(doc, ref, memo, onPath, walk, depth)
					}
					continue
				}
				if k == "$defs" || k == "definitions" || k == "enum" || k == "const" || k == "default" || k == "examples" {
					continue // reached through $ref, or not schemas
				}
				n += walk(sub, depth+1)
			}
		case []any:
			for _, sub := range v {
				n += walk(sub, depth+1)
			}
		}
		return min(n, maxSchemaExpansion+1)
	}
	return walk(doc, 0)
}

// refCost is the expansion of the subschema a local $ref points to.
func refCost(doc any, ref string, memo map[string]int, onPath map[string]bool, walk func(any, int) int, depth int) int {
	if n, ok := memo[ref]; ok {
		return n
	}
	if onPath[ref] {
		return 1
	}
	target := doc
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := target.(map[string]any)
		if !ok {
			return 1 // the compiler says what is wrong with it
		}
		if target, ok = m[tok]; !ok {
			return 1
		}
	}
	onPath[ref] = true
	n := walk(target, depth+1)
	delete(onPath, ref)
	memo[ref] = n
	return n
}

// describeMismatch names where a value breaks its schema: the JSON
// pointer of the value, the keyword and its location in the schema, and
// what is wrong, for the deepest failure (the first, when several).
func describeMismatch(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	at := ve.InstanceLocation
	if at == "" {
		at = "/"
	}
	loc := strings.TrimPrefix(ve.KeywordLocation, "#")
	keyword := loc[strings.LastIndex(loc, "/")+1:]
	return fmt.Sprintf("at %s: keyword %q (schema %s): %s", at, keyword, loc, ve.Message)
}

// jsonDepth is how deep the objects and arrays of a JSON text nest.
func jsonDepth(raw []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
