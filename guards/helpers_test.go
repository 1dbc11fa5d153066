package guards

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/conduitmcp/conduit/messages"
)

// fixedClock is a clock tests move by hand.
type fixedClock struct{ t time.Time }

func (c *fixedClock) now() time.Time { return c.t }

// newFixed returns a Pipeline whose limiter sees the time of the returned
// clock only.
func newFixed(cfg Config) (*Pipeline, *fixedClock) {
	p := New(cfg)
	c := &fixedClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p.now = c.now
	return p, c
}

func input(method, version string, era messages.Era, params string) *Input {
	in := &Input{
		Method:        method,
		Version:       version,
		CallsInFlight: 1,
		Context:       messages.RequestContext{Client: "test", ServerID: "srv", Era: era},
	}
	if params != "" {
		in.Params = json.RawMessage(params)
	}
	return in
}

func legacyIn(method, params string) *Input {
	return input(method, messages.Version20251125, messages.EraLegacy, params)
}

// wantRefusal checks r's code and, when msg is not "", its exact message.
func wantRefusal(t *testing.T, r *Refusal, code int, msg string) {
	t.Helper()
	if r == nil {
		t.Fatalf("want refusal %d %q, got none", code, msg)
	}
	if r.Err == nil {
		t.Fatalf("refusal without error")
	}
	if r.Err.Code != code {
		t.Fatalf("code = %d (%q), want %d", r.Err.Code, r.Err.Message, code)
	}
	if msg != "" && r.Err.Message != msg {
		t.Fatalf("message = %q, want %q", r.Err.Message, msg)
	}
	if r.Outcome != OutcomeRefused && r.Outcome != OutcomeRateLimited {
		t.Fatalf("outcome = %q", r.Outcome)
	}
}

func wantOK(t *testing.T, r *Refusal) {
	t.Helper()
	if r != nil {
		t.Fatalf("unexpected refusal: %d %q", r.Err.Code, r.Err.Message)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const (
	okSampling  = `{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}`
	okForm      = `{"message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`
	v0618       = messages.Version20250618
	v1125       = messages.Version20251125
	v0728       = messages.Version20260728
	codeInvalid = messages.CodeInvalidParams
	codeInt     = messages.CodeInternalError
)
