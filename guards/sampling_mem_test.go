package guards

import (
	"fmt"
	"testing"

	"github.com/conduitmcp/conduit/messages"
)

// TestSamplingRequestIsOneAllocation: a sampling request of one message
// with one content block is decoded into one allocation (the request, its
// message and its block together) beside the block's own strings; before
// samplingMem the message slice and the block slice were two more.
func TestSamplingRequestIsOneAllocation(t *testing.T) {
	p := benchPipeline()
	tmpl := legacyIn(messages.MethodCreateMessage, benchSampling)
	got := testing.AllocsPerRun(100, func() {
		in := *tmpl
		if _, r := p.Before(&in); r != nil {
			t.Fatal(r)
		}
	})
	if got != 3 {
		t.Fatalf("Before(sampling) made %v allocations, want 3", got)
	}
}

// TestSamplingRequestsShareNothing: the storage lent to the first message
// is its own; a second message's block, an array of blocks, and a
// handler's append get storage of their own.
func TestSamplingRequestsShareNothing(t *testing.T) {
	p := benchPipeline()
	in := legacyIn(messages.MethodCreateMessage, `{"messages":[`+
		`{"role":"user","content":{"type":"text","text":"a"}},`+
		`{"role":"assistant","content":{"type":"text","text":"b"}},`+
		`{"role":"user","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]}],"maxTokens":5}`)
	v, r := p.Before(in)
	if r != nil {
		t.Fatal(r)
	}
	req := v.(*messages.SamplingRequest)
	var texts []string
	for _, m := range req.Params.Messages {
		for _, b := range m.Content.Blocks {
			texts = append(texts, b.Text)
		}
	}
	if got := fmt.Sprint(texts); got != "[a b c d]" {
		t.Fatalf("texts %s, want [a b c d]", got)
	}
	first := req.Params.Messages[0].Content.Blocks
	_ = append(first, messages.ContentBlock{Type: "text", Text: "x"})
	if got := req.Params.Messages[1].Content.Blocks[0].Text; got != "b" {
		t.Fatalf("an append to the first message's blocks changed the second's: %q", got)
	}
	if cap(first) != 1 || cap(req.Params.Messages) != 3 && cap(req.Params.Messages) != 4 {
		t.Fatalf("caps %d, %d", cap(first), cap(req.Params.Messages))
	}
}
