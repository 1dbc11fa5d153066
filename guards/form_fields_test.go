package guards

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/conduitmcp/conduit/messages"
)

func intp(n int) *int           { return &n }
func floatp(f float64) *float64 { return &f }

// fieldCases are one-property schemas and the typed field the guard reads
// from each. since0618 cases are read the same way in every revision; the
// others exist from 2025-11-25 on (and are refused in 2025-06-18, see
// TestFormSchemaPerRevision).
var fieldCases = []struct {
	name      string
	prop      string
	since0618 bool
	want      messages.FormField
}{
	{"string with bounds", `{"type":"string","title":"Nick","description":"Your nickname","minLength":2,"maxLength":20}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldString, Title: "Nick", Description: "Your nickname", MinLength: intp(2), MaxLength: intp(20)}},
	{"email", `{"type":"string","format":"email"}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Format: "email"}},
	{"uri", `{"type":"string","format":"uri"}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Format: "uri"}},
	{"date", `{"type":"string","format":"date"}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Format: "date"}},
	{"date-time", `{"type":"string","format":"date-time"}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Format: "date-time"}},
	{"password format is a hint, and sensitive", `{"type":"string","format":"password"}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldString, Format: "password", Sensitive: true}},
	{"writeOnly is sensitive", `{"type":"string","writeOnly":true}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Sensitive: true}},
	{"sensitive title", `{"type":"string","title":"API key"}`, true, messages.FormField{Name: "f", Kind: messages.FieldString, Title: "API key", Sensitive: true}},
	{"number", `{"type":"number","minimum":0.5,"maximum":2.5}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldNumber, Minimum: floatp(0.5), Maximum: floatp(2.5)}},
	{"integer", `{"type":"integer","minimum":-3}`, true, messages.FormField{Name: "f", Kind: messages.FieldInteger, Minimum: floatp(-3)}},
	{"boolean", `{"type":"boolean"}`, true, messages.FormField{Name: "f", Kind: messages.FieldBoolean}},
	{"boolean default", `{"type":"boolean","default":false}`, true, messages.FormField{Name: "f", Kind: messages.FieldBoolean, Default: false}},
	{"untitled enum", `{"type":"string","enum":["a","b"]}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldSelect, Options: []messages.FieldOption{{Value: "a"}, {Value: "b"}}}},
	{"enum with legacy enumNames", `{"type":"string","enum":["a","b"],"enumNames":["Alpha","Beta"]}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldSelect, Options: []messages.FieldOption{{Value: "a", Title: "Alpha"}, {Value: "b", Title: "Beta"}}}},
	{"enum ignores string bounds", `{"type":"string","enum":["a"],"minLength":5,"format":"email"}`, true,
		messages.FormField{Name: "f", Kind: messages.FieldSelect, Options: []messages.FieldOption{{Value: "a"}}}},

	{"string default", `{"type":"string","default":"x"}`, false, messages.FormField{Name: "f", Kind: messages.FieldString, Default: "x"}},
	{"number default", `{"type":"number","default":1.50}`, false, messages.FormField{Name: "f", Kind: messages.FieldNumber, Default: json.Number("1.50")}},
	{"integer default", `{"type":"integer","default":2}`, false, messages.FormField{Name: "f", Kind: messages.FieldInteger, Default: json.Number("2")}},
	{"enum default", `{"type":"string","enum":["a","b"],"default":"b"}`, false,
		messages.FormField{Name: "f", Kind: messages.FieldSelect, Options: []messages.FieldOption{{Value: "a"}, {Value: "b"}}, Default: "b"}},
	{"titled oneOf", `{"type":"string","title":"Plan","oneOf":[{"const":"free","title":"Free"},{"const":"pro","title":"Pro"}],"default":"pro"}`, false,
		messages.FormField{Name: "f", Kind: messages.FieldSelect, Title: "Plan", Options: []messages.FieldOption{{Value: "free", Title: "Free"}, {Value: "pro", Title: "Pro"}}, Default: "pro"}},
	{"untitled multi", `{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":1,"maxItems":2,"default":["a"]}`, false,
		messages.FormField{Name: "f", Kind: messages.FieldMultiSelect, Options: []messages.FieldOption{{Value: "a"}, {Value: "b"}, {Value: "c"}},
			MinItems: intp(1), MaxItems: intp(2), Default: []string{"a"}}},
	{"titled anyOf multi", `{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":[]}`, false,
		messages.FormField{Name: "f", Kind: messages.FieldMultiSelect, Options: []messages.FieldOption{{Value: "a", Title: "A"}, {Value: "b", Title: "B"}}, Default: []string{}}},
}

func TestFormFieldsPerKind(t *testing.T) {
	for _, c := range fieldCases {
		for _, v := range []string{v0618, v1125, v0728} {
			if v == v0618 && !c.since0618 {
				continue
			}
			t.Run(c.name+"/"+v, func(t *testing.T) {
				for _, required := range []bool{false, true} {
					schema := `{"type":"object","properties":{"f":` + c.prop + `}}`
					if required {
						schema = `{"type":"object","properties":{"f":` + c.prop + `},"required":["f"]}`
					}
					_, _, req := elicitForm(t, v, schema)
					want := c.want
					want.Required = required
					got := req.(*messages.ElicitationRequest).Form
					if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
						t.Fatalf("Form =\n %#v\nwant\n %#v", got, []messages.FormField{want})
					}
				}
			})
		}
	}
}

// The fields come in the order the server wrote them; required is a flag,
// not an order.
func TestFormFieldsOrder(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"},"mid":{"type":"integer"}},"required":["mid"]}`, "zeta alpha mid*"},
		{`{"required":["b"],"properties":{"b":{"type":"string"},"a":{"type":"string"}},"type":"object"}`, "b* a"},
		// A repeated name keeps its first place (its last value, as JSON
		// decoding does); a repeated "properties" counts the last time.
		{`{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string"},"x":{"type":"boolean"}}}`, "x y"},
		{`{"type":"object","properties":{"gone":{"type":"string"}},"properties":{"q":{"type":"string"},"p":{"type":"string"}}}`, "q p"},
		{`{"type":"object","properties":{}}`, ""},
	}
	for _, c := range cases {
		form, err := ParseForm(v1125, json.RawMessage(c.schema))
		if err != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		var names []string
		for _, f := range form.FormFields() {
			n := f.Name
			if f.Required {
				n += "*"
			}
			names = append(names, n)
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("%s: order %q, want %q", c.schema, got, c.want)
		}
	}
	form, _ := ParseForm(v1125, json.RawMessage(cases[2].schema))
	if k := form.FormFields()[0].Kind; k != messages.FieldBoolean {
		t.Errorf("repeated x: kind %q, want the last value's", k)
	}
}

// The request's Form is the handler's to change: the guard keeps its own.
func TestFormFieldsAreCopies(t *testing.T) {
	p, in, req := elicitForm(t, v1125, deploySchema)
	er := req.(*messages.ElicitationRequest)
	for i := range er.Form {
		f := &er.Form[i]
		for j := range f.Options {
			f.Options[j].Value = "mars"
		}
		if f.Maximum != nil {
			*f.Maximum = 100
		}
		if d, ok := f.Default.([]string); ok && len(d) > 0 {
			d[0] = "mars"
		}
	}
	_, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"region": "mars"}})
	wantRefusal(t, r, codeInt, `Internal error: elicitation answer does not fit the schema: field "region" fails "enum"`)
	_, r = p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"replicas": 50}})
	wantRefusal(t, r, codeInt, `Internal error: elicitation answer does not fit the schema: field "replicas" fails "maximum"`)
	res, r := p.After(in, req, &messages.ElicitResult{Action: "accept"})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept","content":{"dryRun":true,"region":"eu-1","replicas":2,"tags":["a"]}}` {
		t.Fatalf("wire %s", got)
	}
}

// fieldOf reads one property into its field.
func fieldOf(t *testing.T, prop string) messages.FormField {
	t.Helper()
	form, err := ParseForm(v1125, json.RawMessage(`{"type":"object","properties":{"f":`+prop+`}}`))
	if err != nil {
		t.Fatalf("%s: %v", prop, err)
	}
	return form.FormFields()[0]
}

const (
	str    = `{"type":"string","minLength":2,"maxLength":3}`
	email  = `{"type":"string","format":"email"}`
	num    = `{"type":"number","minimum":0.1,"maximum":2.5}`
	integ  = `{"type":"integer","minimum":1,"maximum":5}`
	single = `{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}`
	multi  = `{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":1,"maxItems":2}`
)

// checkCases are answer values for one field and the rule each breaks.
var checkCases = []struct {
	prop   string
	value  any
	reason string // "" = fits
	msg    string // "" = `field "f" fails "<reason>"`
}{
	{str, "ab", "", ""},
	{str, "ééé", "", ""}, // characters, not bytes
	{str, "a", "minLength", ""},
	{str, "abcd", "maxLength", ""},
	{str, 12, "type", ""},
	{str, nil, "type", ""},
	{email, "ada@example.com", "", ""},
	{email, "ada", "format", ""},
	{`{"type":"string","format":"uri"}`, "https://example.com/x", "", ""},
	{`{"type":"string","format":"uri"}`, "not a uri", "format", ""},
	{`{"type":"string","format":"date"}`, "1815-12-10", "", ""},
	{`{"type":"string","format":"date"}`, "1815-13-10", "format", ""},
	{`{"type":"string","format":"date-time"}`, "2025-01-31T09:00:00Z", "", ""},
	{`{"type":"string","format":"date-time"}`, "2025-01-31", "format", ""},
	{`{"type":"string","format":"password"}`, "anything", "", ""}, // a hint, not checked
	{`{"type":"string","format":"email","minLength":50}`, "ada", "format", ""},
	{num, 0.1, "", ""}, // a bound is its literal, exactly
	{num, json.Number("2.5"), "", ""},
	{num, 2, "", ""},
	{num, 0.09, "minimum", ""},
	{num, json.Number("2.5000000000000000001"), "maximum", ""},
	{num, "1", "type", ""},
	{num, json.Number("1e999999"), "range", `field "f": number out of range`},
	{integ, 3, "", ""},
	{integ, 4.0, "", ""},
	{integ, json.Number("3.0"), "", ""},
	{integ, 3.5, "type", ""},
	{integ, 0, "minimum", ""},
	{integ, 6, "maximum", ""},
	{`{"type":"boolean"}`, true, "", ""},
	{`{"type":"boolean"}`, "true", "type", ""},
	{single, "b", "", ""},
	{single, "B", "enum", ""},
	{single, 1, "type", ""},
	{`{"type":"string","enum":["x"],"enumNames":["X"]}`, "X", "enum", ""},
	{multi, []string{"a", "c"}, "", ""},
	{multi, []any{"b"}, "", ""},
	{multi, []string{}, "minItems", ""},
	{multi, []string{"a", "b", "c"}, "maxItems", ""},
	{multi, []string{"a", "z", "c"}, "maxItems", ""}, // the count is checked first
	{multi, []string{"a", "z"}, "enum", `field "f": item 1 fails "enum"`},
	{multi, []any{1}, "type", `field "f": item 0 fails "type"`},
	{multi, "a", "type", ""},
	{str, make(chan int), "type", `field "f" cannot be encoded as JSON`},
}

func TestCheckField(t *testing.T) {
	for _, c := range checkCases {
		fe := CheckField(fieldOf(t, c.prop), c.value)
		if c.reason == "" {
			if fe != nil {
				t.Errorf("%s %#v: %v", c.prop, c.value, fe)
			}
			continue
		}
		msg := c.msg
		if msg == "" {
			msg = `field "f" fails "` + c.reason + `"`
		}
		want := &messages.FieldError{Field: "f", Reason: c.reason, Message: msg}
		if !reflect.DeepEqual(fe, want) {
			t.Errorf("%s %#v: %#v, want %#v", c.prop, c.value, fe, want)
		}
	}
}

// A field built by hand cannot make CheckField panic.
func TestCheckFieldHandBuilt(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		field  messages.FormField
		value  any
		reason string
	}{
		{messages.FormField{Name: "n", Kind: messages.FieldNumber, Minimum: &nan, Maximum: &inf}, 3, ""},
		{messages.FormField{Name: "n", Kind: messages.FieldInteger, Maximum: floatp(2)}, 3, "maximum"},
		{messages.FormField{Name: "s", Kind: messages.FieldString, MinLength: intp(-1)}, "", ""},
		{messages.FormField{Name: "c", Kind: messages.FieldSelect}, "a", "enum"},
		{messages.FormField{Name: "x"}, "a", "type"},
	}
	for _, c := range cases {
		fe := CheckField(c.field, c.value)
		if (fe == nil) != (c.reason == "") || (fe != nil && (fe.Reason != c.reason || fe.Field != c.field.Name)) {
			t.Errorf("%+v %v: %v, want %q", c.field, c.value, fe, c.reason)
		}
	}
}

// A refused answer's typed error is reachable with errors.As through the
// Refusal (and its Cause), while the wire message stays the words.
func TestFormRefusalFieldError(t *testing.T) {
	const fields = `"name":{"type":"string","minLength":2},"age":{"type":"integer"}`
	schemas := map[string]string{
		v0618: `{"type":"object","properties":{` + fields + `},"required":["name"]}`,
		v1125: `{"type":"object","properties":{` + fields + `,"tags":{"type":"array","items":{"type":"string","enum":["a"]}}},"required":["name"]}`,
	}
	cases := []struct {
		content       map[string]any
		field, reason string
		msg           string
	}{
		{map[string]any{"age": 3}, "name", "required", `field "name" is required`},
		{map[string]any{"name": "Ada", "nick": "x"}, "nick", "additionalProperties", `field "nick" is not in the schema`},
		{map[string]any{"name": "A"}, "name", "minLength", `field "name" fails "minLength"`},
		{map[string]any{"name": "Ada", "age": 1.5}, "age", "type", `field "age" fails "type"`},
		{map[string]any{"name": "Ada", "tags": []string{"b"}}, "tags", "enum", `field "tags": item 0 fails "enum"`},
	}
	for _, v := range []string{v0618, v1125} {
		for _, c := range cases {
			if v == v0618 && c.field == "tags" {
				continue
			}
			p, in, req := elicitForm(t, v, schemas[v])
			_, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: c.content})
			wantRefusal(t, r, codeInt, "Internal error: elicitation answer does not fit the schema: "+c.msg)
			var fe *messages.FieldError
			if !errors.As(r, &fe) {
				t.Fatalf("%s %v: no FieldError in %v", v, c.content, r)
			}
			if fe.Field != c.field || fe.Reason != c.reason || fe.Message != c.msg {
				t.Errorf("%s %v: %#v", v, c.content, fe)
			}
			if !errors.As(r.Err.Cause, &fe) {
				t.Errorf("Cause %v is not a FieldError", r.Err.Cause)
			}
			var rpc *messages.RPCError
			if !errors.As(r, &rpc) || rpc != r.Err {
				t.Errorf("the Refusal does not unwrap to its RPC error")
			}
		}
	}
	// An answer that cannot be encoded is no field's fault.
	p, in, req := elicitForm(t, v1125, schemas[v1125])
	_, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"name": make(chan int)}})
	wantRefusal(t, r, codeInt, "Internal error: elicitation answer does not fit the schema: content cannot be encoded as JSON: json: unsupported type: chan int")
	var fe *messages.FieldError
	if errors.As(r, &fe) {
		t.Errorf("unexpected FieldError %#v", fe)
	}
}

// The answer rules were the JSON Schema validator's before CheckField
// implemented them: each case gets the validator's verdict, and the same
// first keyword, from the property as written (a titled oneOf as the enum
// of its consts, as the form means it). The number range rule
// and encoding are Conduit's own and not compared.
func TestCheckFieldAgreesWithJSONSchema(t *testing.T) {
	for _, c := range checkCases {
		if c.reason == messages.ReasonRange || strings.Contains(c.msg, "encoded") {
			continue
		}
		s, err := decodeObject(json.RawMessage(c.prop))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s["oneOf"]; ok {
			delete(s, "oneOf")
			s["enum"] = optionValues(fieldOf(t, c.prop))
		}
		b, _ := json.Marshal(s)
		comp := jsonschema.NewCompiler()
		comp.Draft = jsonschema.Draft2020
		comp.AssertFormat = true
		if err := comp.AddResource("urn:test", bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		sch, err := comp.Compile("urn:test")
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		v, err := jsonRoundTrip(c.value)
		if err != nil {
			t.Fatal(err)
		}
		keyword := ""
		var ve *jsonschema.ValidationError
		if errors.As(sch.Validate(v), &ve) {
			for len(ve.Causes) > 0 {
				ve = ve.Causes[0]
			}
			keyword = ve.KeywordLocation[strings.LastIndex(ve.KeywordLocation, "/")+1:]
		}
		if keyword != c.reason {
			t.Errorf("%s %#v: the validator says %q, CheckField %q", b, c.value, keyword, c.reason)
		}
	}
}

func optionValues(f messages.FormField) []any {
	var out []any
	for _, o := range f.Options {
		out = append(out, o.Value)
	}
	return out
}

// A count bound beyond int (minLength 1e19) still bounds: no string or list
// is that long, so a huge minimum refuses every answer and a huge maximum
// none. (It wrapped to a negative int: the minimum let everything through,
// the maximum refused everything. The JSON Schema validator of
// TestCheckFieldAgreesWithJSONSchema wraps the same way, so these are not
// compared with it.)
func TestCheckFieldHugeCounts(t *testing.T) {
	cases := []struct {
		prop   string
		value  any
		reason string
	}{
		{`{"type":"string","minLength":1e19}`, "abc", "minLength"},
		{`{"type":"string","maxLength":10000000000000000000}`, "abc", ""},
		{`{"type":"array","items":{"type":"string","enum":["a"]},"minItems":1e19}`, []string{"a"}, "minItems"},
		{`{"type":"array","items":{"type":"string","enum":["a"]},"maxItems":1e300}`, []string{"a"}, ""},
	}
	for _, c := range cases {
		fe := CheckField(fieldOf(t, c.prop), c.value)
		var want *messages.FieldError
		if c.reason != "" {
			want = &messages.FieldError{Field: "f", Reason: c.reason, Message: `field "f" fails "` + c.reason + `"`}
		}
		if !reflect.DeepEqual(fe, want) {
			t.Errorf("%s %#v: %#v, want %#v", c.prop, c.value, fe, want)
		}
	}
}
