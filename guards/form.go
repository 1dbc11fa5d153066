package guards

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/conduitmcp/conduit/messages"
)

// Form is an elicitation form schema that passed the subset check, read
// into typed fields. It is immutable and safe for concurrent use.
type Form struct {
	version  string
	fields   []messages.FormField // in the schema's order
	byName   map[string]*messages.FormField
	required []string // sorted, deduplicated
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
// version and reads its fields. 2025-06-18 allows no defaults except on
// booleans, no multi selects, no titled (oneOf) single select and no
// $schema; 2025-11-25 and later (and an unknown version) allow them all.
// Nothing is ever fetched: references are refused.
func ParseForm(version string, raw json.RawMessage) (*Form, error) {
	top, err := decodeObject(raw)
	if err != nil {
		return nil, err
	}
	old := olderThan(version, messages.Version20251125)
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
	f := &Form{version: version, byName: map[string]*messages.FormField{}}
	// Checked in name order, so the first problem named does not depend
	// on how the server ordered its properties.
	parsed := map[string]messages.FormField{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		field, err := parseField(name, props[name], old)
		if err != nil {
			return nil, err
		}
		parsed[name] = field
	}
	if reqV, ok := top["required"]; ok {
		list, ok := reqV.([]any)
		if !ok {
			return nil, errors.New(`"required" must be an array of property names`)
		}
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, errors.New(`"required" must be an array of property names`)
			}
			field, ok := parsed[s]
			if !ok {
				return nil, fmt.Errorf(`"required" names %q, which is not a property`, s)
			}
			if !field.Required {
				field.Required = true
				parsed[s] = field
				f.required = append(f.required, s)
			}
		}
		slices.Sort(f.required)
	}
	order, err := propertyOrder(raw)
	if err != nil {
		return nil, errors.New("is not valid JSON")
	}
	f.fields = make([]messages.FormField, 0, len(order))
	for _, name := range order {
		f.fields = append(f.fields, parsed[name])
	}
	for i := range f.fields {
		f.byName[f.fields[i].Name] = &f.fields[i]
	}
	// Every default must fit its own field, or filling it in would produce
	// an answer the server's own schema refuses.
	for _, name := range slices.Sorted(maps.Keys(parsed)) {
		if fd := f.byName[name]; fd.Default != nil {
			if err := CheckField(*fd, fd.Default); err != nil {
				return nil, fmt.Errorf("default of %v", err)
			}
		}
	}
	return f, nil
}

// propertyOrder returns the names of the schema's "properties" in the order
// the server wrote them, each once (where it first appears). As in
// decoding, a repeated "properties" key counts only the last time.
func propertyOrder(raw json.RawMessage) ([]string, error) {
	var order []string
	err := eachMember(raw, func(key string, value json.RawMessage) error {
		if key != "properties" {
			return nil
		}
		order = []string{}
		seen := map[string]bool{}
		return eachMember(value, func(name string, _ json.RawMessage) error {
			if !seen[name] {
				seen[name] = true
				order = append(order, name)
			}
			return nil
		})
	})
	return order, err
}

// eachMember calls fn with each member of the JSON object raw, in order.
func eachMember(raw json.RawMessage, fn func(key string, value json.RawMessage) error) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	if _, err := d.Token(); err != nil { // {
		return err
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return err
		}
		var value json.RawMessage
		if err := d.Decode(&value); err != nil {
			return err
		}
		key, _ := t.(string)
		if err := fn(key, value); err != nil {
			return err
		}
	}
	return nil
}

// Fields flags each field of the form (see SensitiveSuspected).
func (f *Form) Fields() map[string]messages.FieldInfo {
	out := make(map[string]messages.FieldInfo, len(f.fields))
	for _, fd := range f.fields {
		out[fd.Name] = messages.FieldInfo{SensitiveSuspected: fd.Sensitive}
	}
	return out
}

// FormFields returns the form's fields in the order the server wrote them
// (the order a UI shows them in), as copies the caller may change.
func (f *Form) FormFields() []messages.FormField {
	out := make([]messages.FormField, len(f.fields))
	for i, fd := range f.fields {
		out[i] = cloneField(fd)
	}
	return out
}

// Defaults returns the schema's default answers by field name: strings,
// json.Number, booleans and []string.
func (f *Form) Defaults() map[string]any {
	out := map[string]any{}
	for _, fd := range f.fields {
		if fd.Default != nil {
			out[fd.Name] = cloneValue(fd.Default)
		}
	}
	return out
}

// Complete returns content (copied) with the schema's default filled in for
// each omitted field, after checking that it fits the form: no field outside
// the schema, every required field present, every value valid (numbers
// with a fraction are fine for "number" fields). A misfit is a
// *messages.FieldError naming the first field at fault (in name order);
// content that cannot be encoded as JSON is a plain error.
func (f *Form) Complete(content map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(f.fields))
	maps.Copy(out, content)
	for _, fd := range f.fields {
		if fd.Default != nil {
			if _, ok := out[fd.Name]; !ok {
				out[fd.Name] = cloneValue(fd.Default)
			}
		}
	}
	names := slices.Sorted(maps.Keys(out))
	for _, name := range names {
		if _, ok := f.byName[name]; !ok {
			return nil, &messages.FieldError{Field: name, Reason: messages.ReasonNotInForm, Message: fmt.Sprintf("field %q is not in the schema", name)}
		}
	}
	for _, name := range f.required {
		if _, ok := out[name]; !ok {
			return nil, &messages.FieldError{Field: name, Reason: messages.ReasonRequired, Message: fmt.Sprintf("field %q is required", name)}
		}
	}
	values, err := asJSON(out, names)
	if err != nil {
		return nil, encodeError{err}
	}
	for i, name := range names {
		if fe := checkValue(f.byName[name], values[i]); fe != nil {
			return nil, fe
		}
	}
	return out, nil
}

// encodeError is content encoding/json cannot encode. Its text goes to
// the server, so it names at most a type: what encoding/json says can quote
// the value (`invalid number literal "…"`, a MarshalJSON error), which may
// be a secret the user typed. Those words stay in the chain for the local
// log.
type encodeError struct{ err error }

func (e encodeError) Error() string {
	var te *json.UnsupportedTypeError
	if errors.As(e.err, &te) {
		return "content cannot be encoded as JSON: " + te.Error()
	}
	return "content cannot be encoded as JSON"
}

func (e encodeError) Unwrap() error { return e.err }

// asJSON returns content's values under names as the server will see
// them: encoded and decoded back, numbers as json.Number. The kinds of
// value answers usually hold are converted without encoding (decoded); if
// any value is of another kind, the whole content takes one round trip,
// which says once what cannot be encoded.
func asJSON(content map[string]any, names []string) ([]any, error) {
	values := make([]any, len(names))
	for i, name := range names {
		v, ok := decoded(content[name])
		if !ok {
			return roundTripValues(content, names)
		}
		values[i] = v
	}
	return values, nil
}

// roundTripValues is asJSON through encoding/json.
func roundTripValues(content map[string]any, names []string) ([]any, error) {
	all, err := jsonRoundTrip(content)
	if err != nil {
		return nil, err
	}
	m, _ := all.(map[string]any)
	values := make([]any, len(names))
	for i, name := range names {
		values[i] = m[name]
	}
	return values, nil
}

// decoded returns jsonRoundTrip(v) without encoding for nil, a bool, a
// string of valid UTF-8 (encoding/json mends any other), an integer, a
// float64 written without an exponent, and a []string of valid UTF-8. It
// reports false for any other value.
func decoded(v any) (any, bool) {
	switch v := v.(type) {
	case nil, bool:
		return v, true
	case string:
		return v, utf8.ValidString(v)
	case int:
		return json.Number(strconv.FormatInt(int64(v), 10)), true
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), true
	case int32:
		return json.Number(strconv.FormatInt(int64(v), 10)), true
	case float64:
		// encoding/json writes a float as strconv's shortest 'f' form,
		// except beyond these bounds (an exponent) and NaN or ±Inf (an
		// error).
		if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21 || math.IsNaN(a)) {
			return nil, false
		}
		return json.Number(strconv.FormatFloat(v, 'f', -1, 64)), true
	case []string:
		if v == nil {
			return nil, true
		}
		out := make([]any, len(v))
		for i, s := range v {
			if !utf8.ValidString(s) {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// CheckField checks one answer value (any Go value that encodes as the
// JSON the server would get: a string, a number, a bool, a []string…)
// against field, with the rules Complete applies before an answer is
// sent: a UI can check each value as it is typed. Requiredness is the
// form's rule (Complete), not the value's. The first rule broken is
// reported, in the order type, enum, format, item count, items, length,
// bounds. Numbers are compared exactly, each bound as the shortest decimal
// that reads back as its float64 (the literal the server wrote, in
// practice).
func CheckField(field messages.FormField, value any) *messages.FieldError {
	v, ok := decoded(value)
	var err error
	if !ok {
		v, err = jsonRoundTrip(value)
	}
	if err != nil {
		return &messages.FieldError{Field: field.Name, Reason: messages.ReasonType, Message: fmt.Sprintf("field %q cannot be encoded as JSON", field.Name)}
	}
	return checkValue(&field, v)
}

// checkValue checks a decoded JSON value (numbers as json.Number) against
// field: the one implementation of the answer rules.
func checkValue(field *messages.FormField, v any) *messages.FieldError {
	name := field.Name
	fail := func(reason string) *messages.FieldError {
		return &messages.FieldError{Field: name, Reason: reason, Message: fmt.Sprintf("field %q fails %q", name, reason)}
	}
	// A number whose exact value would be costly (1e999999 is a
	// million-digit integer) is refused before any rule reads it: answers'
	// numbers are held to the rule the schema's own are.
	if !saneNumbers(v) {
		return &messages.FieldError{Field: name, Reason: messages.ReasonRange, Message: fmt.Sprintf("field %q: number out of range", name)}
	}
	switch field.Kind {
	case messages.FieldString, messages.FieldSelect:
		s, ok := v.(string)
		if !ok {
			return fail(messages.ReasonType)
		}
		if field.Kind == messages.FieldSelect && !isOption(field.Options, s) {
			return fail(messages.ReasonEnum)
		}
		if slices.Contains(knownFormats, field.Format) && !jsonschema.Formats[field.Format](s) {
			return fail(messages.ReasonFormat)
		}
		n := utf8.RuneCountInString(s)
		if field.MinLength != nil && n < *field.MinLength {
			return fail(messages.ReasonMinLength)
		}
		if field.MaxLength != nil && n > *field.MaxLength {
			return fail(messages.ReasonMaxLength)
		}
	case messages.FieldNumber, messages.FieldInteger:
		n, ok := v.(json.Number)
		if !ok {
			return fail(messages.ReasonType)
		}
		x, _ := new(big.Rat).SetString(string(n))
		if field.Kind == messages.FieldInteger && !x.IsInt() {
			return fail(messages.ReasonType)
		}
		if lo := exact(field.Minimum); lo != nil && x.Cmp(lo) < 0 {
			return fail(messages.ReasonMinimum)
		}
		if hi := exact(field.Maximum); hi != nil && x.Cmp(hi) > 0 {
			return fail(messages.ReasonMaximum)
		}
	case messages.FieldBoolean:
		if _, ok := v.(bool); !ok {
			return fail(messages.ReasonType)
		}
	case messages.FieldMultiSelect:
		list, ok := v.([]any)
		if !ok {
			return fail(messages.ReasonType)
		}
		if field.MinItems != nil && len(list) < *field.MinItems {
			return fail(messages.ReasonMinItems)
		}
		if field.MaxItems != nil && len(list) > *field.MaxItems {
			return fail(messages.ReasonMaxItems)
		}
		for i, e := range list {
			reason := ""
			if s, ok := e.(string); !ok {
				reason = messages.ReasonType
			} else if !isOption(field.Options, s) {
				reason = messages.ReasonEnum
			}
			if reason != "" {
				return &messages.FieldError{Field: name, Reason: reason, Message: fmt.Sprintf("field %q: item %d fails %q", name, i, reason)}
			}
		}
	default:
		return fail(messages.ReasonType)
	}
	return nil
}

func isOption(opts []messages.FieldOption, v string) bool {
	return slices.ContainsFunc(opts, func(o messages.FieldOption) bool { return o.Value == v })
}

// exact is the bound *f as the shortest decimal that reads back as *f,
// exactly; nil when there is no bound (nil, or not a finite number, as
// only a field built by hand can have).
func exact(f *float64) *big.Rat {
	if f == nil || math.IsInf(*f, 0) || math.IsNaN(*f) {
		return nil
	}
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(*f, 'g', -1, 64))
	return r
}

// jsonRoundTrip encodes v and decodes it back with numbers as json.Number.
func jsonRoundTrip(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// parseField checks one property and reads it into a field.
func parseField(name string, v any, old bool) (messages.FormField, error) {
	prop, ok := v.(map[string]any)
	where := fmt.Sprintf("property %q", name)
	fd := messages.FormField{Name: name}
	if !ok {
		return fd, fmt.Errorf("%s must be an object", where)
	}
	t, _ := prop["type"].(string)
	if t == "object" {
		// Said first: a nested object also carries "properties", and
		// "nested objects" is what the server author needs to read.
		return fd, fmt.Errorf("%s: nested objects are not allowed", where)
	}
	allowed := []string{}
	switch {
	case t == "string" && !old:
		allowed = []string{"oneOf"}
	case t == "array" && !old:
		allowed = []string{"items"}
	}
	if err := refuseSchemaKeywords(prop, where, allowed...); err != nil {
		return fd, err
	}
	if err := stringKeys(prop, where, "title", "description"); err != nil {
		return fd, err
	}
	fd.Title, _ = prop["title"].(string)
	fd.Description, _ = prop["description"].(string)
	if _, ok := prop["enum"]; ok && t != "string" {
		return fd, fmt.Errorf("%s: \"enum\" is allowed only on string properties", where)
	}
	if _, ok := prop["enumNames"]; ok {
		if _, ok := prop["enum"]; !ok {
			return fd, fmt.Errorf("%s: \"enumNames\" needs \"enum\"", where)
		}
	}
	var err error
	switch t {
	case "string":
		_, hasEnum := prop["enum"]
		_, hasOneOf := prop["oneOf"]
		switch {
		case hasEnum && hasOneOf:
			return fd, fmt.Errorf("%s has both \"enum\" and \"oneOf\"", where)
		case hasOneOf:
			fd.Kind = messages.FieldSelect
			if fd.Options, err = titledOptions(prop["oneOf"], where+": \"oneOf\""); err != nil {
				return fd, err
			}
		case hasEnum:
			fd.Kind = messages.FieldSelect
			if fd.Options, err = enumOptions(prop, where); err != nil {
				return fd, err
			}
		default:
			fd.Kind = messages.FieldString
			if fd.MinLength, fd.MaxLength, err = countBounds(prop, where, "minLength", "maxLength"); err != nil {
				return fd, err
			}
			if fv, ok := prop["format"]; ok {
				s, ok := fv.(string)
				if !ok {
					return fd, fmt.Errorf("%s: \"format\" must be a string", where)
				}
				fd.Format = s
			}
		}
	case "number", "integer":
		fd.Kind = messages.FieldKind(t)
		if fd.Minimum, fd.Maximum, err = numberBounds(prop, where, "minimum", "maximum", false); err != nil {
			return fd, err
		}
	case "boolean":
		fd.Kind = messages.FieldBoolean
	case "array":
		if old {
			return fd, fmt.Errorf("%s: array (multi-select) properties do not exist in protocol version %s", where, messages.Version20250618)
		}
		fd.Kind = messages.FieldMultiSelect
		if fd.Options, err = multiOptions(prop["items"], where); err != nil {
			return fd, err
		}
		if fd.MinItems, fd.MaxItems, err = countBounds(prop, where, "minItems", "maxItems"); err != nil {
			return fd, err
		}
	case "":
		return fd, fmt.Errorf("%s: \"type\" must be a string", where)
	default:
		return fd, fmt.Errorf("%s: type %q is not allowed", where, t)
	}
	if dv, ok := prop["default"]; ok {
		if old && t != "boolean" {
			return fd, fmt.Errorf("%s: defaults other than on booleans do not exist in protocol version %s", where, messages.Version20250618)
		}
		if fd.Default, err = defaultValue(dv, fd.Kind); err != nil {
			return fd, fmt.Errorf("%s: \"default\" %v", where, err)
		}
	}
	wo, _ := prop["writeOnly"].(bool)
	fd.Sensitive = SensitiveSuspected(name, fd.Title, fd.Description, fd.Format) || wo
	return fd, nil
}

// defaultValue checks a default's JSON type against the field's kind (its
// value is checked later, with CheckField).
func defaultValue(v any, kind messages.FieldKind) (any, error) {
	switch kind {
	case messages.FieldString, messages.FieldSelect:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, errors.New("must be a string")
	case messages.FieldNumber, messages.FieldInteger:
		if n, ok := v.(json.Number); ok {
			if _, ok := saneNumber(n); ok {
				return n, nil
			}
		}
		return nil, errors.New("must be a number")
	case messages.FieldBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, errors.New("must be a boolean")
	case messages.FieldMultiSelect:
		list, err := stringList(v, "", false)
		if err != nil {
			return nil, errors.New("must be an array of strings")
		}
		return list, nil
	}
	return nil, errors.New("is not allowed here")
}

// enumOptions reads a single select's "enum", titled by the legacy
// "enumNames" when present.
func enumOptions(prop map[string]any, where string) ([]messages.FieldOption, error) {
	values, err := stringList(prop["enum"], where+": \"enum\"", true)
	if err != nil {
		return nil, err
	}
	var titles []string
	if en, ok := prop["enumNames"]; ok {
		if titles, err = stringList(en, where+": \"enumNames\"", false); err != nil {
			return nil, err
		}
		if len(titles) != len(values) {
			return nil, fmt.Errorf("%s: \"enumNames\" and \"enum\" differ in length", where)
		}
	}
	opts := make([]messages.FieldOption, len(values))
	for i, v := range values {
		opts[i].Value = v
		if titles != nil {
			opts[i].Title = titles[i]
		}
	}
	return opts, nil
}

// multiOptions reads a multi-select's items: {type: "string", enum: [...]}
// or {anyOf: [{const, title}]} (type "string" optional there).
func multiOptions(v any, where string) ([]messages.FieldOption, error) {
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
		values, err := stringList(items["enum"], where+": \"enum\"", true)
		if err != nil {
			return nil, err
		}
		opts := make([]messages.FieldOption, len(values))
		for i, v := range values {
			opts[i].Value = v
		}
		return opts, nil
	case hasAnyOf:
		return titledOptions(items["anyOf"], where+": \"anyOf\"")
	}
	return nil, fmt.Errorf("%s: needs \"enum\" or \"anyOf\" (only enum multi-selects are allowed)", where)
}

// titledOptions reads [{const: string, title: string}, ...] (non-empty).
func titledOptions(v any, where string) ([]messages.FieldOption, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("%s must be a non-empty array", where)
	}
	out := make([]messages.FieldOption, 0, len(list))
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
		title, ok := m["title"].(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d]: \"title\" must be a string", where, i)
		}
		out = append(out, messages.FieldOption{Value: c, Title: title})
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

// countBounds reads non-negative integer keywords (minLength, maxItems…),
// refusing a minimum above the maximum. A count beyond int becomes
// math.MaxInt, which bounds the same: no string or list is that long (a
// plain conversion would wrap it negative).
func countBounds(prop map[string]any, where, minKey, maxKey string) (lo, hi *int, err error) {
	flo, fhi, err := numberBounds(prop, where, minKey, maxKey, true)
	toInt := func(f *float64) *int {
		if f == nil {
			return nil
		}
		n := math.MaxInt
		if *f < float64(math.MaxInt) {
			n = int(*f)
		}
		return &n
	}
	return toInt(flo), toInt(fhi), err
}

// numberBounds reads number keywords (minimum, maximum; non-negative
// integers if count), refusing a minimum above the maximum.
func numberBounds(prop map[string]any, where, minKey, maxKey string, count bool) (lo, hi *float64, err error) {
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
				return nil, nil, fmt.Errorf("%s: %q must be a non-negative integer", where, k)
			}
			return nil, nil, fmt.Errorf("%s: %q must be a number", where, k)
		}
		vals[i] = &f
	}
	if vals[0] != nil && vals[1] != nil && *vals[0] > *vals[1] {
		return nil, nil, fmt.Errorf("%s: %q is greater than %q", where, minKey, maxKey)
	}
	return vals[0], vals[1], nil
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

// cloneField returns fd with its slices and pointers copied.
func cloneField(fd messages.FormField) messages.FormField {
	fd.Options = slices.Clone(fd.Options)
	fd.Default = cloneValue(fd.Default)
	for _, p := range []**int{&fd.MinLength, &fd.MaxLength, &fd.MinItems, &fd.MaxItems} {
		if *p != nil {
			n := **p
			*p = &n
		}
	}
	for _, p := range []**float64{&fd.Minimum, &fd.Maximum} {
		if *p != nil {
			f := **p
			*p = &f
		}
	}
	return fd
}

func cloneValue(v any) any {
	if l, ok := v.([]string); ok {
		return slices.Clone(l)
	}
	return v
}
