package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/load"
)

// answers are the scripted answers of an answers file. A nil kind is absent
// from the file: the handler does not implement it, so it is not advertised.
type answers struct {
	Sampling    *samplingAnswer
	Elicitation *elicitationAnswer
	// Roots is nil when the file has no "roots"; an empty list offers
	// roots but lists none.
	Roots []conduit.Root
	// rootEntries are the roots as written in the file.
	rootEntries []string
	// Servers are the answers for one server each (by its id: its name in
	// a --config file, or --server-id), over the file's own: a kind a
	// server's entry gives replaces the file's for that server.
	Servers map[string]*answers
}

// forServer is the answers for the server id: its entry's kinds, the
// file's for the others.
func (a *answers) forServer(id string) *answers {
	s := a.Servers[id]
	if s == nil {
		return a
	}
	merged := *a
	merged.Servers = nil
	if s.Sampling != nil {
		merged.Sampling = s.Sampling
	}
	if s.Elicitation != nil {
		merged.Elicitation = s.Elicitation
	}
	if s.Roots != nil {
		merged.Roots, merged.rootEntries = s.Roots, s.rootEntries
	}
	return &merged
}

// anyScope reports whether the file or one of its servers' entries gives
// the kind has says.
func (a *answers) anyScope(has func(*answers) bool) bool {
	if has(a) {
		return true
	}
	for _, s := range a.Servers {
		if has(s) {
			return true
		}
	}
	return false
}

// samplingAnswer is the file's "sampling": a result or a refusal.
type samplingAnswer struct {
	Result *conduit.CreateMessageResult
	Error  *conduit.RPCError
	// Delay is a fixed "delay" ("2s"); zero for a distribution.
	Delay time.Duration
	// Delays is the wait before answering: Delay, or the distribution.
	Delays load.Delay
}

// elicitationAnswer is the file's "elicitation": an action (with content
// for a form accept) or a refusal.
type elicitationAnswer struct {
	Modes   []string
	Action  string
	Content map[string]any
	Error   *conduit.RPCError
	Delay   time.Duration // as samplingAnswer's
	Delays  load.Delay
}

// The file's JSON shape.
type answersFile struct {
	Sampling *struct {
		Result json.RawMessage `json:"result"`
		Error  *refusalJSON    `json:"error"`
		Delay  json.RawMessage `json:"delay"`
	} `json:"sampling"`
	Elicitation *struct {
		Modes   []string        `json:"modes"`
		Action  string          `json:"action"`
		Content map[string]any  `json:"content"`
		Error   *refusalJSON    `json:"error"`
		Delay   json.RawMessage `json:"delay"`
	} `json:"elicitation"`
	Roots *[]string `json:"roots"`
	// Servers: per server id, an object of the same keys (but "servers").
	Servers map[string]json.RawMessage `json:"servers"`
}

type refusalJSON struct {
	Code    *int            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// loadAnswers reads and checks an answers file. Every problem is a usage
// error naming the file.
func loadAnswers(path string) (*answers, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("answers file: %v", err)
	}
	a, err := parseAnswers(data)
	if err != nil {
		return nil, usagef("answers file %s: %v", path, err)
	}
	return a, nil
}

// parseAnswers checks an answers file's content. Unknown keys are refused
// so a misspelt kind is not silently "not implemented".
func parseAnswers(data []byte) (*answers, error) {
	var f answersFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber() // a form answer's numbers are sent as written, not rounded to a float64
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("invalid JSON: more than one value")
	}
	var a answers
	if s := f.Sampling; s != nil {
		sa := &samplingAnswer{}
		var err error
		if sa.Delay, sa.Delays, err = parseDelay(s.Delay); err != nil {
			return nil, fmt.Errorf("sampling.delay: %v", err)
		}
		hasResult := len(s.Result) > 0 && string(s.Result) != "null"
		switch {
		case hasResult && s.Error != nil:
			return nil, errors.New(`sampling: give "result" or "error", not both`)
		case s.Error != nil:
			if sa.Error, err = s.Error.rpcError("sampling"); err != nil {
				return nil, err
			}
		case hasResult:
			var r conduit.CreateMessageResult
			if err := json.Unmarshal(s.Result, &r); err != nil {
				return nil, fmt.Errorf("sampling.result: %v", err)
			}
			if len(r.Content.Blocks) == 0 {
				return nil, errors.New("sampling.result: \"content\" is required")
			}
			if r.Role == "" {
				r.Role = "assistant"
			}
			if r.Model == "" {
				r.Model = "scripted"
			}
			sa.Result = &r
		default:
			return nil, errors.New(`sampling: give "result" (a CreateMessageResult) or "error" ({"code", "message"})`)
		}
		a.Sampling = sa
	}
	if e := f.Elicitation; e != nil {
		ea := &elicitationAnswer{Modes: e.Modes, Action: e.Action, Content: e.Content}
		var err error
		if ea.Delay, ea.Delays, err = parseDelay(e.Delay); err != nil {
			return nil, fmt.Errorf("elicitation.delay: %v", err)
		}
		if ea.Modes == nil {
			ea.Modes = []string{"form"}
		}
		if len(ea.Modes) == 0 {
			return nil, errors.New(`elicitation.modes: name at least one of "form", "url"`)
		}
		for _, m := range ea.Modes {
			if m != "form" && m != "url" {
				return nil, fmt.Errorf(`elicitation.modes: unknown mode %q (want "form" or "url")`, m)
			}
		}
		switch {
		case e.Error != nil && e.Action != "":
			return nil, errors.New(`elicitation: give "action" or "error", not both`)
		case e.Error != nil:
			if e.Content != nil {
				return nil, errors.New(`elicitation: "content" goes with "action": "accept", not with "error"`)
			}
			if ea.Error, err = e.Error.rpcError("elicitation"); err != nil {
				return nil, err
			}
		case e.Action == "accept":
		case e.Action == "decline" || e.Action == "cancel":
			if e.Content != nil {
				return nil, fmt.Errorf(`elicitation: "content" goes with "action": "accept", not %q`, e.Action)
			}
		case e.Action == "":
			return nil, errors.New(`elicitation: give "action" ("accept", "decline" or "cancel") or "error" ({"code", "message"})`)
		default:
			return nil, fmt.Errorf(`elicitation.action: %q is not "accept", "decline" or "cancel"`, e.Action)
		}
		a.Elicitation = ea
	}
	if f.Roots != nil {
		roots, err := parseRoots(*f.Roots)
		if err != nil {
			return nil, fmt.Errorf("roots: %v", err)
		}
		a.Roots, a.rootEntries = roots, *f.Roots
	}
	for _, id := range slices.Sorted(maps.Keys(f.Servers)) {
		if id == "" {
			return nil, errors.New(`servers: a server's id cannot be ""`)
		}
		s, err := parseAnswers(f.Servers[id])
		if err != nil {
			return nil, fmt.Errorf("servers.%s: %v", id, err)
		}
		if s.Servers != nil {
			return nil, fmt.Errorf(`servers.%s: "servers" only at the top of the file`, id)
		}
		if a.Servers == nil {
			a.Servers = map[string]*answers{}
		}
		a.Servers[id] = s
	}
	return &a, nil
}

func (r *refusalJSON) rpcError(kind string) (*conduit.RPCError, error) {
	if r.Code == nil {
		return nil, fmt.Errorf("%s.error: \"code\" (an integer) is required", kind)
	}
	msg := r.Message
	if msg == "" {
		msg = "refused"
	}
	return &conduit.RPCError{Code: *r.Code, Message: msg, Data: r.Data}, nil
}

// parseDelay reads a "delay": a duration (the fixed delay, also returned
// on its own) or a distribution (load.ParseDelay).
func parseDelay(raw json.RawMessage) (time.Duration, load.Delay, error) {
	d, err := load.ParseDelay(raw)
	if err != nil {
		return 0, load.Delay{}, err
	}
	var fixed string
	if json.Unmarshal(raw, &fixed) == nil && fixed != "" {
		return d.Sample(), d, nil
	}
	return 0, d, nil
}

// parseRoots turns each entry into a root: a URI (it has a scheme) is kept;
// anything else is a directory path, made absolute against the current
// directory, cleaned, and offered as a file:// URI named after its last
// element.
func parseRoots(entries []string) ([]conduit.Root, error) {
	roots := make([]conduit.Root, 0, len(entries))
	for _, e := range entries {
		r, err := parseRoot(e)
		if err != nil {
			return nil, err
		}
		roots = append(roots, r)
	}
	return roots, nil
}

func parseRoot(s string) (conduit.Root, error) {
	if s == "" {
		return conduit.Root{}, errors.New("an empty root")
	}
	if isURI(s) {
		if _, err := url.Parse(s); err != nil {
			return conduit.Root{}, fmt.Errorf("%q: %v", s, err)
		}
		return conduit.Root{URI: s}, nil
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return conduit.Root{}, fmt.Errorf("%q: %v", s, err)
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return conduit.Root{URI: u.String(), Name: filepath.Base(abs)}, nil
}

// isURI reports whether s starts with a URI scheme ("file:", "https:", …).
// A one-letter scheme is taken for a Windows drive letter.
func isURI(s string) bool {
	scheme, _, ok := strings.Cut(s, ":")
	if !ok || len(scheme) < 2 {
		return false
	}
	for i, c := range scheme {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// mergeRoots returns the flag roots then the file roots, without repeating
// a URI.
func mergeRoots(lists ...[]conduit.Root) []conduit.Root {
	var out []conduit.Root
	seen := map[string]bool{}
	for _, l := range lists {
		for _, r := range l {
			if !seen[r.URI] {
				seen[r.URI] = true
				out = append(out, r)
			}
		}
	}
	return out
}
