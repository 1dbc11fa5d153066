package load

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Call is one tool of the load's mix: its name, its weight among the
// others, and the template of its arguments.
type Call struct {
	Tool string `json:"tool"`
	// Weight is the tool's share of the calls against the others' (1 when
	// zero).
	Weight int `json:"weight,omitempty"`
	// Args is the arguments' template, a JSON object (none when empty). In
	// it, each call replaces:
	//   - the string "{{n}}" by the call's number (0, 1, 2… over the whole
	//     run, warm-up included), a JSON number; "{{n}}" inside a longer
	//     string by its digits;
	//   - an object {"$pick": [V1, V2, …]} by one of the values, at random.
	Args json.RawMessage `json:"args,omitempty"`
}

// ParseMix reads a mix: a JSON array of calls, such as
//
//	[{"tool": "search", "weight": 3, "args": {"q": {"$pick": ["go", "mcp"]}}},
//	 {"tool": "fetch", "args": {"id": "doc-{{n}}"}}]
func ParseMix(data []byte) ([]Call, error) {
	var mix []Call
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&mix); err != nil {
		return nil, fmt.Errorf(`want a JSON array of {"tool", "weight", "args"}: %v`, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON value")
	}
	if len(mix) == 0 {
		return nil, errors.New("no calls")
	}
	return mix, nil
}

// mix picks a call by weight and builds its arguments.
type mix struct {
	calls     []Call
	templates []any // parsed Args; nil for none
	total     int   // the sum of weights
}

func newMix(calls []Call) (*mix, error) {
	if len(calls) == 0 {
		return nil, fmt.Errorf("%w: no tool to call", ErrConfig)
	}
	m := &mix{calls: calls, templates: make([]any, len(calls))}
	for i, c := range calls {
		if c.Tool == "" {
			return nil, fmt.Errorf("%w: call %d has no tool", ErrConfig, i+1)
		}
		if c.Weight < 0 {
			return nil, fmt.Errorf("%w: %s: weight %d is negative", ErrConfig, c.Tool, c.Weight)
		}
		m.total += weight(c)
		if len(c.Args) == 0 {
			continue
		}
		var tmpl any
		if err := json.Unmarshal(c.Args, &tmpl); err != nil {
			return nil, fmt.Errorf("%w: %s: args: %v", ErrConfig, c.Tool, err)
		}
		if _, ok := tmpl.(map[string]any); !ok {
			return nil, fmt.Errorf("%w: %s: args must be a JSON object", ErrConfig, c.Tool)
		}
		if err := checkTemplate(tmpl); err != nil {
			return nil, fmt.Errorf("%w: %s: args: %v", ErrConfig, c.Tool, err)
		}
		m.templates[i] = tmpl
	}
	return m, nil
}

func weight(c Call) int {
	if c.Weight == 0 {
		return 1
	}
	return c.Weight
}

// pick chooses a call by weight: its index.
func (m *mix) pick() int {
	if len(m.calls) == 1 {
		return 0
	}
	r := rand.N(m.total)
	for i, c := range m.calls {
		if r -= weight(c); r < 0 {
			return i
		}
	}
	return len(m.calls) - 1
}

// args builds call i's arguments for the call numbered n; nil for none.
func (m *mix) args(i int, n int64) any {
	if m.templates[i] == nil {
		return nil
	}
	return expand(m.templates[i], n)
}

const counter = "{{n}}"

func checkTemplate(v any) error {
	switch v := v.(type) {
	case map[string]any:
		if p, ok := v["$pick"]; ok {
			list, ok := p.([]any)
			if len(v) != 1 || !ok || len(list) == 0 {
				return errors.New(`{"$pick": [...]} takes a non-empty list and no other key`)
			}
			for _, x := range list {
				if err := checkTemplate(x); err != nil {
					return err
				}
			}
			return nil
		}
		for _, x := range v {
			if err := checkTemplate(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkTemplate(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// expand instantiates a template (see Call.Args). It builds new maps and
// slices: the template is shared by every caller.
func expand(v any, n int64) any {
	switch v := v.(type) {
	case string:
		if v == counter {
			return n
		}
		if strings.Contains(v, counter) {
			return strings.ReplaceAll(v, counter, strconv.FormatInt(n, 10))
		}
		return v
	case map[string]any:
		if p, ok := v["$pick"]; ok {
			list := p.([]any)
			return expand(list[rand.N(len(list))], n)
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = expand(x, n)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = expand(x, n)
		}
		return out
	}
	return v
}
