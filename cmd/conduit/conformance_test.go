package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// The conformance handler's answer has a value of each kind for every field
// without a default, and fits the form.
func TestConformanceFillForm(t *testing.T) {
	schema := `{"type":"object","properties":{
		"name":{"type":"string"},"count":{"type":"integer","minimum":3},"ratio":{"type":"number"},"ok":{"type":"boolean"},
		"plan":{"type":"string","oneOf":[{"const":"pro","title":"Pro"},{"const":"free","title":"Free"}]},
		"color":{"type":"string","enum":["red","blue"]},
		"tags":{"type":"array","items":{"anyOf":[{"const":"a","title":"A"}]}},
		"kept":{"type":"string","default":"d"}},"required":["name","count"]}`
	form, err := guards.ParseForm(messages.Version20251125, json.RawMessage(schema))
	if err != nil {
		t.Fatal(err)
	}
	got := fillForm(form.FormFields())
	want := map[string]any{"name": "conformance", "count": 3.0, "ratio": 1.0, "ok": true, "plan": "pro", "color": "red", "tags": []string{"a"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fillForm = %#v, want %#v", got, want)
	}
	if _, err := form.Complete(got); err != nil {
		t.Fatal(err)
	}
}
