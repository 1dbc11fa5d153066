package guards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/conduitmcp/conduit/messages"
)

// Form is an elicitation form schema that passed the subset check, compiled
// for validating answers. It is immutable and safe for concurrent use.
type Form struct {
	version  string
	names    []string // property names, sorted
	fields   map[string]*formField
	required []string // sorted, deduplicated
	schema   *jsonschema.Schema
}

type formField struct {
	kind       string // string, number, integer, boolean, enum, multi
	def        any    // string, json.Number, bool or []string
	hasDefault bool
	sensitive  bool
}

// schemaKeywords are JSON Schema keywords whose value is (or holds) a
// schema, or that reference one. None of them belongs to the flat primitive
// subset except where the subset allows it (oneOf for a titled single
// select, items for a multi select, anyOf inside those items); anywhere
// else they are refused rather than ignored, because ignoring them would
// change what the form means. Other unknown keys (pattern, examples, x-…)
// are tolerated and ignored.
var schemaKeywords = []string{
	"$ref", "$dynamicRef", "$recursiveRef", "$defs", "definitions",
	"properties", "patternProperties", "additionalProperties", "propertyNames",
	"unevaluatedProperties", "dependentSchemas", "dependencies",
	"items", "prefixItems", "additionalItems", "contains", "unevaluatedItems",
	"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
}

// knownFormats are the string formats the subset defines; they are checked
// in answers. Other format values are tolerated and not checked.
var knownFormats = []string{"email", "uri", "date", "date-time"}

// ParseForm checks that raw is the flat primitive form schema of protocol
// version (digest §2.2.2) and compiles it. 2025-06-18 allows no defaults
// except on booleans, no multi selects, no titled (oneOf) single select and
// no $schema; 2025-11-25 and later (and an unknown version) allow them all.
func ParseForm(version string, raw json.RawMessage) (*Form, error) {
	top, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	old := version == messages.Version20250618
	if t, ok := top["type"]; !ok || t != "object" {
		return nil, errors.New(`"type" must be "object"`)
	}
	if err := refuseSchemaKeywords(top, "the schema", "properties"); err != nil {
		return nil, err
	}
	if ap, ok := top["additionalProperties"]; ok {
		if _, isBool := ap.(bool); !isBool {
			return nil, errors.New(`"additionalProperties" must be a boolean`)
		}
	}
	if s, ok := top["$schema"]; ok {
		if old {
			return nil, fmt.Errorf(`"$schema" is not allowed in protocol version %s`, version)
		}
		if _, ok := s.(string); !ok {
			return nil, errors.New(`"$schema" must be a string`)
		}
	}
	if err := stringKeys(top, "the schema", "title", "description"); err != nil {
		return nil, err
	}
	propsV, ok := top["properties"]
	if !ok {
		return nil, errors.New(`"properties" is required`)
	}
	props, ok := propsV.(map[string]any)
	if !ok {
		return nil, errors.New(`"properties" must be an object`)
	}
	f := &Form{version: version, fields: map[string]*formField{}}
	canonProps := map[string]any{}
	f.names = slices.Sorted(maps.Keys(props))
	for _, name := range f.names {
		field, canon, err := parseField(name, props[name], old)
		if err != nil {
			return nil, err
		}
		f.fields[name] = field
		canonProps[name] = canon
	}
	if reqV, ok := top["required"]; ok {
		list, ok := reqV.([]any)
		if !ok {
			return nil, errors.New(`"required" must be an array of property names`)
		}
		seen := map[string]bool{}
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, errors.New(`"required" must be an array of property names`)
			}
			if _, ok := f.fields[s]; !ok {
				return nil, fmt.Errorf(`"required" names %q, which is not a property`, s)
			}
			if !seen[s] {
				seen[s] = true
				f.required = append(f.required, s)
			}
		}
		slices.Sort(f.required)
	}
	// The compiled schema has no "required" (Complete names missing fields
	// itself) and no extra properties: the client sends only what was asked.
	canon := map[string]any{"type": "object", "properties": canonProps, "additionalProperties": false}
	f.schema, err = compile(canon)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	// Every default must fit its own field, or filling it in would produce
	// an answer the server's own schema refuses.
	defaults := map[string]any{}
	for _, name := range f.names {
		if fd := f.fields[name]; fd.hasDefault {
			defaults[name] = fd.def
		}
	}
	if err := f.validate(defaults); err != nil {
		return nil, fmt.Errorf("default of %v", err)
	}
	return f, nil
}

// Fields flags each field of the form (see SensitiveSuspected).
func (f *Form) Fields() map[string]messages.FieldInfo {
	out := make(map[string]messages.FieldInfo, len(f.fields))
	for name, fd := range f.fields {
		out[name] = messages.FieldInfo{SensitiveSuspected: fd.sensitive}
	}
	return out
}

// Defaults returns the schema's default answers by field name: strings,
// json.Number, booleans and []string.
func (f *Form) Defaults() map[string]any {
	out := map[string]any{}
	for name, fd := range f.fields {
		if fd.hasDefault {
			out[name] = cloneValue(fd.def)
		}
	}
	return out
}

// Complete returns content (copied) with the schema's default filled in for
// each omitted field, after checking that it fits the form: no field outside
// the schema, every required field present, every value valid (numbers
// with a fraction are fine for "number" fields). The error names the field.
func (f *Form) Complete(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(f.fields))
	maps.Copy(out, content)
	for _, name := range f.names {
		if fd := f.fields[name]; fd.hasDefault {
			if _, ok := out[name]; !ok {
				out[name] = cloneValue(fd.def)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if _, ok := f.fields[name]; !ok {
			return nil, fmt.Errorf("field %q is not in the schema", name)
		}
	}
	for _, name := range f.required {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("field %q is required", name)
		}
	}
	if err := f.validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// validate checks values (field name → Go value) against the compiled
// schema, after a JSON round trip so any Go value the handler used (int,
// []string, …) is seen as the server will see it.
func (f *Form) validate(values map[string]any) error {
	b, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("content cannot be encoded as JSON: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("content cannot be encoded as JSON: %v", err)
	}
	// The validator turns each number into a big.Rat, and panics on one
	// big.Rat cannot parse (an exponent beyond a million): answers' numbers
	// are held to the rule the schema's own are.
	if m, ok := v.(map[string]any); ok {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if !saneNumbers(m[name]) {
				return fmt.Errorf("field %q: number out of range", name)
			}
		}
	}
	err = f.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	// The message names the field and the failed keyword, never the value:
	// in the legacy era it goes to the server, and the value may be a
	// secret the user typed.
	keyword := leaf.KeywordLocation[strings.LastIndex(leaf.KeywordLocation, "/")+1:]
	loc := strings.TrimPrefix(leaf.InstanceLocation, "/")
	name, rest, _ := strings.Cut(loc, "/")
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	if name == "" {
		return fmt.Errorf("the answer fails %q", keyword)
	}
	if rest != "" {
		return fmt.Errorf("field %q: item %s fails %q", name, rest, keyword)
	}
	return fmt.Errorf("field %q fails %q", name, keyword)
}

// parseField checks one property and returns it with its canonical schema
// (only the keywords the subset defines).
func parseField(name string, v any, old bool) (*formField, map[string]any, error) {
	prop, ok := v.(map[string]any)
	where := fmt.Sprintf("property %q", name)
	if !ok {
		return nil, nil, fmt.Errorf("%s must be an object", where)
	}
	t, _ := prop["type"].(string)
	if t == "object" {
		// Said first: a nested object also carries "properties", and
		// "nested objects" is what the server author needs to read.
		return nil, nil, fmt.Errorf("%s: nested objects are not allowed", where)
	}
	allowed := []string{}
	switch {
	case t == "string" && !old:
		allowed = []string{"oneOf"}
	case t == "array" && !old:
		allowed = []string{"items"}
	}
	if err := refuseSchemaKeywords(prop, where, allowed...); err != nil {
		return nil, nil, err
	}
	if err := stringKeys(prop, where, "title", "description"); err != nil {
		return nil, nil, err
	}
	fd := &formField{}
	canon := map[string]any{}
	var title, desc, format string
	title, _ = prop["title"].(string)
	desc, _ = prop["description"].(string)
	if _, ok := prop["enum"]; ok && t != "string" {
		return nil, nil, fmt.Errorf("%s: \"enum\" is allowed only on string properties", where)
	}
	if _, ok := prop["enumNames"]; ok {
		if _, ok := prop["enum"]; !ok {
			return nil, nil, fmt.Errorf("%s: \"enumNames\" needs \"enum\"", where)
		}
	}
	switch t {
	case "string":
		canon["type"] = "string"
		_, hasEnum := prop["enum"]
		_, hasOneOf := prop["oneOf"]
		switch {
		case hasEnum && hasOneOf:
			return nil, nil, fmt.Errorf("%s has both \"enum\" and \"oneOf\"", where)
		case hasOneOf:
			opts, err := titledOptions(prop["oneOf"], where+": \"oneOf\"")
			if err != nil {
				return nil, nil, err
			}
			fd.kind, canon["enum"] = "enum", opts
		case hasEnum:
			opts, err := stringList(prop["enum"], where+": \"enum\"", true)
			if err != nil {
				return nil, nil, err
			}
			if en, ok := prop["enumNames"]; ok {
				names, err := stringList(en, where+": \"enumNames\"", false)
				if err != nil {
					return nil, nil, err
				}
				if len(names) != len(opts) {
					return nil, nil, fmt.Errorf("%s: \"enumNames\" and \"enum\" differ in length", where)
				}
			}
			fd.kind, canon["enum"] = "enum", opts
		default:
			fd.kind = "string"
			if err := copyCount(prop, canon, where, "minLength", "maxLength"); err != nil {
				return nil, nil, err
			}
			if fv, ok := prop["format"]; ok {
				s, ok := fv.(string)
				if !ok {
					return nil, nil, fmt.Errorf("%s: \"format\" must be a string", where)
				}
				format = s
				if slices.Contains(knownFormats, s) {
					canon["format"] = s
				}
			}
		}
	case "number", "integer":
		fd.kind = t
		canon["type"] = t
		if err := copyNumber(prop, canon, where, "minimum", "maximum"); err != nil {
			return nil, nil, err
		}
	case "boolean":
		fd.kind = t
		canon["type"] = t
	case "array":
		if old {
			return nil, nil, fmt.Errorf("%s: array (multi-select) properties do not exist in protocol version %s", where, messages.Version20250618)
		}
		opts, err := multiOptions(prop["items"], where)
		if err != nil {
			return nil, nil, err
		}
		fd.kind = "multi"
		canon["type"] = "array"
		canon["items"] = map[string]any{"type": "string", "enum": opts}
		if err := copyCount(prop, canon, where, "minItems", "maxItems"); err != nil {
			return nil, nil, err
		}
	case "object":
		return nil, nil, fmt.Errorf("%s: nested objects are not allowed", where)
	case "":
		return nil, nil, fmt.Errorf("%s: \"type\" must be a string", where)
	default:
		return nil, nil, fmt.Errorf("%s: type %q is not allowed", where, t)
	}
	if dv, ok := prop["default"]; ok {
		if old && t != "boolean" {
			return nil, nil, fmt.Errorf("%s: defaults other than on booleans do not exist in protocol version %s", where, messages.Version20250618)
		}
		def, err := defaultValue(dv, fd.kind)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: \"default\" %v", where, err)
		}
		fd.def, fd.hasDefault = def, true
	}
	wo, _ := prop["writeOnly"].(bool)
	fd.sensitive = SensitiveSuspected(name, title, desc, format) || wo
	return fd, canon, nil
}

// defaultValue checks a default's JSON type against the field's kind (its
// value is checked later against the compiled schema).
func defaultValue(v any, kind string) (any, error) {
	switch kind {
	case "string", "enum":
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, errors.New("must be a string")
	case "number", "integer":
		if n, ok := v.(json.Number); ok {
			if _, ok := saneNumber(n); ok {
				return n, nil
			}
		}
		return nil, errors.New("must be a number")
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, errors.New("must be a boolean")
	case "multi":
		list, err := stringList(v, "", false)
		if err != nil {
			return nil, errors.New("must be an array of strings")
		}
		return list, nil
	}
	return nil, errors.New("is not allowed here")
}

// multiOptions reads a multi-select's items: {type: "string", enum: [...]}
// or {anyOf: [{const, title}]} (type "string" optional there).
func multiOptions(v any, where string) ([]string, error) {
	items, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: an array property needs \"items\" with the options (only enum multi-selects are allowed)", where)
	}
	where += ": \"items\""
	if err := refuseSchemaKeywords(items, where, "anyOf"); err != nil {
		return nil, err
	}
	if t, ok := items["type"]; ok && t != "string" {
		return nil, fmt.Errorf("%s: items must be strings", where)
	}
	_, hasEnum := items["enum"]
	_, hasAnyOf := items["anyOf"]
	switch {
	case hasEnum && hasAnyOf:
		return nil, fmt.Errorf("%s has both \"enum\" and \"anyOf\"", where)
	case hasEnum:
		if _, ok := items["type"]; !ok {
			return nil, fmt.Errorf("%s: \"type\" must be \"string\"", where)
		}
		return stringList(items["enum"], where+": \"enum\"", true)
	case hasAnyOf:
		return titledOptions(items["anyOf"], where+": \"anyOf\"")
	}
	return nil, fmt.Errorf("%s: needs \"enum\" or \"anyOf\" (only enum multi-selects are allowed)", where)
}

// titledOptions reads [{const: string, title: string}, ...] (non-empty).
func titledOptions(v any, where string) ([]string, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%s must be a non-empty array", where)
	}
	out := make([]string, 0, len(list))
	for i, o := range list {
		m, ok := o.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] must be an object", where, i)
		}
		if err := refuseSchemaKeywords(m, fmt.Sprintf("%s[%d]", where, i)); err != nil {
			return nil, err
		}
		c, ok := m["const"].(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: \"const\" must be a string", where, i)
		}
		if _, ok := m["title"].(string); !ok {
			return nil, fmt.Errorf("%s[%d]: \"title\" must be a string", where, i)
		}
		out = append(out, c)
	}
	return out, nil
}

// stringList reads an array of strings (non-empty if nonEmpty).
func stringList(v any, where string, nonEmpty bool) ([]string, error) {
	list, ok := v.([]any)
	if !ok || (nonEmpty && len(list) == 0) {
		if nonEmpty {
			return nil, fmt.Errorf("%s must be a non-empty array of strings", where)
		}
		return nil, fmt.Errorf("%s must be an array of strings", where)
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be an array of strings", where)
		}
		out = append(out, s)
	}
	return out, nil
}

// copyCount copies non-negative integer keywords (minLength, maxItems…),
// refusing a minimum above the maximum.
func copyCount(prop, canon map[string]any, where, minKey, maxKey string) error {
	return copyNumbers(prop, canon, where, minKey, maxKey, true)
}

// copyNumber copies number keywords (minimum, maximum), refusing a minimum
// above the maximum.
func copyNumber(prop, canon map[string]any, where, minKey, maxKey string) error {
	return copyNumbers(prop, canon, where, minKey, maxKey, false)
}

func copyNumbers(prop, canon map[string]any, where, minKey, maxKey string, count bool) error {
	var vals [2]*float64
	for i, k := range []string{minKey, maxKey} {
		v, ok := prop[k]
		if !ok {
			continue
		}
		n, _ := v.(json.Number)
		f, ok := saneNumber(n)
		if !ok || (count && (f < 0 || f != math.Trunc(f))) {
			if count {
				return fmt.Errorf("%s: %q must be a non-negative integer", where, k)
			}
			return fmt.Errorf("%s: %q must be a number", where, k)
		}
		vals[i] = &f
		canon[k] = n
	}
	if vals[0] != nil && vals[1] != nil && *vals[0] > *vals[1] {
		return fmt.Errorf("%s: %q is greater than %q", where, minKey, maxKey)
	}
	return nil
}

// saneNumber parses a JSON number literal of the schema, refusing the ones
// that would be costly to handle exactly (a validator turns numbers into
// big.Rat, where 1e999999 is a million-digit integer): more than 64
// characters, an exponent beyond ±400, or a value beyond float64.
func saneNumber(n json.Number) (float64, bool) {
	s := string(n)
	if s == "" || len(s) > 64 {
		return 0, false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil || e > 400 || e < -400 {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// saneNumbers reports whether every number in v (a decoded JSON value)
// passes saneNumber.
func saneNumbers(v any) bool {
	switch v := v.(type) {
	case json.Number:
		_, ok := saneNumber(v)
		return ok
	case []any:
		for _, e := range v {
			if !saneNumbers(e) {
				return false
			}
		}
	case map[string]any:
		for _, e := range v {
			if !saneNumbers(e) {
				return false
			}
		}
	}
	return true
}

// refuseSchemaKeywords refuses the schema keywords of obj except allowed.
func refuseSchemaKeywords(obj map[string]any, where string, allowed ...string) error {
	for _, k := range schemaKeywords {
		if _, ok := obj[k]; ok && !slices.Contains(allowed, k) {
			if k == "additionalProperties" && where == "the schema" {
				continue // a boolean is tolerated at the top (checked by the caller)
			}
			if k == "$ref" || k == "$dynamicRef" || k == "$recursiveRef" {
				return fmt.Errorf("%s: %q is not allowed (no references)", where, k)
			}
			return fmt.Errorf("%s: %q is not allowed in a flat form schema", where, k)
		}
	}
	return nil
}

// stringKeys refuses keys of obj that are present but not strings.
func stringKeys(obj map[string]any, where string, keys ...string) error {
	for _, k := range keys {
		if v, ok := obj[k]; ok {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s: %q must be a string", where, k)
			}
		}
	}
	return nil
}

// decodeObject decodes a JSON object keeping numbers exact.
func decodeObject(raw json.RawMessage) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, errors.New("is not valid JSON")
	}
	if d.More() {
		return nil, errors.New("is not valid JSON")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("must be an object")
	}
	return obj, nil
}

// schemaURL names the in-memory schema; nothing is ever loaded from it.
const schemaURL = "urn:conduit:elicitation:requested-schema"

// compile compiles a canonical schema. The loader refuses every URL: a
// requested schema never causes a fetch.
func compile(canon map[string]any) (*jsonschema.Schema, error) {
	b, err := json.Marshal(canon)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = refuseLoad
	if err := c.AddResource(schemaURL, bytes.NewReader(b)); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

func refuseLoad(s string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("guards: loading %q refused: schemas are never fetched", s)
}

func cloneValue(v any) any {
	if l, ok := v.([]string); ok {
		return slices.Clone(l)
	}
	return v
}
