package guards

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/conduitmcp/conduit/messages"
)

func TestBudgetBurstThenRefusal(t *testing.T) {
	cases := []struct {
		method, params string
		cfg            Config
		code           int
		msg            string
	}{
		{messages.MethodCreateMessage, okSampling, Config{}, -1, "Sampling rejected: rate limited"},
		{messages.MethodCreateMessage, okSampling, Config{Sampling: SamplingConfig{RejectionCode: -32050}}, -32050, "Sampling rejected: rate limited"},
		{messages.MethodElicit, okForm, Config{}, -32000, "rate limited"},
		{messages.MethodListRoots, ``, Config{}, -32000, "rate limited"},
	}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) {
			p, clk := newFixed(c.cfg)
			for i := range 20 {
				if _, r := p.Before(legacyIn(c.method, c.params)); r != nil {
					t.Fatalf("request %d refused: %v", i+1, r.Err)
				}
			}
			_, r := p.Before(legacyIn(c.method, c.params))
			wantRefusal(t, r, c.code, c.msg)
			if r.Outcome != OutcomeRateLimited {
				t.Fatalf("outcome = %q, want %q", r.Outcome, OutcomeRateLimited)
			}
			// 10/s: 100 ms later exactly one more is allowed.
			clk.t = clk.t.Add(100 * time.Millisecond)
			_, r = p.Before(legacyIn(c.method, c.params))
			wantOK(t, r)
			_, r = p.Before(legacyIn(c.method, c.params))
			wantRefusal(t, r, c.code, c.msg)
		})
	}
}

// A budget lifted with rate.Inf refuses nothing and reads no clock; a
// limited one reads it per request.
func TestUnlimitedBudgetReadsNoClock(t *testing.T) {
	for _, c := range []struct {
		rate  rate.Limit
		reads int
	}{{rate.Inf, 0}, {rate.Limit(1e9), 1000}} {
		p := New(Config{InputRate: c.rate})
		reads := 0
		p.now = func() time.Time { reads++; return time.Now() }
		for i := range 1000 {
			if _, r := p.Before(legacyIn(messages.MethodCreateMessage, okSampling)); r != nil {
				t.Fatalf("rate %v: request %d refused: %v", c.rate, i+1, r.Err)
			}
		}
		if reads != c.reads {
			t.Fatalf("rate %v: clock read %d times, want %d", c.rate, reads, c.reads)
		}
	}
}

// The budget is checked before anything else: an over-budget request with
// bad params is refused as rate limited, not as invalid.
func TestBudgetCheckedFirst(t *testing.T) {
	p, _ := newFixed(Config{InputBurst: 1})
	_, r := p.Before(legacyIn(messages.MethodElicit, okForm))
	wantOK(t, r)
	_, r = p.Before(legacyIn(messages.MethodElicit, `{"mode":"bogus"}`))
	wantRefusal(t, r, -32000, "rate limited")
	_, r = p.Before(legacyIn(messages.MethodCreateMessage, `{}`))
	wantRefusal(t, r, -1, "Sampling rejected: rate limited")
	// Unknown methods do not spend budget and get -32601.
	_, r = p.Before(legacyIn("tools/list", `{}`))
	wantRefusal(t, r, messages.CodeMethodNotFound, "Method not found: tools/list")
}

// All three methods share one budget per server.
func TestBudgetShared(t *testing.T) {
	p, _ := newFixed(Config{})
	for range 10 {
		_, r := p.Before(legacyIn(messages.MethodCreateMessage, okSampling))
		wantOK(t, r)
		_, r = p.Before(legacyIn(messages.MethodElicit, okForm))
		wantOK(t, r)
	}
	_, r := p.Before(legacyIn(messages.MethodListRoots, ``))
	wantRefusal(t, r, -32000, "rate limited")
}

func TestBudgetCustomRate(t *testing.T) {
	p, clk := newFixed(Config{InputRate: 1, InputBurst: 2})
	for range 2 {
		_, r := p.Before(legacyIn(messages.MethodListRoots, ``))
		wantOK(t, r)
	}
	_, r := p.Before(legacyIn(messages.MethodListRoots, ``))
	wantRefusal(t, r, -32000, "rate limited")
	clk.t = clk.t.Add(999 * time.Millisecond)
	_, r = p.Before(legacyIn(messages.MethodListRoots, ``))
	wantRefusal(t, r, -32000, "rate limited")
	clk.t = clk.t.Add(time.Millisecond)
	_, r = p.Before(legacyIn(messages.MethodListRoots, ``))
	wantOK(t, r)
}

func TestDefaults(t *testing.T) {
	c := Config{}.WithDefaults()
	if c.InputRate != 10 || c.InputBurst != 20 || c.Logger == nil {
		t.Fatalf("budget defaults: %+v", c)
	}
	s := c.Sampling
	if s.MaxTokens != 4096 || s.MaxToolIterations != 5 || s.RejectionCode != -1 || s.Context || s.AllowIdle || s.Tools {
		t.Fatalf("sampling defaults: %+v", s)
	}
	if e := c.Elicitation; len(e.Modes) != 1 || e.Modes[0] != "form" || e.Origin != "" {
		t.Fatalf("elicitation defaults: %+v", e)
	}
	if got := New(Config{InputRate: rate.Inf}).Config().InputRate; got != rate.Inf {
		t.Fatalf("rate.Inf kept? %v", got)
	}
}

// One Pipeline used from many goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	p := New(Config{InputRate: rate.Inf, Elicitation: ElicitationConfig{Modes: []string{"form", "url"}}})
	schema := `{"message":"m","requestedSchema":{"type":"object","properties":{"n":{"type":"integer","default":3},"s":{"type":"string","minLength":1}},"required":["s"]}}`
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				in := legacyIn(messages.MethodElicit, schema)
				req, r := p.Before(in)
				if r != nil {
					t.Errorf("before: %v", r.Err)
					return
				}
				res, r := p.After(in, req, &messages.ElicitResult{Action: "accept", Content: map[string]any{"s": "x"}})
				if r != nil {
					t.Errorf("after: %v", r.Err)
					return
				}
				if got := res.(*messages.ElicitResult).Content["n"]; got == nil {
					t.Errorf("default not filled")
				}
				in = legacyIn(messages.MethodListRoots, ``)
				req, _ = p.Before(in)
				_, _ = p.After(in, req, &messages.ListRootsResult{Roots: []messages.Root{{URI: "http://x/"}, {URI: "file:///a/../b"}}})
				in = legacyIn(messages.MethodCreateMessage, okSampling)
				if _, r := p.Before(in); r != nil {
					t.Errorf("sampling: %v", r.Err)
				}
				_ = g + i
			}
		}()
	}
	wg.Wait()
	if got := p.RootsWithheld(); got != 16*50 {
		t.Fatalf("RootsWithheld = %d, want %d", got, 16*50)
	}
}
