package guards_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// fuzzVersions are the revisions the first fuzz argument picks from.
var fuzzVersions = []string{messages.Version20250618, messages.Version20251125, messages.Version20260728}

// FuzzFormSchema feeds arbitrary requestedSchema and answer bytes to the
// form guard, directly (ParseForm, Fields, Defaults, Complete) and through
// the Pipeline (Before, then After), for the revision picked by v. The seed
// corpus is in testdata/fuzz/FuzzFormSchema.
//
// Properties: nothing panics; an accepted schema's Fields are exactly its
// properties and its Defaults exactly the declared defaults; a completed
// answer holds every defaulted field (the default itself when the answer
// omitted it, the answer's value otherwise) and no field outside the
// schema, and the handler's content is left as it was; the Pipeline
// accepts a well-formed schema exactly when ParseForm does and answers
// exactly as Complete does.
func FuzzFormSchema(f *testing.F) {
	f.Fuzz(func(t *testing.T, v byte, schema, answer []byte) {
		version := fuzzVersions[int(v)%len(fuzzVersions)]

		form, err := guards.ParseForm(version, json.RawMessage(schema))
		if err == nil {
			checkAcceptedForm(t, version, form, schema, answer)
		} else if form != nil {
			t.Fatalf("ParseForm returned a form with error %v", err)
		}
		checkPipeline(t, version, form, schema, answer)
	})
}

// checkAcceptedForm checks Fields, Defaults and Complete of an accepted
// schema against the schema's own properties.
func checkAcceptedForm(t *testing.T, version string, form *guards.Form, schema, answer []byte) {
	t.Helper()
	top, ok := decodeFirst(schema).(map[string]any)
	if !ok {
		t.Fatalf("accepted a schema that is not a JSON object: %q", schema)
	}
	props, ok := top["properties"].(map[string]any)
	if !ok {
		t.Fatalf("accepted a schema without a properties object: %q", schema)
	}
	names := slices.Sorted(maps.Keys(props))
	if got := slices.Sorted(maps.Keys(form.Fields())); !slices.Equal(got, names) {
		t.Fatalf("Fields() = %q, properties %q", got, names)
	}

	// The typed fields are the same properties, each once, with the same
	// flags and defaults.
	fields := form.FormFields()
	byName := map[string]messages.FormField{}
	for _, f := range fields {
		byName[f.Name] = f
	}
	if got := slices.Sorted(maps.Keys(byName)); len(fields) != len(names) || !slices.Equal(got, names) {
		t.Fatalf("FormFields() names %q, properties %q", got, names)
	}
	for name, info := range form.Fields() {
		if byName[name].Sensitive != info.SensitiveSuspected {
			t.Fatalf("%q: Sensitive %v, SensitiveSuspected %v", name, byName[name].Sensitive, info.SensitiveSuspected)
		}
	}

	// The declared defaults, by field, as JSON.
	declared := map[string]string{}
	for name, p := range props {
		pm, ok := p.(map[string]any)
		if !ok {
			t.Fatalf("accepted property %q that is not an object", name)
		}
		if d, ok := pm["default"]; ok {
			declared[name] = jsonText(t, d)
			if _, isBool := d.(bool); version == messages.Version20250618 && !isBool {
				t.Fatalf("accepted non-boolean default of %q in %s", name, version)
			}
		}
	}
	defaults := form.Defaults()
	for _, f := range fields {
		if _, ok := defaults[f.Name]; ok != (f.Default != nil) || (ok && jsonText(t, f.Default) != jsonText(t, defaults[f.Name])) {
			t.Fatalf("%q: Default %#v, Defaults() %#v", f.Name, f.Default, defaults[f.Name])
		}
	}
	if got, want := slices.Sorted(maps.Keys(defaults)), slices.Sorted(maps.Keys(declared)); !slices.Equal(got, want) {
		t.Fatalf("Defaults() has %q, schema declares %q", got, want)
	}
	for name, d := range defaults {
		if jsonText(t, d) != declared[name] {
			t.Fatalf("Defaults()[%q] = %s, schema declares %s", name, jsonText(t, d), declared[name])
		}
	}
	// Defaults hands out copies.
	for _, d := range defaults {
		if l, ok := d.([]string); ok && len(l) > 0 {
			l[0] = "\x00mutated"
		}
	}
	for name, d := range form.Defaults() {
		if jsonText(t, d) != declared[name] {
			t.Fatalf("Defaults()[%q] changed through an earlier copy", name)
		}
	}

	for _, content := range answerContents(answer) {
		before := jsonText(t, content)
		out, err := form.Complete(content)
		if jsonText(t, content) != before {
			t.Fatalf("Complete mutated its argument: %s, was %s", jsonText(t, content), before)
		}
		if err != nil {
			if out != nil {
				t.Fatalf("Complete returned content with error %v", err)
			}
			// Decoded JSON always encodes: every refusal is a field's.
			var fe *messages.FieldError
			if !errors.As(err, &fe) || fe.Reason == "" || fe.Message != err.Error() {
				t.Fatalf("Complete error %#v is not a FieldError", err)
			}
			_, answered := content[fe.Field]
			if _, isProp := props[fe.Field]; !answered && !isProp {
				t.Fatalf("Complete error %#v names no field of the answer or the form", err)
			}
			continue
		}
		// Complete and CheckField apply the same rules.
		for name, val := range out {
			if fe := guards.CheckField(byName[name], val); fe != nil {
				t.Fatalf("Complete accepted %q, CheckField says %v", name, fe)
			}
		}
		for name := range out {
			if _, ok := props[name]; !ok {
				t.Fatalf("completed content has %q, not a property of the schema", name)
			}
		}
		for name, val := range content {
			if !reflect.DeepEqual(out[name], val) {
				t.Fatalf("completed content changed answered %q: %#v, was %#v", name, out[name], val)
			}
		}
		for name, d := range declared {
			got, ok := out[name]
			if !ok {
				t.Fatalf("completed content lacks defaulted %q", name)
			}
			if _, answered := content[name]; !answered && jsonText(t, got) != d {
				t.Fatalf("completed %q = %s, default %s", name, jsonText(t, got), d)
			}
		}
	}
}

// checkPipeline runs elicitation/create through Before and After on a fresh
// Pipeline. form is ParseForm's result (nil when it refused the schema).
func checkPipeline(t *testing.T, version string, form *guards.Form, schema, answer []byte) {
	t.Helper()
	p := guards.New(guards.Config{})
	params := append(append([]byte(`{"message":"m","requestedSchema":`), schema...), '}')
	in := newFuzzInput(version, params)
	req, r := p.Before(in)
	if r != nil {
		if r.Err == nil || r.Err.Code != messages.CodeInvalidParams || r.Outcome != guards.OutcomeRefused {
			t.Fatalf("Before refused with %+v", r)
		}
		if req != nil {
			t.Fatalf("Before refused and returned %#v", req)
		}
	}
	// A well-formed schema is embedded as is, so Before decides as
	// ParseForm does. (Trailing bytes make the params invalid JSON.)
	if json.Valid(schema) && (r == nil) != (form != nil) {
		t.Fatalf("Before refusal %+v, ParseForm accepted %v", r, form != nil)
	}
	if r == nil {
		er, ok := req.(*messages.ElicitationRequest)
		if !ok || er.Mode != messages.ModeForm {
			t.Fatalf("Before returned %#v", req)
		}
		if form != nil {
			if got, want := slices.Sorted(maps.Keys(er.Fields)), slices.Sorted(maps.Keys(form.Fields())); !slices.Equal(got, want) {
				t.Fatalf("request Fields %q, form Fields %q", got, want)
			}
		}
	}

	var reparsed *guards.Form
	if r == nil {
		// The schema Before accepted, parsed again the way After does when
		// it has no cached form.
		var err error
		reparsed, err = guards.ParseForm(version, req.(*messages.ElicitationRequest).Params.RequestedSchema)
		if err != nil {
			t.Fatalf("Before accepted a schema ParseForm refuses: %v", err)
		}
	}
	for i, content := range answerContents(answer) {
		var want map[string]any
		var wantErr error = errNoForm
		if reparsed != nil {
			want, wantErr = reparsed.Complete(content)
		}
		before := jsonText(t, content)
		targets := []*guards.Input{in}
		if i == 0 {
			// After on an Input Before did not see parses the schema itself.
			targets = append(targets, newFuzzInput(version, nil))
		}
		for _, target := range targets {
			res, ar := p.After(target, req, &messages.ElicitResult{Action: messages.ActionAccept, Content: content})
			if jsonText(t, content) != before {
				t.Fatalf("After mutated the handler's content")
			}
			if wantErr != nil {
				if ar == nil || ar.Err == nil || ar.Err.Code != messages.CodeInternalError {
					t.Fatalf("After accepted %s (Complete: %v): %+v", before, wantErr, res)
				}
				continue
			}
			if ar != nil {
				t.Fatalf("After refused %s that Complete accepts: %+v", before, ar.Err)
			}
			er, ok := res.(*messages.ElicitResult)
			if !ok || er.Action != messages.ActionAccept {
				t.Fatalf("After returned %#v", res)
			}
			if got := jsonText(t, er.Content); got != jsonText(t, want) {
				t.Fatalf("After content %s, Complete %s", got, jsonText(t, want))
			}
		}
		for _, action := range []string{messages.ActionDecline, messages.ActionCancel} {
			res, ar := p.After(in, req, &messages.ElicitResult{Action: action, Content: content})
			if ar != nil {
				t.Fatalf("After refused %s: %+v", action, ar.Err)
			}
			if er, ok := res.(*messages.ElicitResult); !ok || er.Action != action || er.Content != nil {
				t.Fatalf("After %s returned %#v", action, res)
			}
		}
		if _, ar := p.After(in, req, &messages.ElicitResult{Action: "approve", Content: content}); ar == nil {
			t.Fatalf("After accepted an unknown action")
		}
	}
}

var errNoForm = errors.New("the request was refused by Before")

func newFuzzInput(version string, params json.RawMessage) *guards.Input {
	return &guards.Input{
		Method:        messages.MethodElicit,
		Params:        params,
		Version:       version,
		CallsInFlight: 1,
		Context:       messages.RequestContext{Client: "fuzz", ServerID: "srv", Era: messages.EraLegacy},
	}
}

// answerContents decodes answer as a handler might produce it: numbers as
// json.Number and as float64. Anything but a JSON object is no content.
func answerContents(answer []byte) []map[string]any {
	var asNumber map[string]any
	d := json.NewDecoder(bytes.NewReader(answer))
	d.UseNumber()
	if err := d.Decode(&asNumber); err != nil {
		asNumber = nil
	}
	var asFloat map[string]any
	if err := json.Unmarshal(answer, &asFloat); err != nil {
		asFloat = nil
	}
	return []map[string]any{asNumber, asFloat}
}

// decodeFirst decodes the first JSON value of b, numbers as json.Number
// (nil if there is none).
func decodeFirst(b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil
	}
	return v
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("cannot encode %#v: %v", v, err)
	}
	return string(b)
}
