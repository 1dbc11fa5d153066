package messages

import "testing"

// Frames of the scripted server the actors_test benchmarks use: a legacy
// sampling request, a tools/call result, and an MRTR input_required result.
var benchFrames = []struct{ name, frame string }{
	{"sampling-request", `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}}`},
	{"tool-result", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}]}}`},
	{"input-required", `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"s1"}}`},
}

func BenchmarkDecode(b *testing.B) {
	for _, f := range benchFrames {
		data := []byte(f.frame)
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMembers(b *testing.B) {
	for _, f := range benchFrames {
		data := []byte(f.frame)
		b.Run(f.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := Members(data); !ok {
					b.Fatal("not split")
				}
			}
		})
	}
}
