package messages

import (
	"encoding/json"
	"testing"
)

// A form field's JSON uses the schema's keyword names and leaves out what
// the schema did not give; false and zero bounds stay.
func TestFormFieldJSON(t *testing.T) {
	zero, five, half := 0, 5, 0.5
	cases := []struct {
		field FormField
		want  string
	}{
		{FormField{Name: "ok", Kind: FieldBoolean, Default: false},
			`{"name":"ok","kind":"boolean","default":false,"required":false,"sensitive":false}`},
		{FormField{Name: "plan", Kind: FieldSelect, Title: "Plan", Options: []FieldOption{{Value: "free"}, {Value: "pro", Title: "Pro"}}, Default: "free", Required: true},
			`{"name":"plan","kind":"select","title":"Plan","options":[{"value":"free"},{"value":"pro","title":"Pro"}],"default":"free","required":true,"sensitive":false}`},
		{FormField{Name: "pin", Kind: FieldString, Format: "password", MinLength: &zero, MaxLength: &five, Sensitive: true},
			`{"name":"pin","kind":"string","format":"password","minLength":0,"maxLength":5,"required":false,"sensitive":true}`},
		{FormField{Name: "r", Kind: FieldNumber, Minimum: &half, Default: json.Number("1.50")},
			`{"name":"r","kind":"number","minimum":0.5,"default":1.50,"required":false,"sensitive":false}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.field)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("got  %s\nwant %s", b, c.want)
		}
	}
	b, _ := json.Marshal(&FieldError{Field: "age", Reason: ReasonMaximum, Message: `field "age" fails "maximum"`})
	if want := `{"field":"age","reason":"maximum","message":"field \"age\" fails \"maximum\""}`; string(b) != want {
		t.Errorf("FieldError JSON %s, want %s", b, want)
	}
}
