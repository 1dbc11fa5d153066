package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
)

// The pure parts of the interactive handler (interactive.go): a form schema
// turned into field specs, a typed answer checked against its field, the
// warnings of a URL and the changes the guards made to a sampling request.
// None of it needs a terminal.

// Field kinds of a fieldSpec.
const (
	kindString  = "string"
	kindNumber  = "number"
	kindInteger = "integer"
	kindBool    = "boolean"
	kindSelect  = "select"
	kindMulti   = "multi"
)

// fieldOption is one choice of a select: the value sent, the label shown.
type fieldOption struct{ Value, Label string }

// fieldSpec is one form field as the terminal shows it. Everything the
// server chose (titles, labels, descriptions) is sanitised.
type fieldSpec struct {
	Name        string
	Title       string
	Description string
	Kind        string
	Format      string
	Required    bool
	Sensitive   bool
	Options     []fieldOption
	// Defaults, pre-filled: text for strings and numbers, Bool, Multi.
	HasDefault   bool
	DefaultText  string
	DefaultBool  bool
	DefaultMulti []string
	// Bounds, for the hint.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int

	form *guards.Form // this field alone, to check an answer
}

type schemaOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

type schemaProp struct {
	Type        string         `json:"type"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Format      string         `json:"format"`
	Default     any            `json:"default"`
	Enum        []string       `json:"enum"`
	EnumNames   []string       `json:"enumNames"`
	OneOf       []schemaOption `json:"oneOf"`
	MinLength   *int           `json:"minLength"`
	MaxLength   *int           `json:"maxLength"`
	Minimum     *float64       `json:"minimum"`
	Maximum     *float64       `json:"maximum"`
	MinItems    *int           `json:"minItems"`
	MaxItems    *int           `json:"maxItems"`
	Items       struct {
		Enum  []string       `json:"enum"`
		AnyOf []schemaOption `json:"anyOf"`
	} `json:"items"`
}

// propertyOrder returns the keys of the schema's "properties" in the order
// the server wrote them.
func propertyOrder(schema json.RawMessage) ([]string, map[string]json.RawMessage, error) {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, nil, err
	}
	props := map[string]json.RawMessage{}
	if err := json.Unmarshal(top.Properties, &props); err != nil {
		return nil, nil, err
	}
	d := json.NewDecoder(bytes.NewReader(top.Properties))
	if _, err := d.Token(); err != nil { // {
		return nil, nil, err
	}
	var order []string
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return nil, nil, err
		}
		if !seen[k] {
			seen[k] = true
			order = append(order, k)
		}
	}
	return order, props, nil
}

// fieldSpecs turns a form schema (already checked by the guards) into one
// field spec per property, in the schema's order. fields are the guards'
// flags (secret-looking fields).
func fieldSpecs(schema json.RawMessage, fields map[string]messages.FieldInfo) ([]fieldSpec, error) {
	order, props, err := propertyOrder(schema)
	if err != nil {
		return nil, fmt.Errorf("the form's schema: %v", err)
	}
	var top struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &top)
	required := map[string]bool{}
	for _, r := range top.Required {
		required[r] = true
	}
	specs := make([]fieldSpec, 0, len(order))
	for _, name := range order {
		var p schemaProp
		if err := json.Unmarshal(props[name], &p); err != nil {
			return nil, fmt.Errorf("field %q: %v", name, err)
		}
		one, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]json.RawMessage{name: props[name]}})
		form, err := guards.ParseForm("", one)
		if err != nil {
			return nil, fmt.Errorf("field %q: %v", name, err)
		}
		s := fieldSpec{
			Name: name, Title: sanitize.Text(p.Title, 80), Description: sanitize.Text(p.Description, 300),
			Format: p.Format, Required: required[name], Sensitive: fields[name].SensitiveSuspected,
			MinLength: p.MinLength, MaxLength: p.MaxLength, Minimum: p.Minimum, Maximum: p.Maximum,
			MinItems: p.MinItems, MaxItems: p.MaxItems, form: form,
		}
		if s.Title == "" {
			s.Title = sanitize.Text(name, 80)
		}
		switch {
		case len(p.OneOf) > 0:
			s.Kind = kindSelect
			for _, o := range p.OneOf {
				s.Options = append(s.Options, fieldOption{o.Const, labelOr(o.Title, o.Const)})
			}
		case p.Type == "string" && len(p.Enum) > 0:
			s.Kind = kindSelect
			for i, v := range p.Enum {
				label := v
				if i < len(p.EnumNames) {
					label = p.EnumNames[i]
				}
				s.Options = append(s.Options, fieldOption{v, labelOr(label, v)})
			}
		case p.Type == "array":
			s.Kind = kindMulti
			for _, v := range p.Items.Enum {
				s.Options = append(s.Options, fieldOption{v, labelOr(v, v)})
			}
			for _, o := range p.Items.AnyOf {
				s.Options = append(s.Options, fieldOption{o.Const, labelOr(o.Title, o.Const)})
			}
		case p.Type == "boolean":
			s.Kind = kindBool
		case p.Type == "number", p.Type == "integer":
			s.Kind = p.Type
		default:
			s.Kind = kindString
		}
		if p.Default != nil {
			s.HasDefault = true
			switch v := p.Default.(type) {
			case bool:
				s.DefaultBool = v
			case []any:
				for _, x := range v {
					if str, ok := x.(string); ok {
						s.DefaultMulti = append(s.DefaultMulti, str)
					}
				}
			case float64:
				s.DefaultText = strconv.FormatFloat(v, 'f', -1, 64)
			case string:
				s.DefaultText = v
			}
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func labelOr(label, value string) string {
	if label == "" {
		label = value
	}
	return sanitize.Text(label, 80)
}

// Label is the field's title, "*" marking a required field.
func (s fieldSpec) Label() string {
	if s.Required {
		return s.Title + " *"
	}
	return s.Title
}

// Hint says what the field accepts: format, bounds, required.
func (s fieldSpec) Hint() string {
	var parts []string
	switch s.Format {
	case "email":
		parts = append(parts, "an email address")
	case "uri":
		parts = append(parts, "a URI (https://…)")
	case "date":
		parts = append(parts, "a date, YYYY-MM-DD")
	case "date-time":
		parts = append(parts, "a date and time, YYYY-MM-DDTHH:MM:SSZ")
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch {
	case s.MinLength != nil && s.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d to %d characters", *s.MinLength, *s.MaxLength))
	case s.MinLength != nil:
		parts = append(parts, fmt.Sprintf("at least %d characters", *s.MinLength))
	case s.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	what := "a number"
	if s.Kind == kindInteger {
		what = "a whole number"
	}
	if s.Kind == kindNumber || s.Kind == kindInteger {
		switch {
		case s.Minimum != nil && s.Maximum != nil:
			parts = append(parts, fmt.Sprintf("%s from %s to %s", what, num(s.Minimum), num(s.Maximum)))
		case s.Minimum != nil:
			parts = append(parts, fmt.Sprintf("%s, at least %s", what, num(s.Minimum)))
		case s.Maximum != nil:
			parts = append(parts, fmt.Sprintf("%s, at most %s", what, num(s.Maximum)))
		default:
			parts = append(parts, what)
		}
	}
	if s.Kind == kindMulti {
		switch {
		case s.MinItems != nil && s.MaxItems != nil:
			parts = append(parts, fmt.Sprintf("pick %d to %d", *s.MinItems, *s.MaxItems))
		case s.MinItems != nil:
			parts = append(parts, fmt.Sprintf("pick at least %d", *s.MinItems))
		case s.MaxItems != nil:
			parts = append(parts, fmt.Sprintf("pick at most %d", *s.MaxItems))
		default:
			parts = append(parts, "pick any")
		}
		parts = append(parts, "x or space to toggle")
	}
	if s.Required {
		parts = append(parts, "required")
	} else if s.Kind != kindBool && s.Kind != kindMulti {
		parts = append(parts, "optional: leave empty to skip")
	}
	return strings.Join(parts, "; ")
}

// SecretWarning is shown above a field that looks like it asks for a secret.
const secretWarning = "⚠ This field looks like it asks for a secret (password, token, key). Only enter it if you trust this server; it is sent to the server."

// textValue turns typed text into the field's value: present is false for
// an empty optional field (left out of the answer).
func (s fieldSpec) textValue(text string) (v any, present bool, err error) {
	if s.Kind != kindString {
		text = strings.TrimSpace(text)
	}
	if text == "" {
		if s.Required {
			return nil, false, errors.New("this field is required")
		}
		return nil, false, nil
	}
	switch s.Kind {
	case kindInteger:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return nil, false, errors.New("enter a whole number")
		}
		return json.Number(text), true, nil
	case kindNumber:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f != f {
			return nil, false, errors.New("enter a number")
		}
		return json.Number(text), true, nil
	case kindSelect:
		return text, true, nil
	}
	return text, true, nil
}

// checkText checks typed text (strings, numbers, selects) against the field.
func (s fieldSpec) checkText(text string) error {
	v, present, err := s.textValue(text)
	if err != nil || !present {
		return err
	}
	return s.check(v)
}

// checkMulti checks a multi-select's choice.
func (s fieldSpec) checkMulti(v []string) error {
	if v == nil {
		v = []string{}
	}
	return s.check(v)
}

// check validates one value against the field alone, with the guards' own
// form (the same check Conduit makes before sending), and words the error
// for a person.
func (s fieldSpec) check(v any) error {
	if s.form == nil {
		return nil
	}
	_, err := s.form.Complete(map[string]any{s.Name: v})
	if err != nil {
		return errors.New(reaskMessage(s, err))
	}
	return nil
}

var failedKeyword = regexp.MustCompile(`fails "([A-Za-z]+)"`)

// reaskMessage words a validation error of the guards (which names the
// field and the failed keyword, never the value) as the line shown when the
// field is asked again.
func reaskMessage(s fieldSpec, err error) string {
	m := failedKeyword.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	num := func(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }
	switch m[1] {
	case "format":
		switch s.Format {
		case "email":
			return "not a valid email address"
		case "uri":
			return "not a valid URI (e.g. https://example.com)"
		case "date":
			return "not a valid date (YYYY-MM-DD)"
		case "date-time":
			return "not a valid date and time (e.g. 2025-01-31T09:00:00Z)"
		}
		return "not a valid " + s.Format
	case "minLength":
		if s.MinLength != nil {
			return fmt.Sprintf("too short: at least %d characters", *s.MinLength)
		}
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("too long: at most %d characters", *s.MaxLength)
		}
	case "minimum":
		if s.Minimum != nil {
			return "too small: at least " + num(s.Minimum)
		}
	case "maximum":
		if s.Maximum != nil {
			return "too large: at most " + num(s.Maximum)
		}
	case "minItems":
		if s.MinItems != nil {
			return fmt.Sprintf("pick at least %d", *s.MinItems)
		}
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("pick at most %d", *s.MaxItems)
		}
	case "type":
		if s.Kind == kindInteger {
			return "enter a whole number"
		}
	case "enum", "const", "oneOf", "anyOf":
		return "not one of the choices"
	}
	return fmt.Sprintf("does not fit the form (%s)", m[1])
}

// fieldOfError returns the field name a guards error names ("field \"x\" ..."), or "".
func fieldOfError(err error) string {
	var name string
	if _, scanErr := fmt.Sscanf(err.Error(), "field %q", &name); scanErr != nil {
		return ""
	}
	return name
}

// urlWarnings are the warnings of a URL-mode request's consent screen.
func urlWarnings(r *conduit.ElicitationRequest) []string {
	host := sanitize.Text(r.Host, 200)
	var w []string
	if r.IDN {
		w = append(w, fmt.Sprintf("⚠ The host %s is punycode (an internationalised name): it may imitate another site with lookalike letters.", host))
	}
	if r.OriginMismatch {
		w = append(w, fmt.Sprintf("⚠ The host %s is not the server's own origin: this link takes you somewhere else.", host))
	}
	return w
}

// highlightHost returns u with the first occurrence of host wrapped by mark.
func highlightHost(u, host string, mark func(string) string) string {
	if host == "" {
		return u
	}
	i := strings.Index(u, host)
	if i < 0 {
		return u
	}
	return u[:i] + mark(host) + u[i+len(host):]
}

// samplingChanges lists what the guards changed in a sampling request
// (the params the handler sees against what the server sent).
func samplingChanges(r *conduit.SamplingRequest) []string {
	if len(r.Raw) == 0 {
		return nil
	}
	var raw messages.CreateMessageParams
	if err := json.Unmarshal(r.Raw, &raw); err != nil {
		// Raw may be the whole params object or hold them under "params".
		return nil
	}
	var out []string
	p := r.Params
	if raw.MaxTokens != p.MaxTokens {
		out = append(out, fmt.Sprintf("maxTokens: the server asked for %d, clamped to %d", raw.MaxTokens, p.MaxTokens))
	}
	if raw.IncludeContext != p.IncludeContext {
		out = append(out, fmt.Sprintf("includeContext: the server asked for %q, set to %q", sanitize.Text(raw.IncludeContext, 30), sanitize.Text(p.IncludeContext, 30)))
	}
	if raw.SystemPrompt != p.SystemPrompt {
		out = append(out, "systemPrompt: changed by the guards")
	}
	if len(raw.Messages) != len(p.Messages) {
		out = append(out, fmt.Sprintf("messages: the server sent %d, %d kept", len(raw.Messages), len(p.Messages)))
	}
	return out
}

// endedMessage says why a prompt was closed when ctx ended: the handler's
// time was up, or the server cancelled its request (or the client closed).
func endedMessage(ctx context.Context, started time.Time, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("timed out: no answer within %s; the request was not answered", timeout.Round(time.Second))
	}
	if timeout > 0 && time.Since(started) >= timeout-50*time.Millisecond {
		return fmt.Sprintf("timed out: no answer within %s; the request was not answered", timeout.Round(time.Second))
	}
	return "the server cancelled this request (or the client is closing); nothing was sent"
}
