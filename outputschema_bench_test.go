package conduit

import (
	"encoding/json"
	"strings"
	"testing"
)

// The cost CallTool adds to a call of a tool with an outputSchema: the
// depth scan, decoding structuredContent for the validator and validating
// it against the compiled schema (compiled once per tool and listing, not
// per call).
func BenchmarkOutputSchemaCheck(b *testing.B) {
	small := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"name":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["n","name"]}`)
	for _, tc := range []struct {
		name   string
		schema json.RawMessage
		value  string
	}{
		{"small", small, `{"n":3,"name":"ada","tags":["a","b","c"]}`},
		{"100 items", json.RawMessage(`{"type":"object","properties":{"rows":{"type":"array","items":` + string(small) + `}}}`),
			`{"rows":[` + strings.TrimSuffix(strings.Repeat(`{"n":3,"name":"ada","tags":["a","b","c"]},`, 100), ",") + `]}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := compileOutputSchema(tc.schema)
			if err != nil {
				b.Fatal(err)
			}
			raw := []byte(tc.value)
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if err := validateValue(s, raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("compile small", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := compileOutputSchema(small); err != nil {
				b.Fatal(err)
			}
		}
	})
}
