package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/sanitize"
)

// The pure parts of the interactive handler (interactive.go): the guards'
// typed form fields turned into field specs, a typed answer checked
// against its field, the warnings of a URL and the changes the guards made
// to a sampling request. None of it needs a terminal.

// fieldOption is one choice of a select: the value sent, the label shown.
type fieldOption struct{ Value, Label string }

// fieldSpec is one form field as the terminal shows it: the guards' typed
// field, with everything the server chose (titles, labels, descriptions)
// sanitised and the default as the prompt pre-fills it.
type fieldSpec struct {
	Name        string
	Title       string
	Description string
	Kind        messages.FieldKind
	Required    bool
	Sensitive   bool
	Options     []fieldOption
	// Defaults, pre-filled: text for strings and numbers, Bool, Multi.
	HasDefault   bool
	DefaultText  string
	DefaultBool  bool
	DefaultMulti []string

	field messages.FormField // bounds and format, and the answer check
}

// fieldSpecs turns the guards' typed fields into the terminal's, in the
// order the server wrote them.
func fieldSpecs(form []messages.FormField) []fieldSpec {
	specs := make([]fieldSpec, 0, len(form))
	for _, f := range form {
		s := fieldSpec{
			Name: f.Name, Title: sanitize.Text(f.Title, 80), Description: sanitize.Text(f.Description, 300),
			Kind: f.Kind, Required: f.Required, Sensitive: f.Sensitive, field: f,
		}
		if s.Title == "" {
			s.Title = sanitize.Text(f.Name, 80)
		}
		for _, o := range f.Options {
			s.Options = append(s.Options, fieldOption{o.Value, labelOr(o.Title, o.Value)})
		}
		s.HasDefault = f.Default != nil
		switch v := f.Default.(type) {
		case bool:
			s.DefaultBool = v
		case []string:
			s.DefaultMulti = v
		case json.Number:
			s.DefaultText = numberText(v)
		case string:
			s.DefaultText = v
			if f.Kind == messages.FieldString {
				// Shown in the input, and sent as shown: never raw. (A
				// select's default is one of its options' values, which
				// are not shown.)
				s.DefaultText = sanitize.Text(v, 0)
			}
		}
		specs = append(specs, s)
	}
	return specs
}

// num writes a number as a person reads it: no exponent, no trailing zeros.
func num(f *float64) string { return strconv.FormatFloat(*f, 'f', -1, 64) }

// numberText writes a JSON number as a person reads it, with every digit
// the server wrote: a whole number in full (1e30 is 1 and 30 zeros, not the
// float64 nearest), a fraction with an exponent through a float64, and a
// fraction of zeros dropped (36.0 is 36, which an integer field takes). The
// guards have refused a default whose exponent is out of range.
func numberText(n json.Number) string {
	t := string(n)
	if strings.ContainsAny(t, "eE") {
		if r, ok := new(big.Rat).SetString(t); ok && r.IsInt() {
			return r.Num().String()
		}
		f, _ := n.Float64()
		return num(&f)
	}
	if whole, frac, ok := strings.Cut(t, "."); ok && strings.Trim(frac, "0") == "" {
		return whole
	}
	return t
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
	f := s.field
	switch f.Format {
	case "email":
		parts = append(parts, "an email address")
	case "uri":
		parts = append(parts, "a URI (https://…)")
	case "date":
		parts = append(parts, "a date, YYYY-MM-DD")
	case "date-time":
		parts = append(parts, "a date and time, YYYY-MM-DDTHH:MM:SSZ")
	}
	switch {
	case f.MinLength != nil && f.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d to %d characters", *f.MinLength, *f.MaxLength))
	case f.MinLength != nil:
		parts = append(parts, fmt.Sprintf("at least %d characters", *f.MinLength))
	case f.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("at most %d characters", *f.MaxLength))
	}
	what := "a number"
	if s.Kind == messages.FieldInteger {
		what = "a whole number"
	}
	if s.Kind == messages.FieldNumber || s.Kind == messages.FieldInteger {
		switch {
		case f.Minimum != nil && f.Maximum != nil:
			parts = append(parts, fmt.Sprintf("%s from %s to %s", what, num(f.Minimum), num(f.Maximum)))
		case f.Minimum != nil:
			parts = append(parts, fmt.Sprintf("%s, at least %s", what, num(f.Minimum)))
		case f.Maximum != nil:
			parts = append(parts, fmt.Sprintf("%s, at most %s", what, num(f.Maximum)))
		default:
			parts = append(parts, what)
		}
	}
	if s.Kind == messages.FieldMultiSelect {
		switch {
		case f.MinItems != nil && f.MaxItems != nil:
			parts = append(parts, fmt.Sprintf("pick %d to %d", *f.MinItems, *f.MaxItems))
		case f.MinItems != nil:
			parts = append(parts, fmt.Sprintf("pick at least %d", *f.MinItems))
		case f.MaxItems != nil:
			parts = append(parts, fmt.Sprintf("pick at most %d", *f.MaxItems))
		default:
			parts = append(parts, "pick any")
		}
		parts = append(parts, "x or space to toggle")
	}
	if s.Required {
		parts = append(parts, "required")
	} else if s.Kind != messages.FieldBoolean && (s.Kind != messages.FieldMultiSelect || !s.HasDefault) {
		parts = append(parts, "optional: leave empty to skip")
	}
	return strings.Join(parts, "; ")
}

// SecretWarning is shown above a field that looks like it asks for a secret.
const secretWarning = "⚠ This field looks like it asks for a secret (password, token, key). Only enter it if you trust this server; it is sent to the server."

// textValue turns typed text into the field's value: present is false for
// an empty optional field (left out of the answer).
func (s fieldSpec) textValue(text string) (v any, present bool, err error) {
	if s.Kind != messages.FieldString {
		text = strings.TrimSpace(text)
	}
	if text == "" {
		if s.Required {
			return nil, false, errors.New("this field is required")
		}
		return nil, false, nil
	}
	// A number is sent as a JSON number literal: what a person types
	// ("+36", "036", ".5", "2.") is not always one.
	switch s.Kind {
	case messages.FieldInteger:
		n, ok := new(big.Int).SetString(text, 10)
		if !ok {
			return nil, false, errors.New("enter a whole number")
		}
		return json.Number(n.String()), true, nil
	case messages.FieldNumber:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, false, errors.New("enter a number")
		}
		if !json.Valid([]byte(text)) {
			text = strconv.FormatFloat(f, 'f', -1, 64)
		}
		return json.Number(text), true, nil
	}
	return text, true, nil
}

// skipped reports whether a multi-select's choice v leaves the field out
// of the answer: nothing picked in an optional field without a default.
// With a default, [] is sent: left out, the default would be filled in
// for a person who unpicked it.
func (s fieldSpec) skipped(v []string) bool {
	return len(v) == 0 && !s.Required && !s.HasDefault
}

// checkText checks typed text (strings, numbers, selects) against the field.
func (s fieldSpec) checkText(text string) error {
	v, present, err := s.textValue(text)
	if err != nil || !present {
		return err
	}
	return s.check(v)
}

// checkMulti checks a multi-select's choice. An optional one without a
// default may be left empty (it is then left out of the answer), whatever
// its minItems.
func (s fieldSpec) checkMulti(v []string) error {
	if s.skipped(v) {
		return nil
	}
	if v == nil {
		v = []string{}
	}
	return s.check(v)
}

// check validates one value against the field alone, with the guards' own
// rules (the check Conduit makes before sending), and words the error for
// a person.
func (s fieldSpec) check(v any) error {
	if fe := conduit.CheckField(s.field, v); fe != nil {
		return errors.New(reaskMessage(s, fe))
	}
	return nil
}

// reaskMessage words a field error of the guards (which names the field
// and the rule broken, never the value) as the line shown when the field
// is asked again.
func reaskMessage(s fieldSpec, fe *messages.FieldError) string {
	f := s.field
	switch fe.Reason {
	case messages.ReasonFormat:
		switch f.Format {
		case "email":
			return "not a valid email address"
		case "uri":
			return "not a valid URI (e.g. https://example.com)"
		case "date":
			return "not a valid date (YYYY-MM-DD)"
		case "date-time":
			return "not a valid date and time (e.g. 2025-01-31T09:00:00Z)"
		}
		return "not a valid " + f.Format
	case messages.ReasonMinLength:
		return fmt.Sprintf("too short: at least %d characters", *f.MinLength)
	case messages.ReasonMaxLength:
		return fmt.Sprintf("too long: at most %d characters", *f.MaxLength)
	case messages.ReasonMinimum:
		return "too small: at least " + num(f.Minimum)
	case messages.ReasonMaximum:
		return "too large: at most " + num(f.Maximum)
	case messages.ReasonMinItems:
		return fmt.Sprintf("pick at least %d", *f.MinItems)
	case messages.ReasonMaxItems:
		return fmt.Sprintf("pick at most %d", *f.MaxItems)
	case messages.ReasonType:
		if f.Kind == messages.FieldInteger {
			return "enter a whole number"
		}
	case messages.ReasonEnum:
		return "not one of the choices"
	case messages.ReasonRange:
		return fe.Message
	}
	return fmt.Sprintf("does not fit the form (%s)", fe.Reason)
}

// urlWarnings are the warnings of a URL-mode request's consent screen.
func urlWarnings(r *conduit.ElicitationRequest) []string {
	host := sanitize.Text(r.Host, 200)
	var w []string
	if r.HostMapped {
		w = append(w, fmt.Sprintf("⚠ The URL shows the host %s but leads to %s: a browser reads some of its characters as others (a dot, a letter).", sanitize.Text(r.WrittenHost, 200), host))
	}
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
