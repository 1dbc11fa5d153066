package guards

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/conduitmcp/conduit/internal/testpeer"
	"github.com/conduitmcp/conduit/messages"
)

// fastSamplingInputs and fastElicitInputs are params the fast decoders
// read: the common ones, every member set.
var (
	fastSamplingInputs = []string{
		benchSampling, okSampling, `{"messages":[],"maxTokens":5}`,
		`{"messages":[` + userMsg + `,{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"a":1}},{"type":"text","text":"x"}]}],"maxTokens":9}`,
		`{"messages":[{"role":"user","content":[{"type":"tool_result","toolUseId":"t1","content":[{"type":"text","text":"r"}],"structuredContent":{"a":1},"isError":true,"_meta":{"m":1}}],"_meta":null}],"maxTokens":1}`,
		`{"messages":[{"role":"user","content":{"type":"image","data":"AAA=","mimeType":"image/png","annotations":{"a":1}}}],"maxTokens":1}`,
		`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"file:///a"},"uri":"x","isError":false}}],"maxTokens":1}`,
		`{"messages":[{"role":"user","content":{"type":"text","text":"caf\u00e9 \"q\" \n \ud83d\ude00 \ud800"}}],"maxTokens":1}`,
		"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"bad \xff utf8\"}}],\"maxTokens\":1}",
		`{"messages":[` + userMsg + `],"maxTokens":100,"systemPrompt":"s","includeContext":"thisServer","temperature":0.5,"stopSequences":["a","b"],"modelPreferences":{"hints":[{"name":"x"}]},"metadata":{},"tools":[],"toolChoice":{"mode":"auto"},"task":{"ttl":1},"_meta":{"k":"v"}}`,
		`{"messages":[` + userMsg + `],"maxTokens":100,"tools":null,"toolChoice":null,"temperature":null,"stopSequences":null,"systemPrompt":null,"_meta":null}`,
		`{"messages":[` + userMsg + `],"maxTokens":100,"stopSequences":[]}`,
		`{"messages":[` + userMsg + `],"maxTokens":100,"temperature":1e-999}`,
		`{"messages":[` + userMsg + `],"maxTokens":99999999999999999999999999999}`,
		`{"messages":[` + userMsg + `],"maxTokens":"100"}`,
		` { "messages" : [ { "role" : "user" , "content" : { "type" : "text" , "text" : "hi" } } ] , "maxTokens" : 100 } `,
		`{"messages":[` + userMsg + `],"maxTokens":1,"other":{"deep":[[[[[[[[[[{}]]]]]]]]]]}}`,
	}
	fastElicitInputs = []string{
		benchForm, okForm, `{"mode":null,"message":"m"}`, `{"mode":"","message":"m"}`,
		`{"mode":"form","message":"m","requestedSchema":null}`,
		`{"mode":"url","message":"m","url":"https://example.com/a","elicitationId":"e1","task":{},"_meta":{"a":1}}`,
		`{"message":"caf\u00e9","requestedSchema":{"type":"object","properties":{}}}`,
	}
)

// decodeInputs are sampling and elicitation params, common and odd: every
// member of each type and of the wrong type, null, repeated keys, keys that
// match a field only when case is ignored (the Kelvin sign folds to k),
// escaped keys, huge numbers, deep nesting, malformed text.
var decodeInputs = append(append([]string{
	benchSampling, benchForm, okSampling, okForm, ``, `null`, ` null `, `{}`, `[]`, `"x"`, `{`, `{"messages":[]}`,
	`{"messages":[` + userMsg + `],"maxTokens":100,"stopSequences":[null,"a"]}`,
	`{"messages":[` + userMsg + `],"maxTokens":100,"stopSequences":[1]}`,
	`{"messages":[` + userMsg + `],"maxTokens":100,"temperature":1e999}`,
	`{"messages":[` + userMsg + `],"maxTokens":100,"temperature":-0}`,
	`{"messages":[` + userMsg + `],"maxTokens":100,"temperature":"0.5"}`,
	`{"messages":[` + userMsg + `],"maxTokens":1.5e3}`,
	`{"messages":[` + userMsg + `],"maxTokens":null}`,
	`{"messages":[` + userMsg + `]}`,
	`{"messages":null,"maxTokens":1}`,
	`{"messages":{},"maxTokens":1}`,
	`{"messages":[null],"maxTokens":1}`,
	`{"messages":[1],"maxTokens":1}`,
	`{"messages":[{"role":1}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":null}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":"hi"}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":[null]}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":[]}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":{"type":"text","isError":"yes"}}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":{"type":"text","text":5}}],"maxTokens":1}`,
	`{"messages":[` + userMsg + `],"maxTokens":1,"maxTokens":2}`,
	`{"messages":[` + userMsg + `],"messages":[],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":{"type":"text"},"_meta":{"a":1}}],"messages":[{"role":"assistant","content":{"type":"text"}}],"maxTokens":1}`,
	`{"messages":[{"role":"user","role":"assistant","content":{"type":"text"}}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":{"type":"text","type":"image"}}],"maxTokens":1}`,
	`{"Messages":[` + userMsg + `],"maxTokens":1}`,
	`{"messages":[` + userMsg + `],"MaxTokens":"x","maxTokens":1}`,
	`{"messages":[` + userMsg + `],"maxTo` + "\u212a" + `ens":"x","maxTokens":1}`,
	`{"messages":[` + userMsg + `],"maxTokens":1,"TOOLS":[1]}`,
	`{"messages":[` + userMsg + `],"maxTokens":1,"tools":[1],"Tools":null}`,
	`{"messages":[{"ROLE":"user","content":{"type":"text"}}],"maxTokens":1}`,
	`{"messages":[{"role":"user","content":{"Type":"text"}}],"maxTokens":1}`,
	`{"m\u0065ssages":[` + userMsg + `],"maxTokens":1}`,
	`{"messages":[` + userMsg + `],"maxTokens":1,"é":1,"other":{"deep":[[[[[[[[[[{}]]]]]]]]]]}}`,
	`{"messages":[` + userMsg + `],"maxTokens":1,"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"messages":[` + userMsg + `],"maxTokens":1}x`,
	`{"mode":1,"message":"m"}`,
	`{"mode":"form","mode":"url","message":"m"}`,
	`{"Mode":"url","message":"m"}`,
	`{"message":"m","requestedSchema":{"type":"object"},"requestedschema":{}}`,
	`{"message":["m"]}`,
	`{"a\u0062":1}`, `[1]`, ` null`, `nul`, `{} {}`, "\t{\"é\":1}\n",
}, fastSamplingInputs...), fastElicitInputs...)

// TestFastDecodersAreJSON holds the fast decoders to the general path on
// decodeInputs: where a fast decoder answers, the general path answers the
// same, and the common inputs are read by the fast decoders.
func TestFastDecodersAreJSON(t *testing.T) {
	for _, in := range decodeInputs {
		checkFastDecoders(t, in)
	}
	for _, in := range fastSamplingInputs {
		if _, ok := fastSampling(json.RawMessage(in), nil, false); !ok {
			t.Errorf("fastSampling(%s) did not answer", in)
		}
	}
	for _, in := range fastElicitInputs {
		if _, ok := fastElicit(json.RawMessage(in), false); !ok {
			t.Errorf("fastElicit(%s) did not answer", in)
		}
	}
}

// TestFastDecodersReadEveryField: every field of the params and of a
// sampling message, with a value of each kind, is read as the general path
// reads it or left to it.
func TestFastDecodersReadEveryField(t *testing.T) {
	for _, m := range testpeer.JSONMembers(t, reflect.TypeFor[messages.CreateMessageParams]()) {
		checkFastDecoders(t, `{"messages":[],"maxTokens":1,`+m+"}")
	}
	for _, m := range testpeer.JSONMembers(t, reflect.TypeFor[messages.SamplingMessage]()) {
		checkFastDecoders(t, `{"messages":[{"role":"user","content":{"type":"text"},`+m+`}],"maxTokens":1}`)
	}
	for _, m := range testpeer.JSONMembers(t, reflect.TypeFor[messages.ElicitParams]()) {
		checkFastDecoders(t, `{"message":"m",`+m+"}")
	}
}

// FuzzFastDecodersAreJSON is TestFastDecodersAreJSON on arbitrary params.
func FuzzFastDecodersAreJSON(f *testing.F) {
	for _, in := range decodeInputs {
		f.Add(in)
	}
	f.Fuzz(checkFastDecoders)
}

func checkFastDecoders(t *testing.T, in string) {
	raw := json.RawMessage(in)
	if _, r := rawFields(raw); !reflect.DeepEqual(checkObject(raw), r) {
		t.Fatalf("checkObject(%q) = %v, splitting says %v", in, checkObject(raw), r)
	}
	// Params that are valid JSON are decoded as a decoded frame's are
	// (Input.ParamsValid: not checked again); others are checked.
	valid := json.Valid(raw)
	if got, ok := fastSampling(raw, &samplingMem{}, valid); ok {
		want, r := decodeSamplingJSON(raw)
		if r != nil {
			t.Fatalf("fastSampling(%q) answered, encoding/json refuses: %s", in, r.Err.Message)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastSampling(%q)\n got %+v\nwant %+v", in, got, want)
		}
	}
	if got, ok := fastElicit(raw, valid); ok {
		want, r := decodeElicitJSON(raw)
		if r != nil {
			t.Fatalf("fastElicit(%q) answered, encoding/json refuses: %s", in, r.Err.Message)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("fastElicit(%q)\n got %+v\nwant %+v", in, got, want)
		}
	}
}
