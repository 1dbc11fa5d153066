package guards

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

// schemaCase is one requestedSchema and whether each revision accepts it.
type schemaCase struct {
	name             string
	schema           string
	ok0618, ok1125up bool
}

func props(p string) string { return `{"type":"object","properties":{` + p + `}}` }

var schemaCases = []schemaCase{
	// Accepted shapes.
	{"empty form", props(``), true, true},
	{"plain string", props(`"s":{"type":"string","title":"S","description":"d","minLength":1,"maxLength":10}`), true, true},
	{"string formats", props(`"e":{"type":"string","format":"email"},"u":{"type":"string","format":"uri"},"d":{"type":"string","format":"date"},"t":{"type":"string","format":"date-time"}`), true, true},
	{"unknown format tolerated", props(`"p":{"type":"string","format":"password"}`), true, true},
	{"pattern tolerated", props(`"s":{"type":"string","pattern":"^[a-z]+$"}`), true, true},
	{"unknown keys tolerated", props(`"s":{"type":"string","x-ui":{"widget":"text"},"examples":["a"],"deprecated":false}`), true, true},
	{"number", props(`"n":{"type":"number","minimum":0.5,"maximum":9.5}`), true, true},
	{"integer", props(`"i":{"type":"integer","minimum":1,"maximum":5}`), true, true},
	{"boolean", props(`"b":{"type":"boolean"}`), true, true},
	{"boolean default", props(`"b":{"type":"boolean","default":true}`), true, true},
	{"untitled single enum", props(`"c":{"type":"string","enum":["a","b"]}`), true, true},
	{"legacy enumNames", props(`"c":{"type":"string","enum":["a","b"],"enumNames":["A","B"]}`), true, true},
	{"required", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"boolean"}},"required":["a"]}`, true, true},
	{"top title/description", `{"type":"object","title":"T","description":"D","properties":{}}`, true, true},
	{"additionalProperties false", `{"type":"object","properties":{},"additionalProperties":false}`, true, true},
	{"unknown top key", `{"type":"object","properties":{},"x-extra":1}`, true, true},

	// 2025-11-25 and later only.
	{"$schema", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{}}`, false, true},
	{"string default", props(`"s":{"type":"string","default":"x"}`), false, true},
	{"number default", props(`"n":{"type":"number","default":1.5}`), false, true},
	{"integer default", props(`"n":{"type":"integer","default":2}`), false, true},
	{"enum default", props(`"c":{"type":"string","enum":["a","b"],"default":"b"}`), false, true},
	{"legacy titled enum default", props(`"c":{"type":"string","enum":["a","b"],"enumNames":["A","B"],"default":"a"}`), false, true},
	{"titled single", props(`"c":{"type":"string","oneOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}`), false, true},
	{"titled single default", props(`"c":{"type":"string","oneOf":[{"const":"a","title":"A"}],"default":"a"}`), false, true},
	{"untitled multi", props(`"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"minItems":1,"maxItems":2}`), false, true},
	{"untitled multi default", props(`"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"default":["a"]}`), false, true},
	{"titled multi", props(`"m":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]}}`), false, true},
	{"titled multi typed items", props(`"m":{"type":"array","items":{"type":"string","anyOf":[{"const":"a","title":"A"}]},"default":[]}`), false, true},

	// Refused everywhere.
	{"not an object", `[]`, false, false},
	{"not JSON object", `"schema"`, false, false},
	{"type missing", `{"properties":{}}`, false, false},
	{"type array", `{"type":"array","properties":{}}`, false, false},
	{"properties missing", `{"type":"object"}`, false, false},
	{"properties array", `{"type":"object","properties":[]}`, false, false},
	{"property not object", props(`"s":"string"`), false, false},
	{"property type missing", props(`"s":{"title":"S"}`), false, false},
	{"property type list", props(`"s":{"type":["string","null"]}`), false, false},
	{"property type null", props(`"s":{"type":"null"}`), false, false},
	{"nested object", props(`"o":{"type":"object","properties":{"x":{"type":"string"}}}`), false, false},
	{"nested object bare", props(`"o":{"type":"object"}`), false, false},
	{"array of numbers", props(`"a":{"type":"array","items":{"type":"number"}}`), false, false},
	{"array of free strings", props(`"a":{"type":"array","items":{"type":"string"}}`), false, false},
	{"array of objects", props(`"a":{"type":"array","items":{"type":"object","properties":{}}}`), false, false},
	{"array without items", props(`"a":{"type":"array"}`), false, false},
	{"multi enum untyped items", props(`"a":{"type":"array","items":{"enum":["a"]}}`), false, false},
	{"multi enum and anyOf", props(`"a":{"type":"array","items":{"type":"string","enum":["a"],"anyOf":[{"const":"a","title":"A"}]}}`), false, false},
	{"multi nested ref", props(`"a":{"type":"array","items":{"$ref":"#/$defs/x"}}`), false, false},
	{"$ref property", props(`"s":{"$ref":"https://evil.example/schema.json"}`), false, false},
	{"$ref with type", props(`"s":{"type":"string","$ref":"#/$defs/s"}`), false, false},
	{"$ref top", `{"$ref":"https://evil.example/s.json","type":"object","properties":{}}`, false, false},
	{"$defs top", `{"type":"object","properties":{},"$defs":{"s":{"type":"string"}}}`, false, false},
	{"allOf", props(`"s":{"type":"string","allOf":[{"minLength":1}]}`), false, false},
	{"anyOf on property", props(`"s":{"type":"string","anyOf":[{"const":"a"}]}`), false, false},
	{"not", props(`"s":{"type":"string","not":{"const":"a"}}`), false, false},
	{"if/then", props(`"s":{"type":"string","if":{"const":"a"},"then":{"minLength":2}}`), false, false},
	{"top allOf", `{"type":"object","properties":{},"allOf":[{"required":["x"]}]}`, false, false},
	{"additionalProperties schema", `{"type":"object","properties":{},"additionalProperties":{"type":"string"}}`, false, false},
	{"patternProperties", `{"type":"object","properties":{},"patternProperties":{".*":{"type":"string"}}}`, false, false},
	{"required not array", `{"type":"object","properties":{"a":{"type":"string"}},"required":"a"}`, false, false},
	{"required unknown name", `{"type":"object","properties":{"a":{"type":"string"}},"required":["b"]}`, false, false},
	{"required number", `{"type":"object","properties":{"a":{"type":"string"}},"required":[1]}`, false, false},
	{"title not string", `{"type":"object","title":1,"properties":{}}`, false, false},
	{"property description not string", props(`"s":{"type":"string","description":["x"]}`), false, false},
	{"enum empty", props(`"c":{"type":"string","enum":[]}`), false, false},
	{"enum numbers", props(`"c":{"type":"string","enum":[1,2]}`), false, false},
	{"enum on number", props(`"c":{"type":"number","enum":[1,2]}`), false, false},
	{"enumNames without enum", props(`"c":{"type":"string","enumNames":["A"]}`), false, false},
	{"enumNames length", props(`"c":{"type":"string","enum":["a","b"],"enumNames":["A"]}`), false, false},
	{"oneOf without title", props(`"c":{"type":"string","oneOf":[{"const":"a"}]}`), false, false},
	{"oneOf without const", props(`"c":{"type":"string","oneOf":[{"title":"A"}]}`), false, false},
	{"oneOf empty", props(`"c":{"type":"string","oneOf":[]}`), false, false},
	{"oneOf and enum", props(`"c":{"type":"string","enum":["a"],"oneOf":[{"const":"a","title":"A"}]}`), false, false},
	{"oneOf on number", props(`"c":{"type":"number","oneOf":[{"const":1,"title":"A"}]}`), false, false},
	{"minLength negative", props(`"s":{"type":"string","minLength":-1}`), false, false},
	{"minLength fraction", props(`"s":{"type":"string","minLength":1.5}`), false, false},
	{"minLength above maxLength", props(`"s":{"type":"string","minLength":5,"maxLength":2}`), false, false},
	{"minimum string", props(`"n":{"type":"number","minimum":"0"}`), false, false},
	{"minimum above maximum", props(`"n":{"type":"number","minimum":5,"maximum":1}`), false, false},
	{"huge exponent", props(`"n":{"type":"number","maximum":1e999999}`), false, false},
	{"tiny exponent", props(`"n":{"type":"number","maximum":1e-999999}`), false, false},
	{"minItems negative", props(`"m":{"type":"array","items":{"type":"string","enum":["a"]},"minItems":-1}`), false, false},
	{"format not string", props(`"s":{"type":"string","format":1}`), false, false},
	{"boolean default string", props(`"b":{"type":"boolean","default":"true"}`), false, false},
}

// Refused in 2025-11-25+ although their shape exists: the default does
// not fit the field.
var badDefaultCases = []schemaCase{
	{"string default number", props(`"s":{"type":"string","default":1}`), false, false},
	{"string default too short", props(`"s":{"type":"string","minLength":3,"default":"ab"}`), false, false},
	{"string default bad email", props(`"s":{"type":"string","format":"email","default":"nope"}`), false, false},
	{"integer default fraction", props(`"n":{"type":"integer","default":2.5}`), false, false},
	{"number default above max", props(`"n":{"type":"number","maximum":3,"default":4}`), false, false},
	{"enum default not option", props(`"c":{"type":"string","enum":["a","b"],"default":"z"}`), false, false},
	{"oneOf default not option", props(`"c":{"type":"string","oneOf":[{"const":"a","title":"A"}],"default":"b"}`), false, false},
	{"multi default not option", props(`"m":{"type":"array","items":{"type":"string","enum":["a"]},"default":["b"]}`), false, false},
	{"multi default string", props(`"m":{"type":"array","items":{"type":"string","enum":["a"]},"default":"a"}`), false, false},
	{"multi default too many", props(`"m":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":1,"default":["a","b"]}`), false, false},
}

func TestFormSchemaPerRevision(t *testing.T) {
	all := append(append([]schemaCase{}, schemaCases...), badDefaultCases...)
	for _, c := range all {
		for _, v := range []string{v0618, v1125, v0728} {
			want := c.ok1125up
			if v == v0618 {
				want = c.ok0618
			}
			t.Run(c.name+"/"+v, func(t *testing.T) {
				params := `{"message":"m","requestedSchema":` + c.schema + `}`
				in := input(messages.MethodElicit, v, messages.EraLegacy, params)
				req, r := New(Config{}).Before(in)
				if !want {
					wantRefusal(t, r, codeInvalid, "")
					if !strings.HasPrefix(r.Err.Message, "Invalid params: requestedSchema") {
						t.Fatalf("message %q", r.Err.Message)
					}
					return
				}
				wantOK(t, r)
				er := req.(*messages.ElicitationRequest)
				var s struct {
					Properties map[string]json.RawMessage `json:"properties"`
				}
				_ = json.Unmarshal([]byte(c.schema), &s)
				if len(er.Fields) != len(s.Properties) {
					t.Fatalf("Fields = %v, want one per property", er.Fields)
				}
				if in.form == nil {
					t.Fatalf("form not cached in the Input")
				}
			})
		}
	}
}

// The digest's §2.2.2 example.
const deploySchema = `{"type":"object","properties":{
    "region":{"type":"string","title":"Region","oneOf":[{"const":"eu-1","title":"Frankfurt"},{"const":"us-2","title":"Oregon"}],"default":"eu-1"},
    "replicas":{"type":"integer","minimum":1,"maximum":5,"default":2},
    "features":{"type":"array","items":{"type":"string","enum":["metrics","tracing"]},"maxItems":2},
    "notify":{"type":"string","format":"email"},
    "ratio":{"type":"number","minimum":0,"maximum":1},
    "tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"},{"const":"b","title":"B"}]},"default":["a"]},
    "dryRun":{"type":"boolean","default":true}},
   "required":["region","replicas"]}`

func elicitForm(t *testing.T, version, schema string) (*Pipeline, *Input, any) {
	t.Helper()
	p := New(Config{})
	in := input(messages.MethodElicit, version, messages.EraLegacy, `{"message":"Choose deployment options","requestedSchema":`+schema+`}`)
	req, r := p.Before(in)
	wantOK(t, r)
	return p, in, req
}

func TestFormAnswers(t *testing.T) {
	cases := []struct {
		name    string
		content map[string]any
		want    string // wire JSON of the result; "" = refused
		field   string // the field the refusal names
	}{
		{"defaults filled", nil, `{"action":"accept","content":{"dryRun":true,"region":"eu-1","replicas":2,"tags":["a"]}}`, ""},
		{"empty content", map[string]any{}, `{"action":"accept","content":{"dryRun":true,"region":"eu-1","replicas":2,"tags":["a"]}}`, ""},
		{"answers kept, rest filled", map[string]any{"replicas": 3, "features": []string{"metrics"}, "dryRun": false},
			`{"action":"accept","content":{"dryRun":false,"features":["metrics"],"region":"eu-1","replicas":3,"tags":["a"]}}`, ""},
		{"all answered", map[string]any{"region": "us-2", "replicas": json.Number("5"), "features": []any{"metrics", "tracing"}, "notify": "ops@example.com", "ratio": 0.25, "tags": []string{}, "dryRun": true},
			`{"action":"accept","content":{"dryRun":true,"features":["metrics","tracing"],"notify":"ops@example.com","ratio":0.25,"region":"us-2","replicas":5,"tags":[]}}`, ""},
		{"fractional number", map[string]any{"ratio": 0.5}, `{"action":"accept","content":{"dryRun":true,"ratio":0.5,"region":"eu-1","replicas":2,"tags":["a"]}}`, ""},
		{"integral float for integer", map[string]any{"replicas": 4.0}, `{"action":"accept","content":{"dryRun":true,"region":"eu-1","replicas":4,"tags":["a"]}}`, ""},
		{"integer fraction", map[string]any{"replicas": 2.5}, "", "replicas"},
		{"integer above maximum", map[string]any{"replicas": 7}, "", "replicas"},
		{"integer below minimum", map[string]any{"replicas": 0}, "", "replicas"},
		{"integer as string", map[string]any{"replicas": "3"}, "", "replicas"},
		{"number above maximum", map[string]any{"ratio": 1.5}, "", "ratio"},
		{"single not an option", map[string]any{"region": "mars"}, "", "region"},
		{"multi not an option", map[string]any{"features": []string{"logging"}}, "", "features"},
		{"multi too many", map[string]any{"features": []string{"metrics", "tracing", "metrics"}}, "", "features"},
		{"multi not array", map[string]any{"features": "metrics"}, "", "features"},
		{"titled multi not an option", map[string]any{"tags": []string{"c"}}, "", "tags"},
		{"bad email", map[string]any{"notify": "not-an-email"}, "", "notify"},
		{"boolean as string", map[string]any{"dryRun": "yes"}, "", "dryRun"},
		{"null value", map[string]any{"notify": nil}, "", "notify"},
		{"nested object value", map[string]any{"notify": map[string]any{"a": 1}}, "", "notify"},
		{"extra field", map[string]any{"password": "hunter2"}, "", "password"},
		{"unencodable", map[string]any{"notify": make(chan int)}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, in, req := elicitForm(t, v1125, deploySchema)
			before := mustJSONLoose(c.content)
			res, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: c.content})
			if c.want == "" {
				wantRefusal(t, r, codeInt, "")
				if !strings.HasPrefix(r.Err.Message, "Internal error: elicitation answer does not fit the schema: ") {
					t.Fatalf("message %q", r.Err.Message)
				}
				if c.field != "" && !strings.Contains(r.Err.Message, `field "`+c.field+`"`) {
					t.Fatalf("message %q does not name %q", r.Err.Message, c.field)
				}
				return
			}
			wantOK(t, r)
			if got := mustJSON(t, res); got != c.want {
				t.Fatalf("wire\n got %s\nwant %s", got, c.want)
			}
			if mustJSONLoose(c.content) != before {
				t.Fatalf("handler's content mutated")
			}
		})
	}
}

func mustJSONLoose(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestFormRequired(t *testing.T) {
	schema := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"]}`
	p, in, req := elicitForm(t, v0618, schema)
	_, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"name": "x"}})
	wantRefusal(t, r, codeInt, `Internal error: elicitation answer does not fit the schema: field "age" is required`)
	_, r = p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"name": "x", "nick": "y", "age": 3}})
	wantRefusal(t, r, codeInt, `Internal error: elicitation answer does not fit the schema: field "nick" is not in the schema`)
	res, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"name": "x", "age": 3}})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept","content":{"age":3,"name":"x"}}` {
		t.Fatalf("wire %s", got)
	}
}

// 2025-06-18: only booleans have defaults, and they are filled.
func TestFormDefaults0618(t *testing.T) {
	schema := `{"type":"object","properties":{"ok":{"type":"boolean","default":false},"why":{"type":"string"}}}`
	p, in, req := elicitForm(t, v0618, schema)
	res, r := p.After(in, req, &messages.ElicitResult{Action: "accept"})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept","content":{"ok":false}}` {
		t.Fatalf("wire %s", got)
	}
}

func TestElicitationActions(t *testing.T) {
	cases := []struct {
		action  string
		content map[string]any
		want    string
	}{
		{"decline", map[string]any{"region": "eu-1"}, `{"action":"decline"}`},
		{"cancel", map[string]any{"anything": make(chan int)}, `{"action":"cancel"}`},
		{"decline", nil, `{"action":"decline"}`},
		{"ACCEPT", nil, ""},
		{"Accept", nil, ""},
		{"", nil, ""},
		{"approve", nil, ""},
		{"accept ", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.action, func(t *testing.T) {
			p, in, req := elicitForm(t, v1125, deploySchema)
			orig := &messages.ElicitResult{Action: c.action, Content: c.content}
			res, r := p.After(in, req, orig)
			if c.want == "" {
				wantRefusal(t, r, codeInt, "")
				if !strings.Contains(r.Err.Message, "action") {
					t.Fatalf("message %q", r.Err.Message)
				}
				return
			}
			wantOK(t, r)
			if got := mustJSON(t, res); got != c.want {
				t.Fatalf("wire %s", got)
			}
			if len(c.content) > 0 && orig.Content == nil {
				t.Fatalf("handler's value mutated")
			}
		})
	}
	p, in, req := elicitForm(t, v1125, deploySchema)
	_, r := p.After(in, req, (*messages.ElicitResult)(nil))
	wantRefusal(t, r, codeInt, "")
}

// After works when the caller passes a fresh Input (no cached form): the
// schema is parsed again from the request.
func TestFormAfterFreshInput(t *testing.T) {
	p, _, req := elicitForm(t, v1125, deploySchema)
	fresh := input(messages.MethodElicit, v1125, messages.EraLegacy, "")
	res, r := p.After(fresh, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"replicas": 4}})
	wantOK(t, r)
	if got := mustJSON(t, res); got != `{"action":"accept","content":{"dryRun":true,"region":"eu-1","replicas":4,"tags":["a"]}}` {
		t.Fatalf("wire %s", got)
	}
	_, r = p.After(fresh, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"replicas": 9}})
	wantRefusal(t, r, codeInt, "")
	// Without the request there is nothing to validate against.
	_, r = p.After(input(messages.MethodElicit, v1125, messages.EraLegacy, ""), nil, &messages.ElicitResult{Action: "accept"})
	wantRefusal(t, r, codeInt, "")
}

func TestFormFieldsSensitive(t *testing.T) {
	schema := props(`"username":{"type":"string"},
		"password":{"type":"string"},
		"apiKey":{"type":"string"},
		"x":{"type":"string","title":"Your API key"},
		"y":{"type":"string","description":"The card number on the front"},
		"z":{"type":"string","format":"password"},
		"w":{"type":"string","writeOnly":true},
		"spinner":{"type":"boolean","title":"Show spinner"},
		"opinion":{"type":"string","description":"Your opinion, please"},
		"pin":{"type":"integer"}`)
	_, _, req := elicitForm(t, v1125, schema)
	got := req.(*messages.ElicitationRequest).Fields
	want := map[string]bool{"username": false, "password": true, "apiKey": true, "x": true, "y": true, "z": true, "w": true, "spinner": false, "opinion": false, "pin": true}
	if len(got) != len(want) {
		t.Fatalf("Fields = %v", got)
	}
	for name, s := range want {
		if got[name].SensitiveSuspected != s {
			t.Errorf("%s: SensitiveSuspected = %v, want %v", name, got[name].SensitiveSuspected, s)
		}
	}
}

func TestSensitiveSuspected(t *testing.T) {
	yes := []string{
		"password", "Password", "PASSWORD", "userPassword", "user_password", "user-password", "new passwords",
		"passwd", "pwd", "passphrase", "passcode", "secret", "clientSecret", "client_secret", "secrets",
		"token", "accessToken", "auth-token", "GITHUB_TOKEN", "apikey", "apiKey", "api_key", "api-key", "API Key", "APIKey", "OPENAI_API_KEY",
		"private key", "privateKey", "PRIVATE_KEY", "privatekey", "accessKey", "aws_access_key_id",
		"credential", "credentials", "ssn", "SSN", "your SSN", "social security number",
		"credit card", "creditCard", "credit_card_number", "card number", "cardNumber", "cvv", "CVV2", "cvc", "security code",
		"pin", "PIN", "pinCode", "userPIN", "Enter your PIN", "otp", "IBAN",
	}
	no := []string{
		"", "username", "email", "name", "spinner", "opinion", "pinned", "shipping", "pineapple", "tokenize", "tokens",
		"max tokens", "keyboard", "key", "secretary", "passport", "compass", "bypass", "card", "credit", "apiary",
		"description", "Keep it private", "access level", "address", "token_count"[:5] + "s",
	}
	for _, s := range yes {
		if !SensitiveSuspected(s, "", "", "") {
			t.Errorf("%q not flagged", s)
		}
		if !SensitiveSuspected("f", s, "", "") || !SensitiveSuspected("f", "", s, "") {
			t.Errorf("%q not flagged as title/description", s)
		}
	}
	for _, s := range no {
		if SensitiveSuspected(s, s, s, "") {
			t.Errorf("%q flagged", s)
		}
	}
	if !SensitiveSuspected("f", "", "", "Password") || SensitiveSuspected("f", "", "", "email") {
		t.Errorf("format hint")
	}
}

func TestParseFormNeverFetches(t *testing.T) {
	// References are refused; nothing is compiled or loaded.
	for _, s := range []string{
		props(`"s":{"$ref":"https://evil.example/s.json"}`),
		props(`"s":{"type":"string","$dynamicRef":"#x"}`),
		`{"$ref":"file:///etc/passwd","type":"object","properties":{}}`,
	} {
		if _, err := ParseForm(v1125, json.RawMessage(s)); err == nil {
			t.Errorf("accepted %s", s)
		}
	}
	// $schema naming a remote meta-schema is not fetched either.
	f, err := ParseForm(v1125, json.RawMessage(`{"$schema":"https://evil.example/meta.json","type":"object","properties":{"a":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Complete(map[string]any{"a": "x"}); err != nil {
		t.Fatal(err)
	}
	if d := f.Defaults(); len(d) != 0 {
		t.Fatalf("defaults %v", d)
	}
}

func TestFormErrorNeverEchoesValue(t *testing.T) {
	schema := props(`"pin":{"type":"string","maxLength":4},"mail":{"type":"string","format":"email"}`)
	for _, c := range []struct {
		content map[string]any
		msg     string
	}{
		{map[string]any{"pin": "hunter2-secret"}, `Internal error: elicitation answer does not fit the schema: field "pin" fails "maxLength"`},
		{map[string]any{"mail": "hunter2-secret"}, `Internal error: elicitation answer does not fit the schema: field "mail" fails "format"`},
		{map[string]any{"pin": 1234}, `Internal error: elicitation answer does not fit the schema: field "pin" fails "type"`},
		// What encoding/json says about content it cannot encode may quote
		// the value: only a type is named.
		{map[string]any{"pin": json.Number("hunter2-secret")}, `Internal error: elicitation answer does not fit the schema: content cannot be encoded as JSON`},
		{map[string]any{"pin": secretMarshaler("hunter2-secret")}, `Internal error: elicitation answer does not fit the schema: content cannot be encoded as JSON`},
	} {
		p, in, req := elicitForm(t, v1125, schema)
		_, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: c.content})
		wantRefusal(t, r, codeInt, c.msg)
	}
}

// secretMarshaler fails to encode with its value in the error.
type secretMarshaler string

func (s secretMarshaler) MarshalJSON() ([]byte, error) {
	return nil, errors.New("cannot encode " + string(s))
}
