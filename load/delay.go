package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Delay is a distribution of delays, such as how long a person takes to
// answer a form. The zero value is no delay.
//
// In JSON (an answers file's "delay") it is a Go duration for a fixed delay,
// or an object with one key:
//
//	"2s"
//	{"fixed": "2s"}
//	{"uniform": ["1s", "4s"]}                      between min and max
//	{"normal": {"mean": "2s", "stddev": "500ms"}}  cut at zero
//	{"samples": ["800ms", "1.2s", "3s"]}           one of them, equally likely
type Delay struct {
	kind    string // "", "fixed", "uniform", "normal", "samples"
	a, b    time.Duration
	samples []time.Duration
}

// Fixed is always d. Fixed(0) is the zero Delay.
func Fixed(d time.Duration) Delay {
	if d == 0 {
		return Delay{}
	}
	return Delay{kind: "fixed", a: d}
}

// Uniform is uniformly distributed in [lo, hi].
func Uniform(lo, hi time.Duration) Delay { return Delay{kind: "uniform", a: lo, b: hi} }

// Normal is normally distributed around mean with the standard deviation
// stddev; a negative draw is zero.
func Normal(mean, stddev time.Duration) Delay { return Delay{kind: "normal", a: mean, b: stddev} }

// Samples is one of ds, each equally likely: a distribution measured from
// real answers.
func Samples(ds ...time.Duration) Delay {
	return Delay{kind: "samples", samples: append([]time.Duration(nil), ds...)}
}

// IsZero reports whether d never waits.
func (d Delay) IsZero() bool { return d.kind == "" }

// Sample draws one delay. It is safe for concurrent use.
func (d Delay) Sample() time.Duration {
	switch d.kind {
	case "fixed":
		return d.a
	case "uniform":
		if d.b <= d.a {
			return d.a
		}
		return d.a + rand.N(d.b-d.a+1)
	case "normal":
		return max(0, d.a+time.Duration(rand.NormFloat64()*float64(d.b)))
	case "samples":
		if len(d.samples) == 0 {
			return 0
		}
		return d.samples[rand.N(len(d.samples))]
	}
	return 0
}

// Wait sleeps for one sampled delay, or returns ctx's error if ctx ends
// first (a handler given up on stops waiting).
func (d Delay) Wait(ctx context.Context) error {
	n := d.Sample()
	if n <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(n)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// String describes the distribution in the JSON form's words.
func (d Delay) String() string {
	switch d.kind {
	case "fixed":
		return d.a.String()
	case "uniform":
		return fmt.Sprintf("uniform %s–%s", d.a, d.b)
	case "normal":
		return fmt.Sprintf("normal mean %s stddev %s", d.a, d.b)
	case "samples":
		return fmt.Sprintf("%d samples", len(d.samples))
	}
	return "0s"
}

type delayJSON struct {
	Fixed   *string  `json:"fixed,omitempty"`
	Uniform []string `json:"uniform,omitempty"`
	Normal  *struct {
		Mean   string `json:"mean"`
		StdDev string `json:"stddev"`
	} `json:"normal,omitempty"`
	Samples []string `json:"samples,omitempty"`
}

// ParseDelay reads a Delay from its JSON form; empty input or null is no
// delay. Every duration must be a Go duration and not negative.
func ParseDelay(raw []byte) (Delay, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return Delay{}, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Delay{}, err
		}
		if s == "" {
			return Delay{}, nil
		}
		d, err := duration(s)
		return Fixed(d), err
	}
	var j delayJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Delay{}, fmt.Errorf(`want a duration such as "2s" or one of {"fixed"}, {"uniform"}, {"normal"}, {"samples"}: %v`, err)
	}
	n := 0
	for _, set := range []bool{j.Fixed != nil, j.Uniform != nil, j.Normal != nil, j.Samples != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return Delay{}, errors.New(`give exactly one of "fixed", "uniform", "normal", "samples"`)
	}
	switch {
	case j.Fixed != nil:
		d, err := duration(*j.Fixed)
		return Fixed(d), err
	case j.Uniform != nil:
		ds, err := durations(j.Uniform)
		if err != nil {
			return Delay{}, fmt.Errorf("uniform: %v", err)
		}
		if len(ds) != 2 || ds[1] < ds[0] {
			return Delay{}, errors.New(`uniform: want ["MIN", "MAX"] with MIN <= MAX`)
		}
		return Uniform(ds[0], ds[1]), nil
	case j.Normal != nil:
		ds, err := durations([]string{j.Normal.Mean, j.Normal.StdDev})
		if err != nil {
			return Delay{}, fmt.Errorf(`normal: want {"mean": D, "stddev": D}: %v`, err)
		}
		return Normal(ds[0], ds[1]), nil
	default:
		ds, err := durations(j.Samples)
		if err != nil {
			return Delay{}, fmt.Errorf("samples: %v", err)
		}
		if len(ds) == 0 {
			return Delay{}, errors.New("samples: give at least one duration")
		}
		return Samples(ds...), nil
	}
}

// UnmarshalJSON reads the JSON form (see ParseDelay).
func (d *Delay) UnmarshalJSON(raw []byte) error {
	v, err := ParseDelay(raw)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the JSON form ParseDelay reads.
func (d Delay) MarshalJSON() ([]byte, error) {
	strs := func(ds ...time.Duration) []string {
		out := make([]string, len(ds))
		for i, x := range ds {
			out[i] = x.String()
		}
		return out
	}
	switch d.kind {
	case "uniform":
		return json.Marshal(delayJSON{Uniform: strs(d.a, d.b)})
	case "normal":
		j := delayJSON{Normal: &struct {
			Mean   string `json:"mean"`
			StdDev string `json:"stddev"`
		}{d.a.String(), d.b.String()}}
		return json.Marshal(j)
	case "samples":
		return json.Marshal(delayJSON{Samples: strs(d.samples...)})
	}
	return json.Marshal(d.a.String())
}

func duration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as \"500ms\" or \"2s\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

func durations(ss []string) ([]time.Duration, error) {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		d, err := duration(s)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}
