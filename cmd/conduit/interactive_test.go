package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// profileForm is the demo profile form's fields as the guards read them.
func profileForm(t *testing.T) []messages.FormField {
	t.Helper()
	form, err := guards.ParseForm(messages.Version20251125, json.RawMessage(demoserver.ProfileSchema))
	if err != nil {
		t.Fatal(err)
	}
	return form.FormFields()
}

func TestInteractiveFieldSpecs(t *testing.T) {
	form := profileForm(t)
	for i := range form {
		form[i].Sensitive = form[i].Name == "email"
	}
	specs := fieldSpecs(form)
	var names []string
	by := map[string]fieldSpec{}
	for _, s := range specs {
		names = append(names, s.Name)
		by[s.Name] = s
	}
	if strings.Join(names, " ") != strings.Join(demoserver.ProfileFields(), " ") {
		t.Fatalf("order %v, want the schema's %v", names, demoserver.ProfileFields())
	}
	checks := []struct {
		name     string
		kind     messages.FieldKind
		required bool
	}{
		{"name", messages.FieldString, true}, {"email", messages.FieldString, true}, {"age", messages.FieldInteger, false}, {"height", messages.FieldNumber, false},
		{"newsletter", messages.FieldBoolean, false}, {"language", messages.FieldSelect, true}, {"plan", messages.FieldSelect, false}, {"theme", messages.FieldSelect, false},
		{"topics", messages.FieldMultiSelect, true}, {"channels", messages.FieldMultiSelect, false},
	}
	for _, c := range checks {
		s := by[c.name]
		if s.Kind != c.kind || s.Required != c.required {
			t.Errorf("%s: kind %s required %v, want %s %v", c.name, s.Kind, s.Required, c.kind, c.required)
		}
	}
	if by["name"].DefaultText != "Ada Lovelace" || by["age"].DefaultText != "36" || !by["plan"].HasDefault || by["plan"].DefaultText != "free" {
		t.Errorf("defaults: %+v %+v %+v", by["name"].DefaultText, by["age"].DefaultText, by["plan"].DefaultText)
	}
	if got := by["channels"].DefaultMulti; len(got) != 1 || got[0] != "email" {
		t.Errorf("channels default %v", got)
	}
	if o := by["plan"].Options; len(o) != 3 || o[1] != (fieldOption{"pro", "Pro"}) {
		t.Errorf("titled oneOf options %v", o)
	}
	if o := by["theme"].Options; len(o) != 2 || o[1] != (fieldOption{"dark", "Dark"}) {
		t.Errorf("enumNames options %v", o)
	}
	if o := by["channels"].Options; len(o) != 3 || o[1] != (fieldOption{"sms", "Text message"}) {
		t.Errorf("anyOf options %v", o)
	}
	if !by["email"].Sensitive || by["name"].Sensitive {
		t.Error("sensitive flag not carried")
	}
	if by["name"].Label() != "Full name *" || by["homepage"].Label() != "Homepage" {
		t.Errorf("labels %q %q", by["name"].Label(), by["homepage"].Label())
	}
	for name, want := range map[string]string{
		"name": "2 to 60 characters", "email": "an email address", "age": "a whole number from 0 to 150",
		"height": "a number from 0.5 to 2.5", "topics": "pick 1 to 3", "homepage": "optional",
	} {
		if h := by[name].Hint(); !strings.Contains(h, want) {
			t.Errorf("%s hint %q, want %q in it", name, h, want)
		}
	}
}

func TestInteractiveReask(t *testing.T) {
	specs := fieldSpecs(profileForm(t))
	by := map[string]fieldSpec{}
	for _, s := range specs {
		by[s.Name] = s
	}
	cases := []struct{ field, text, want string }{
		{"email", "not-an-email", "not a valid email address"},
		{"email", "", "this field is required"},
		{"name", "A", "too short: at least 2 characters"},
		{"age", "200", "too large: at most 150"},
		{"age", "3.5", "enter a whole number"},
		{"height", "abc", "enter a number"},
		{"height", "0.1", "too small: at least 0.5"},
		{"birthday", "yesterday", "not a valid date (YYYY-MM-DD)"},
		{"homepage", "not a uri", "not a valid URI"},
	}
	for _, c := range cases {
		err := by[c.field].checkText(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: %v, want %q", c.field, c.text, err, c.want)
		}
	}
	for _, ok := range []struct{ field, text string }{{"email", "ada@example.com"}, {"homepage", ""}, {"age", "36"}, {"height", "1.7"}, {"birthday", "1815-12-10"}} {
		if err := by[ok.field].checkText(ok.text); err != nil {
			t.Errorf("%s %q: %v", ok.field, ok.text, err)
		}
	}
	if err := by["topics"].checkMulti(nil); err == nil || !strings.Contains(err.Error(), "pick at least 1") {
		t.Errorf("topics none: %v", err)
	}
	if err := by["topics"].checkMulti([]string{"go", "rust", "mcp", "actors"}); err == nil || !strings.Contains(err.Error(), "pick at most 3") {
		t.Errorf("topics all: %v", err)
	}
	// The whole answer: the first invalid field is named, with its message.
	vals := newFormValues(specs)
	*vals.text["email"] = "nope"
	*vals.multi["topics"] = []string{"go"}
	*vals.text["language"] = "en"
	_, bad, msg := vals.content(specs)
	if bad == nil || bad.Name != "email" || msg != "not a valid email address" {
		t.Fatalf("content: %v %q", bad, msg)
	}
	*vals.text["email"] = "ada@example.com"
	content, bad, msg := vals.content(specs)
	if bad != nil {
		t.Fatalf("content: %s %q", bad.Name, msg)
	}
	if content["age"] != json.Number("36") || content["email"] != "ada@example.com" {
		t.Errorf("content %v", content)
	}
	if _, ok := content["homepage"]; ok {
		t.Error("an empty optional field was sent")
	}
}

// Each reason of the guards' field error has its own line when a field is
// asked again (the reason is read from the error, not from its words).
func TestInteractiveReaskReasons(t *testing.T) {
	by := map[string]fieldSpec{}
	for _, s := range fieldSpecs(profileForm(t)) {
		by[s.Name] = s
	}
	cases := []struct {
		field string
		fe    messages.FieldError
		want  string
	}{
		{"name", messages.FieldError{Reason: messages.ReasonMaxLength}, "too long: at most 60 characters"},
		{"name", messages.FieldError{Reason: messages.ReasonType}, "does not fit the form (type)"},
		{"age", messages.FieldError{Reason: messages.ReasonMinimum}, "too small: at least 0"},
		{"age", messages.FieldError{Reason: messages.ReasonType}, "enter a whole number"},
		{"age", messages.FieldError{Reason: messages.ReasonRange, Message: `field "age": number out of range`}, `field "age": number out of range`},
		{"language", messages.FieldError{Reason: messages.ReasonEnum}, "not one of the choices"},
		{"topics", messages.FieldError{Reason: messages.ReasonMinItems}, "pick at least 1"},
		{"birthday", messages.FieldError{Reason: messages.ReasonFormat}, "not a valid date (YYYY-MM-DD)"},
		{"email", messages.FieldError{Reason: messages.ReasonFormat}, "not a valid email address"},
		{"homepage", messages.FieldError{Reason: messages.ReasonFormat}, "not a valid URI (e.g. https://example.com)"},
	}
	for _, c := range cases {
		if got := reaskMessage(by[c.field], &c.fe); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.field, c.fe.Reason, got, c.want)
		}
	}
	if err := by["language"].checkText("es"); err == nil || err.Error() != "not one of the choices" {
		t.Errorf("language es: %v", err)
	}
	if err := by["topics"].checkMulti([]string{"go", "cobol"}); err == nil || err.Error() != "not one of the choices" {
		t.Errorf("topics cobol: %v", err)
	}
}

func TestInteractiveURLScreen(t *testing.T) {
	r := &conduit.ElicitationRequest{Mode: messages.ModeURL, URL: "https://xn--80ak6aa92e.com/connect", Host: "xn--80ak6aa92e.com", IDN: true, OriginMismatch: true}
	r.Params.Message = "Sign in"
	w := urlWarnings(r)
	if len(w) != 2 || !strings.Contains(w[0], "punycode") || !strings.Contains(w[1], "not the server's own origin") {
		t.Fatalf("warnings %q", w)
	}
	screen := urlScreen("demo", r, func(s string) string { return "[" + s + "]" })
	for _, want := range []string{`"demo"`, "https://[xn--80ak6aa92e.com]/connect", "host: [xn--80ak6aa92e.com]", "never fetches"} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if w := urlWarnings(&conduit.ElicitationRequest{Host: "example.com"}); len(w) != 0 {
		t.Errorf("no warnings expected: %q", w)
	}
}

// A text field's default, shown in the input and sent as shown, is
// sanitised; a select's default is an option's value, kept.
func TestInteractiveFieldDefaultsAreNotRaw(t *testing.T) {
	specs := fieldSpecs([]messages.FormField{
		{Name: "name", Kind: messages.FieldString, Default: "Ada\x1b]52;c;cHduZWQ=\x07\u202e!"},
		{Name: "pick", Kind: messages.FieldSelect, Default: "a\u202eb", Options: []messages.FieldOption{{Value: "a\u202eb"}}},
	})
	if specs[0].DefaultText != "Ada!" {
		t.Errorf("text default %q", specs[0].DefaultText)
	}
	if specs[1].DefaultText != "a\u202eb" || specs[1].Options[0].Label != "ab" {
		t.Errorf("select default %q, label %q", specs[1].DefaultText, specs[1].Options[0].Label)
	}
}

// A URL whose host shows otherwise than where it leads: the screen shows
// the host it leads to, the host as written, and says so. The whole URL
// is shown, however long (the guards bound it).
func TestInteractiveURLScreenMappedHost(t *testing.T) {
	r := &conduit.ElicitationRequest{Mode: messages.ModeURL, URL: "https://example.com。evil.com/" + strings.Repeat("a", 3000),
		Host: "example.com.evil.com", WrittenHost: "example.com。evil.com", HostMapped: true, OriginMismatch: true}
	r.Params.Message = "Sign in"
	screen := urlScreen("srv", r, func(s string) string { return "[" + s + "]" })
	want := "\n  ┌ The server \"srv\" asks you to open a URL\n" +
		"  │ Sign in\n" +
		"  │ url:  https://[example.com。evil.com]/" + strings.Repeat("a", 3000) + "\n" +
		"  │ host: [example.com.evil.com] (written example.com。evil.com)\n" +
		"  │ ⚠ The URL shows the host example.com。evil.com but leads to example.com.evil.com: a browser reads some of its characters as others (a dot, a letter).\n" +
		"  │ ⚠ The host example.com.evil.com is not the server's own origin: this link takes you somewhere else.\n" +
		"  └ Conduit never fetches this URL; it is opened only if you choose so.\n"
	if screen != want {
		t.Errorf("screen:\n%s\nwant:\n%s", screen, want)
	}
}

func TestInteractiveSamplingChanges(t *testing.T) {
	r := &conduit.SamplingRequest{Raw: json.RawMessage(`{"messages":[],"maxTokens":100000,"includeContext":"thisServer"}`)}
	r.Params.MaxTokens, r.Params.IncludeContext = 4096, "none"
	ch := samplingChanges(r)
	if len(ch) != 2 || !strings.Contains(ch[0], "100000") || !strings.Contains(ch[1], "thisServer") {
		t.Fatalf("changes %q", ch)
	}
	r.Raw = json.RawMessage(`{"messages":[],"maxTokens":4096,"includeContext":"none"}`)
	if ch := samplingChanges(r); len(ch) != 0 {
		t.Errorf("no change expected: %q", ch)
	}
}

func TestInteractiveEndedMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if m := endedMessage(ctx, time.Now(), time.Second); !strings.HasPrefix(m, "timed out") {
		t.Errorf("deadline: %q", m)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if m := endedMessage(ctx2, time.Now(), time.Minute); !strings.Contains(m, "server cancelled") {
		t.Errorf("cancel: %q", m)
	}
	if m := endedMessage(ctx2, time.Now().Add(-time.Minute), time.Minute); !strings.HasPrefix(m, "timed out") {
		t.Errorf("legacy timeout: %q", m)
	}
}

// requireTmux skips a terminal test where tmux is missing, except in CI
// (CI set), which installs tmux: there the test must run.
func requireTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("tmux is required in CI: %v", err)
		}
		t.Skip("tmux is not installed")
	}
}

// tmuxTerm is the CLI running in a real terminal (a detached tmux session
// on a tmux server of its own), driven as a person would.
type tmuxTerm struct {
	t        *testing.T
	sock     string
	deadline time.Time
}

// tmuxServers numbers the tmux servers of this process: with the pid, a
// socket name no other test run on the machine uses.
var tmuxServers atomic.Int64

// startTmux runs `conduit ARGS` in a new 200x50 terminal, in a temporary
// directory; the shell then prints EXIT=<status>. The whole walk has 90 s:
// the suite runs packages in parallel on CI's two cores, and a person's
// pace in tmux is slow already.
func startTmux(t *testing.T, args string) *tmuxTerm {
	t.Helper()
	requireTmux(t)
	cli, _ := binaries(t)
	tt := &tmuxTerm{t: t, sock: fmt.Sprintf("conduit-test-%d-%d", os.Getpid(), tmuxServers.Add(1)), deadline: time.Now().Add(90 * time.Second)}
	tt.tmux("new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "-c", t.TempDir(), "sh", "-c", cli+" "+args+"; echo EXIT=$?; sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tt.sock, "kill-server").Run() })
	return tt
}

func (tt *tmuxTerm) tmux(args ...string) string {
	tt.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tt.sock}, args...)...).CombinedOutput()
	if err != nil {
		tt.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is everything the terminal showed, scrollback included.
func (tt *tmuxTerm) screen() string {
	return tt.tmux("capture-pane", "-p", "-J", "-S", "-5000", "-t", "cli")
}

// waitFor waits until the screen shows every one of want, and returns it.
func (tt *tmuxTerm) waitFor(want ...string) string {
	tt.t.Helper()
	for {
		s := tt.screen()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			// Let the prompt start reading keys: one sent before
			// the terminal is in raw mode is lost.
			time.Sleep(400 * time.Millisecond)
			return s
		}
		if time.Now().After(tt.deadline) {
			tt.t.Fatalf("timed out waiting for %q; screen:\n%s", want, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// keys presses keys (tmux names: Enter, Space, Down, C-u), one at a time.
func (tt *tmuxTerm) keys(k ...string) {
	for _, key := range k {
		tt.tmux("send-keys", "-t", "cli", key)
		time.Sleep(150 * time.Millisecond)
	}
}

// typ types s as text.
func (tt *tmuxTerm) typ(s string) {
	tt.tmux("send-keys", "-t", "cli", "-l", s)
	time.Sleep(150 * time.Millisecond)
}

// TestInteractiveTmux drives `conduit demo --era legacy` in a real terminal
// (tmux) as a person would.
func TestInteractiveTmux(t *testing.T) {
	term := startTmux(t, "demo --era legacy")
	waitFor, keys, typ := term.waitFor, term.keys, term.typ

	first := waitFor("Set up your demo profile.", "Answer this form?", "Fill in the form")
	if !strings.Contains(first, demoInteractiveNote) {
		t.Errorf("the first screen does not say how to get the scripted run (%q):\n%s", demoInteractiveNote, first)
	}
	keys("Enter")
	waitFor("Email *", "Topics *")
	keys("Enter") // name: the default
	typ("not-an-email")
	keys("Enter")
	waitFor("not a valid email address") // re-asked, not sent
	keys("C-u")
	typ("ada@example.com")
	keys("Enter")
	keys("Enter", "Enter", "Enter", "Enter", "Enter", "Enter", "Enter", "Enter") // homepage … theme
	keys("Space", "Enter")                                                       // topics: go
	keys("Enter")                                                                // channels: the default
	waitFor("form answered", `"ada@example.com"`, "Open this URL?")
	s := waitFor("punycode", "not the server's own origin", "Decline (tell the server no)")
	if !strings.Contains(s, "https://xn--80ak6aa92e.com/connect") {
		t.Errorf("the URL is not shown:\n%s", s)
	}
	keys("Enter") // Decline, the default
	waitFor("Open your Conduit demo dashboard.")
	keys("Enter")
	waitFor("Approve this completion?", "clamped to 4096")
	keys("Enter")
	waitFor("Your reply")
	typ("Typed by a person in tmux.")
	keys("Enter")
	waitFor(`Summary (by human (conduit interactive)): Typed by a person in tmux.`)
	waitFor("Step 1 of 2")
	keys("Down", "Enter") // decline
	waitFor("Approve the nightly export")
	keys("Enter", "Enter")
	s = waitFor("EXIT=")
	for _, want := range []string{"Summary (legacy era", "10 steps, all as expected", "EXIT=0"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q; screen:\n%s", want, s)
		}
	}
	if strings.Contains(s, "opened in the system browser") {
		t.Error("a URL was opened")
	}
	if strings.Count(s, "you chose: decline (nothing opened)") != 2 {
		t.Errorf("both URLs should be declined, nothing opened:\n%s", s)
	}
}

// At a terminal, --scripted runs the built-in scripted handler: no prompt,
// the scripted run's summary, exit 0.
func TestDemoScriptedAtTerminal(t *testing.T) {
	term := startTmux(t, "demo --scripted --era legacy")
	s := term.waitFor("EXIT=")
	for _, want := range []string{
		"handler  built-in, scripted: forms filled in, URLs declined (never opened),",
		"=> refused by the client, as expected",
		"10 steps, all as expected (9 ok, 1 refused). 9 input requests: 8 answered, 1 refused.",
		"EXIT=0",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q; screen:\n%s", want, s)
		}
	}
	for _, bad := range []string{demoInteractiveNote, "Answer this form?", "interactive:"} {
		if strings.Contains(s, bad) {
			t.Errorf("%q on the screen of a scripted run:\n%s", bad, s)
		}
	}
}

// A number typed as a person writes it (a plus sign, leading zeros, a bare
// decimal point) is sent as a JSON number, not refused as not fitting the
// form; a value that is no finite number is refused with the field's words.
func TestInteractiveNumbersAsTyped(t *testing.T) {
	by := map[string]fieldSpec{}
	for _, s := range fieldSpecs(profileForm(t)) {
		by[s.Name] = s
	}
	for _, c := range []struct {
		field, text string
		want        json.Number
	}{
		{"age", "+36", "36"}, {"age", "036", "36"}, {"age", " 36 ", "36"},
		{"height", "+1.5", "1.5"}, {"height", ".5", "0.5"}, {"height", "2.", "2"}, {"height", "1.75", "1.75"},
	} {
		v, present, err := by[c.field].textValue(c.text)
		if err != nil || !present || v != c.want {
			t.Errorf("%s %q: %v %v %v, want %s", c.field, c.text, v, present, err, c.want)
		}
		if err := by[c.field].checkText(c.text); err != nil {
			t.Errorf("%s %q refused: %v", c.field, c.text, err)
		}
	}
	for _, text := range []string{"Inf", "-infinity", "NaN"} {
		if err := by["height"].checkText(text); err == nil || err.Error() != "enter a number" {
			t.Errorf("height %q: %v, want \"enter a number\"", text, err)
		}
	}
}

// An optional multi-select with minItems can be left empty: nothing is
// picked, so the field is left out of the answer, as an empty optional text
// field is. It was sent as [] and refused ("pick at least 1"), so the person
// could not submit the form without picking.
func TestInteractiveOptionalMultiSelectLeftEmpty(t *testing.T) {
	form, err := guards.ParseForm(messages.Version20251125, json.RawMessage(`{"type": "object", "properties": {
		"tags": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["a", "b"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	specs := fieldSpecs(form.FormFields())
	if err := specs[0].checkMulti(nil); err != nil {
		t.Errorf("empty optional multi-select refused: %v", err)
	}
	if err := specs[0].checkMulti([]string{}); err != nil {
		t.Errorf("empty optional multi-select refused: %v", err)
	}
	content, bad, msg := newFormValues(specs).content(specs)
	if bad != nil {
		t.Fatalf("content: %s %q", bad.Name, msg)
	}
	if v, ok := content["tags"]; ok {
		t.Errorf("an empty optional multi-select was sent: %v", v)
	}
	vals := newFormValues(specs)
	*vals.multi["tags"] = []string{"b"}
	if content, _, _ := vals.content(specs); fmt.Sprint(content["tags"]) != "[b]" {
		t.Errorf("picked: %v", content)
	}
	// With a default, unpicking everything sends [], which the default
	// would otherwise replace.
	profile := fieldSpecs(profileForm(t))
	vals = newFormValues(profile)
	*vals.text["name"], *vals.text["email"], *vals.text["language"] = "Ada", "ada@example.com", "en"
	*vals.multi["topics"] = []string{"go"}
	*vals.multi["channels"] = []string{}
	content, bad, msg = vals.content(profile)
	if bad != nil {
		t.Fatalf("content: %s %q", bad.Name, msg)
	}
	if v, ok := content["channels"]; !ok || fmt.Sprint(v) != "[]" {
		t.Errorf("channels unpicked: %v %v, want []", v, ok)
	}
}

// A number default is pre-filled as the server wrote it (an integer past
// 2^53 is not rounded), and an integer written with a fraction of zeros or
// an exponent as the whole number it is, which the field accepts back.
func TestInteractiveNumberDefaultsAsWritten(t *testing.T) {
	form, err := guards.ParseForm(messages.Version20251125, json.RawMessage(`{"type": "object", "properties": {
		"id": {"type": "integer", "default": 9007199254740993},
		"count": {"type": "integer", "default": 36.0},
		"big": {"type": "integer", "default": 1e30},
		"ratio": {"type": "number", "default": 0.10000000000000000001}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range fieldSpecs(form.FormFields()) {
		want := map[string]string{"id": "9007199254740993", "count": "36", "big": "1000000000000000000000000000000", "ratio": "0.10000000000000000001"}[s.Name]
		if s.DefaultText != want {
			t.Errorf("%s default pre-filled %q, want %q", s.Name, s.DefaultText, want)
		}
		if v, _, err := s.textValue(s.DefaultText); err != nil || v != json.Number(want) {
			t.Errorf("%s default sent as %v (%v), want %s", s.Name, v, err, want)
		}
	}
}
