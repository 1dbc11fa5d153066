package guards

import (
	"testing"

	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/messages"
)

// The benchmarks below run the guards on the requests and answers of the
// scripted server the actors_test benchmarks use: one text sampling
// message, one single-field form. The budget is lifted so every op runs
// every check.

const (
	benchSampling = `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}`
	benchForm     = `{"mode":"form","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`
)

func benchPipeline() *Pipeline { return New(Config{InputRate: rate.Inf}) }

func BenchmarkBeforeSampling(b *testing.B) {
	p := benchPipeline()
	tmpl := legacyIn(messages.MethodCreateMessage, benchSampling)
	b.ReportAllocs()
	for b.Loop() {
		in := *tmpl
		if _, r := p.Before(&in); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkAfterSampling(b *testing.B) {
	p := benchPipeline()
	in := legacyIn(messages.MethodCreateMessage, benchSampling)
	req, r := p.Before(in)
	if r != nil {
		b.Fatal(r)
	}
	res := &messages.CreateMessageResult{Role: "assistant", Content: messages.Text("hi"), Model: "test"}
	b.ReportAllocs()
	for b.Loop() {
		if _, r := p.After(in, req, res); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkBeforeElicitationForm(b *testing.B) {
	p := benchPipeline()
	tmpl := legacyIn(messages.MethodElicit, benchForm)
	b.ReportAllocs()
	for b.Loop() {
		in := *tmpl
		if _, r := p.Before(&in); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkAfterElicitationForm(b *testing.B) {
	p := benchPipeline()
	in := legacyIn(messages.MethodElicit, benchForm)
	req, r := p.Before(in)
	if r != nil {
		b.Fatal(r)
	}
	res := &messages.ElicitResult{Action: messages.ActionAccept, Content: map[string]any{"name": "Ada"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, r := p.After(in, req, res); r != nil {
			b.Fatal(r)
		}
	}
}

func BenchmarkBeforeRoots(b *testing.B) {
	p := benchPipeline()
	tmpl := legacyIn(messages.MethodListRoots, `{}`)
	b.ReportAllocs()
	for b.Loop() {
		in := *tmpl
		if _, r := p.Before(&in); r != nil {
			b.Fatal(r)
		}
	}
}
