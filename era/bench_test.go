package era

import (
	"encoding/json"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

// The second round of an MRTR tools/call as the scripted benchmark server
// sees it: the tool's params, the answer to one form elicitation, the
// request state, and the _meta of a client declaring form elicitation.
var (
	benchParams   = json.RawMessage(`{"name":"ask","arguments":{"topic":"benchmarks"}}`)
	benchAnswer   = json.RawMessage(`{"user_name":{"action":"accept","content":{"name":"Ada"}}}`)
	benchState    = json.RawMessage(`"s1"`)
	benchComplete = json.RawMessage(`{"resultType":"complete","content":[{"type":"text","text":"done"}]}`)
	benchInput    = json.RawMessage(`{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"s1"}`)
)

// BenchmarkWithMeta is one round's params as a modern call writes them:
// the request's own (read once per call), the round's members and a fresh
// _meta whose session part is encoded once per session.
func BenchmarkWithMeta(b *testing.B) {
	d := Declared{ElicitModes: []string{messages.ModeForm}}
	meta, err := NewMeta(ModernVersions[0], d.ModernCapabilities(ModernVersions[0]), messages.Implementation{Name: "conduit", Version: "0.1.0"})
	if err != nil {
		b.Fatal(err)
	}
	p, err := ParseParams(benchParams)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := meta.Request("info", nil)
		if err != nil {
			b.Fatal(err)
		}
		p.With([]Member{{Key: "inputResponses", Value: benchAnswer}, {Key: "requestState", Value: benchState}}, m)
	}
}

// BenchmarkResultType classifies a complete result and an input_required
// one.
func BenchmarkResultType(b *testing.B) {
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
	}{{"complete", benchComplete}, {"input_required", benchInput}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ResultType(tc.raw, messages.MethodCallTool, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReadInputRequired reads an input_required result: with the
// scan, and with json.Unmarshal as it was read before.
func BenchmarkReadInputRequired(b *testing.B) {
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadInputRequired(benchInput); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := readInputRequiredByUnmarshal(benchInput); err != nil {
				b.Fatal(err)
			}
		}
	})
}
