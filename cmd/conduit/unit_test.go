package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/sanitize"
)

// The answers file of the CLI contract, as written there.
const contractAnswers = `{"sampling":    {"result": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "scripted"}, "delay": "0s"},
 "elicitation": {"modes": ["form", "url"], "action": "accept", "content": {"name": "Ada"}, "delay": "0s"},
 "roots":       ["/srv/repo", "file:///home/me/notes"]}`

func TestParseAnswersContractExample(t *testing.T) {
	a, err := parseAnswers([]byte(contractAnswers))
	require.NoError(t, err)
	require.NotNil(t, a.Sampling)
	require.NotNil(t, a.Sampling.Result)
	assert.Equal(t, "assistant", a.Sampling.Result.Role)
	assert.Equal(t, "scripted", a.Sampling.Result.Model)
	assert.Equal(t, "hi", a.Sampling.Result.Content.Blocks[0].Text)
	assert.Nil(t, a.Sampling.Error)
	require.NotNil(t, a.Elicitation)
	assert.Equal(t, []string{"form", "url"}, a.Elicitation.Modes)
	assert.Equal(t, "accept", a.Elicitation.Action)
	assert.Equal(t, map[string]any{"name": "Ada"}, a.Elicitation.Content)
	assert.Equal(t, []conduit.Root{{URI: "file:///srv/repo", Name: "repo"}, {URI: "file:///home/me/notes"}}, a.Roots)
}

func TestParseAnswers(t *testing.T) {
	t.Run("kinds absent are nil", func(t *testing.T) {
		a, err := parseAnswers([]byte(`{}`))
		require.NoError(t, err)
		assert.Nil(t, a.Sampling)
		assert.Nil(t, a.Elicitation)
		assert.Nil(t, a.Roots)
		a, err = parseAnswers([]byte(`{"sampling": null, "elicitation": null, "roots": null}`))
		require.NoError(t, err)
		assert.Nil(t, a.Sampling)
		assert.Nil(t, a.Elicitation)
		assert.Nil(t, a.Roots)
	})
	t.Run("empty roots are offered", func(t *testing.T) {
		a, err := parseAnswers([]byte(`{"roots": []}`))
		require.NoError(t, err)
		assert.NotNil(t, a.Roots)
		assert.Empty(t, a.Roots)
	})
	t.Run("defaults", func(t *testing.T) {
		a, err := parseAnswers([]byte(`{"sampling": {"result": {"content": {"type": "text", "text": "x"}}},
			"elicitation": {"action": "decline"}}`))
		require.NoError(t, err)
		assert.Equal(t, "assistant", a.Sampling.Result.Role)
		assert.Equal(t, "scripted", a.Sampling.Result.Model)
		assert.Zero(t, a.Sampling.Delay)
		assert.Equal(t, []string{"form"}, a.Elicitation.Modes)
	})
	t.Run("delay and refusals", func(t *testing.T) {
		a, err := parseAnswers([]byte(`{"sampling": {"error": {"code": -1, "message": "no"}, "delay": "1.5s"},
			"elicitation": {"error": {"code": -32602}}}`))
		require.NoError(t, err)
		assert.Equal(t, 1500*time.Millisecond, a.Sampling.Delay)
		assert.Equal(t, &conduit.RPCError{Code: -1, Message: "no"}, a.Sampling.Error)
		assert.Nil(t, a.Sampling.Result)
		assert.Equal(t, -32602, a.Elicitation.Error.Code)
		assert.NotEmpty(t, a.Elicitation.Error.Message)
	})

	bad := map[string]struct{ file, want string }{
		"not JSON":                {`{`, "invalid JSON"},
		"two values":              {`{} {}`, "more than one value"},
		"misspelt kind":           {`{"sampeling": {}}`, `unknown field "sampeling"`},
		"unknown sampling key":    {`{"sampling": {"reslt": {}}}`, `unknown field "reslt"`},
		"sampling empty":          {`{"sampling": {}}`, `give "result"`},
		"sampling both":           {`{"sampling": {"result": {"content": {"type":"text","text":"x"}}, "error": {"code": 1}}}`, "not both"},
		"sampling no content":     {`{"sampling": {"result": {"model": "m"}}}`, `"content" is required`},
		"sampling bad content":    {`{"sampling": {"result": {"content": 3}}}`, "sampling.result"},
		"sampling error no code":  {`{"sampling": {"error": {"message": "x"}}}`, `"code"`},
		"bad delay":               {`{"sampling": {"error": {"code": 1}, "delay": "soon"}}`, "sampling.delay"},
		"negative delay":          {`{"elicitation": {"action": "cancel", "delay": "-1s"}}`, "negative"},
		"elicitation empty":       {`{"elicitation": {}}`, `give "action"`},
		"elicitation bad action":  {`{"elicitation": {"action": "ok"}}`, "elicitation.action"},
		"elicitation both":        {`{"elicitation": {"action": "accept", "error": {"code": 1}}}`, "not both"},
		"decline with content":    {`{"elicitation": {"action": "decline", "content": {"a": 1}}}`, `"content" goes with`},
		"error with content":      {`{"elicitation": {"error": {"code": 1}, "content": {"a": 1}}}`, `"content" goes with`},
		"unknown mode":            {`{"elicitation": {"modes": ["form", "tty"], "action": "cancel"}}`, `unknown mode "tty"`},
		"no modes":                {`{"elicitation": {"modes": [], "action": "cancel"}}`, "at least one"},
		"empty root":              {`{"roots": [""]}`, "empty root"},
		"roots not strings":       {`{"roots": [1]}`, "invalid JSON"},
		"sampling result array":   {`{"sampling": {"result": []}}`, "sampling.result"},
		"elicitation content arr": {`{"elicitation": {"action": "accept", "content": []}}`, "invalid JSON"},
	}
	for name, tc := range bad {
		t.Run(name, func(t *testing.T) {
			_, err := parseAnswers([]byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestLoadAnswersIsUsageError(t *testing.T) {
	_, err := loadAnswers(filepath.Join(t.TempDir(), "missing.json"))
	assert.Equal(t, exitUsage, exitCode(err))
	_, err = loadAnswers(writeFile(t, "a.json", `{"sampling": 1}`))
	assert.Equal(t, exitUsage, exitCode(err))
	assert.Contains(t, err.Error(), "a.json")
}

func TestParseRoot(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	for in, want := range map[string]conduit.Root{
		"/srv/repo":                  {URI: "file:///srv/repo", Name: "repo"},
		"/srv/repo/../other/./x/":    {URI: "file:///srv/other/x", Name: "x"},
		"/srv/with space":            {URI: "file:///srv/with%20space", Name: "with space"},
		".":                          {URI: "file://" + filepath.ToSlash(wd), Name: filepath.Base(wd)},
		"sub":                        {URI: "file://" + filepath.ToSlash(filepath.Join(wd, "sub")), Name: "sub"},
		"file:///home/me/notes":      {URI: "file:///home/me/notes"},
		"https://example.com/repo":   {URI: "https://example.com/repo"},
		"git+ssh://host/repo":        {URI: "git+ssh://host/repo"},
		"c:relative-looking-windows": {URI: "file://" + filepath.ToSlash(filepath.Join(wd, "c:relative-looking-windows")), Name: "c:relative-looking-windows"},
	} {
		got, err := parseRoot(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
}

func TestMergeRoots(t *testing.T) {
	a := []conduit.Root{{URI: "file:///a"}, {URI: "file:///b"}}
	b := []conduit.Root{{URI: "file:///b", Name: "dup"}, {URI: "file:///c"}}
	assert.Equal(t, []conduit.Root{{URI: "file:///a"}, {URI: "file:///b"}, {URI: "file:///c"}}, mergeRoots(a, b))
	assert.Nil(t, mergeRoots(nil, nil))
}

// The CLI's handler set has exactly the input kinds the answers file gives,
// plus the notifier's hooks always.
func TestNewHandlersHasExactlyTheKindsGiven(t *testing.T) {
	n := &notifier{}
	for mask := range 8 {
		a := &answers{}
		if mask&1 != 0 {
			a.Sampling = &samplingAnswer{}
		}
		if mask&2 != 0 {
			a.Elicitation = &elicitationAnswer{Modes: []string{"url"}}
		}
		var roots []conduit.Root
		if mask&4 != 0 {
			roots = []conduit.Root{{URI: "file:///r"}}
		}
		h := newHandlers(n, a, roots, samplingCommand{})
		assert.Equal(t, mask&1 != 0, h.Sampling != nil, "mask %d sampling", mask)
		assert.Equal(t, mask&2 != 0, h.Elicitation != nil, "mask %d elicitation", mask)
		assert.Equal(t, mask&4 != 0, h.Roots != nil, "mask %d roots", mask)
		assert.NotNil(t, h.Log, "mask %d logs", mask)
		assert.NotNil(t, h.Notification, "mask %d notifications", mask)
		assert.False(t, h.SamplingTools, "mask %d sampling tools", mask)
		if mask&2 != 0 {
			assert.Equal(t, []string{"url"}, h.ElicitationModes, "mask %d modes", mask)
		}
	}
	h := newHandlers(n, nil, nil, samplingCommand{command: "cat"})
	assert.NotNil(t, h.Sampling, "--sampling-command alone answers sampling")
}

func TestNewHandlersRoots(t *testing.T) {
	n := &notifier{}
	h := newHandlers(n, nil, nil, samplingCommand{})
	assert.Nil(t, h.Roots)
	assert.Nil(t, h.Sampling)

	h = newHandlers(n, nil, []conduit.Root{{URI: "file:///flag"}}, samplingCommand{})
	require.NotNil(t, h.Roots, "--roots alone offers roots")
	res, err := h.Roots(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []conduit.Root{{URI: "file:///flag"}}, res.Roots)

	a, err := parseAnswers([]byte(`{"roots": ["file:///file", "file:///flag"]}`))
	require.NoError(t, err)
	h = newHandlers(n, a, []conduit.Root{{URI: "file:///flag"}, {URI: "file:///flag2"}}, samplingCommand{})
	res, err = h.Roots(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, []conduit.Root{{URI: "file:///flag"}, {URI: "file:///flag2"}, {URI: "file:///file"}}, res.Roots, "flags first, no repeats")
}

func TestScriptedSampling(t *testing.T) {
	ctx := context.Background()
	a, err := parseAnswers([]byte(`{"sampling": {"result": {"content": {"type": "text", "text": "hi"}, "model": "m", "stopReason": "endTurn"}}}`))
	require.NoError(t, err)
	s := &sampler{answers: a}
	res, err := s.HandleSampling(ctx, &conduit.SamplingRequest{})
	require.NoError(t, err)
	assert.Equal(t, "hi", res.Content.Blocks[0].Text)
	assert.Equal(t, "endTurn", res.StopReason)
	res.Content.Blocks[0].Text = "changed"
	res2, _ := s.HandleSampling(ctx, &conduit.SamplingRequest{})
	assert.Equal(t, "hi", res2.Content.Blocks[0].Text, "each answer is a copy")

	a, err = parseAnswers([]byte(`{"sampling": {"error": {"code": -1, "message": "user said no"}}}`))
	require.NoError(t, err)
	_, err = (&sampler{answers: a}).HandleSampling(ctx, &conduit.SamplingRequest{})
	var rpc *conduit.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, -1, rpc.Code)
	assert.Equal(t, "user said no", rpc.Message)
}

func TestScriptedDelayHonoursContext(t *testing.T) {
	a, err := parseAnswers([]byte(`{"sampling": {"result": {"content": {"type": "text", "text": "x"}}, "delay": "1h"}}`))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = (&sampler{answers: a}).HandleSampling(ctx, &conduit.SamplingRequest{})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)

	a, err = parseAnswers([]byte(`{"elicitation": {"action": "cancel", "delay": "30ms"}}`))
	require.NoError(t, err)
	start = time.Now()
	res, err := (&elicitor{answers: a}).HandleElicitation(context.Background(), &conduit.ElicitationRequest{Mode: "form"})
	require.NoError(t, err)
	assert.Equal(t, "cancel", res.Action)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

func TestScriptedElicitation(t *testing.T) {
	ctx := context.Background()
	a, err := parseAnswers([]byte(contractAnswers))
	require.NoError(t, err)
	e := &elicitor{answers: a}
	assert.Equal(t, []string{"form", "url"}, newHandlers(&notifier{}, a, nil, samplingCommand{}).ElicitationModes)

	res, err := e.HandleElicitation(ctx, &conduit.ElicitationRequest{Mode: "form"})
	require.NoError(t, err)
	assert.Equal(t, &conduit.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, res)
	res.Content["name"] = "changed"

	res, err = e.HandleElicitation(ctx, &conduit.ElicitationRequest{Mode: "url", URL: "https://example.com"})
	require.NoError(t, err)
	assert.Equal(t, &conduit.ElicitResult{Action: "accept"}, res, "a URL accept carries no content")

	res, err = e.HandleElicitation(ctx, &conduit.ElicitationRequest{Mode: "form"})
	require.NoError(t, err)
	assert.Equal(t, "Ada", res.Content["name"], "each answer is a copy")

	a, err = parseAnswers([]byte(`{"elicitation": {"error": {"code": -32602, "message": "not now"}}}`))
	require.NoError(t, err)
	_, err = (&elicitor{answers: a}).HandleElicitation(ctx, &conduit.ElicitationRequest{Mode: "form"})
	var rpc *conduit.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, conduit.RPCError{Code: -32602, Message: "not now"}, *rpc)
}

func TestHandleLog(t *testing.T) {
	var buf bytes.Buffer
	n := &notifier{w: &buf, logger: newLogger(&buf, 0, false)}
	nc := conduit.NotificationContext{}
	n.HandleLog(context.Background(), nc, &conduit.LoggingMessage{Level: "info", Logger: "db", Data: "connected"})
	n.HandleLog(context.Background(), nc, &conduit.LoggingMessage{Level: "error", Data: map[string]any{"n": 1}})
	assert.Equal(t, "[info] db: connected\n[error] {\"n\":1}\n", buf.String())

	buf.Reset()
	n.json = true
	n.HandleLog(context.Background(), nc, &conduit.LoggingMessage{Level: "info", Data: "x"})
	n.HandleLog(context.Background(), nc, &conduit.LoggingMessage{Level: "warning", Logger: "l", Data: []any{1, "a"}})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		assert.Len(t, m, 3)
		assert.Contains(t, m, "level")
		assert.Contains(t, m, "logger")
		assert.Contains(t, m, "data")
	}
	assert.Equal(t, `{"level":"info","logger":"","data":"x"}`, lines[0])
}

func TestObjectArg(t *testing.T) {
	for _, ok := range []string{`{}`, `{"a": 1}`, ` {"nested": {"x": [1, 2]}} `} {
		raw, err := objectArg("ARGS_JSON", ok)
		require.NoError(t, err, ok)
		assert.True(t, json.Valid(raw))
	}
	for _, bad := range []string{``, `null`, `[]`, `"s"`, `1`, `{`, `{} {}`, `{"a":1}x`, `a=b`} {
		_, err := objectArg("ARGS_JSON", bad)
		require.Error(t, err, bad)
		assert.Equal(t, exitUsage, exitCode(err), bad)
	}
}

func TestExitCode(t *testing.T) {
	ctx := context.Background()
	assert.Equal(t, exitOK, exitCode(nil))
	assert.Equal(t, exitUsage, exitCode(errors.New("from cobra")))
	assert.Equal(t, exitUsage, exitCode(usagef("x")))
	connErr := &conduit.Error{Kind: conduit.KindTransport, Message: "could not connect", Err: errors.New("exec: not found")}
	assert.Equal(t, exitConnect, exitCode(connectFailed(ctx, connErr)))
	assert.Equal(t, "could not start the server: exec: not found", connectFailed(ctx, connErr).Error())
	hs := &conduit.Error{Kind: conduit.KindTimeout, Method: "initialize"}
	assert.Equal(t, exitConnect, exitCode(connectFailed(ctx, hs)))
	assert.Equal(t, exitFailed, exitCode(callFailed(ctx, &conduit.Error{Kind: conduit.KindRPC, RPC: &conduit.RPCError{Code: -32602}})))
	assert.Equal(t, exitFailed, exitCode(callFailed(ctx, &conduit.Error{Kind: conduit.KindTimeout})))
	assert.Equal(t, exitFailed, exitCode(callFailed(ctx, &conduit.Error{Kind: conduit.KindInputHandler})))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.Equal(t, exitFailed, exitCode(connectFailed(cancelled, hs)), "Ctrl-C while connecting is not a connection failure")
	err := callFailed(cancelled, &conduit.Error{Kind: conduit.KindCancelled})
	assert.Equal(t, exitFailed, exitCode(err))
	assert.Contains(t, err.Error(), "interrupted")

	r := reportOf(callFailed(ctx, &conduit.Error{Kind: conduit.KindRPC, Method: "tools/call", RPC: &conduit.RPCError{Code: -32602, Message: "unknown tool"}}))
	assert.Equal(t, conduit.KindRPC, r.Kind)
	require.NotNil(t, r.Code)
	assert.Equal(t, -32602, *r.Code)
	assert.Equal(t, exitFailed, r.Exit)
	assert.NotContains(t, r.Error, "conduit: ")
}

func TestOptionsCheck(t *testing.T) {
	good := options{era: "auto"}
	require.NoError(t, good.check())
	for _, era := range []string{"auto", "legacy"} {
		o := options{era: era, protocolVersion: "2025-06-18", logLevel: "warning", headers: []string{"A=b", "X-Y="}}
		require.NoError(t, o.check(), era)
	}
	bad := map[string]struct {
		o    options
		want string
	}{
		"tasks and no tasks":         {options{era: "auto", tasks: true, noTasks: true}, "give --tasks or --no-tasks, not both"},
		"unknown era":                {options{era: "new"}, "want auto, legacy or modern"},
		"modern version, legacy era": {options{era: "legacy", protocolVersion: "2026-07-28"}, "is not of the legacy era"},
		"legacy version, modern era": {options{era: "modern", protocolVersion: "2025-06-18"}, "--protocol-version 2025-06-18 is not of the modern era"},
		"unknown version":            {options{era: "auto", protocolVersion: "2024-10-07"}, "--protocol-version"},
		"unknown transport":          {options{era: "auto", transport: "ws"}, "--transport \"ws\": want stdio, http or sse"},
		"sse is legacy":              {options{era: "modern", transport: "sse"}, "--transport sse carries the legacy era only"},
		"negative timeout":           {options{era: "auto", timeout: -time.Second}, "--timeout"},
		"negative total":             {options{era: "auto", maxTotalTimeout: -time.Second}, "--max-total-timeout"},
		"negative handler":           {options{era: "auto", handlerTimeout: -time.Second}, "--handler-timeout"},
		"negative max":               {options{era: "auto", maxServerRequests: -1}, "--max-server-requests"},
		"header without =":           {options{era: "auto", headers: []string{"Authorization"}}, "--header"},
		"header without name":        {options{era: "auto", headers: []string{"=v"}}, "--header"},
		"unknown log level":          {options{era: "auto", logLevel: "verbose"}, "--log-level"},
	}
	for name, tc := range bad {
		err := tc.o.check()
		require.Error(t, err, name)
		assert.Equal(t, exitUsage, exitCode(err), name)
		assert.Contains(t, err.Error(), tc.want, name)
	}
}

// Usage errors are found before any server is started.
func TestUsageErrorsInProcess(t *testing.T) {
	answers := writeFile(t, "bad.json", `{"sampling": {"reslt": {}}}`)
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"missing TOOL":       {[]string{"call", "--", "never-started"}, "missing TOOL"},
		"ARGS_JSON array":    {[]string{"call", "t", "[1]", "--", "never-started"}, "ARGS_JSON must be a JSON object"},
		"ARGS_JSON invalid":  {[]string{"call", "t", "{", "--", "never-started"}, "ARGS_JSON must be a JSON object"},
		"no server":          {[]string{"call", "t"}, "no server"},
		"empty server":       {[]string{"call", "t", "--"}, "no server command after --"},
		"server without --":  {[]string{"call", "t", "{}", "never-started"}, "put the server command after --"},
		"url and command":    {[]string{"call", "--url", "http://127.0.0.1:1/mcp", "t", "--", "never-started"}, "not both"},
		"url not a URL":      {[]string{"call", "--url", "not-a-url", "t"}, `--url "not-a-url": want an http:// or https:// URL`},
		"url without host":   {[]string{"call", "--url", "http:///mcp", "t"}, `--url "http:///mcp": want an http:// or https:// URL`},
		"url other scheme":   {[]string{"tools", "--url", "ftp://example.com/"}, `--url "ftp://example.com/": want an http:// or https:// URL`},
		"era bogus":          {[]string{"call", "--era", "bogus", "t", "--", "never-started"}, "want auto, legacy or modern"},
		"unknown flag":       {[]string{"call", "--nope", "t", "--", "never-started"}, "unknown flag: --nope"},
		"bad duration":       {[]string{"call", "--timeout", "soon", "t", "--", "never-started"}, "--timeout"},
		"bad count":          {[]string{"call", "--max-server-requests", "many", "t", "--", "never-started"}, "--max-server-requests"},
		"missing answers":    {[]string{"call", "--answers", filepath.Join(t.TempDir(), "none.json"), "t", "--", "never-started"}, "answers file"},
		"invalid answers":    {[]string{"call", "--answers", answers, "t", "--", "never-started"}, `unknown field "reslt"`},
		"unknown command":    {[]string{"frob"}, "unknown command"},
		"tools with args":    {[]string{"tools", "extra", "--", "never-started"}, "unexpected arguments"},
		"read without URI":   {[]string{"read", "--", "never-started"}, "missing URI"},
		"prompt without":     {[]string{"prompt", "--", "never-started"}, "missing NAME"},
		"prompt non-strings": {[]string{"prompt", "p", `{"a": 1}`, "--", "never-started"}, "must all be strings"},
		"prompt null":        {[]string{"prompt", "p", `{"a": "x", "b": null}`, "--", "never-started"}, "must all be strings"},
		"bad log level":      {[]string{"tools", "--log-level", "loud", "--", "never-started"}, "--log-level"},
		"bad roots":          {[]string{"tools", "--roots", "", "--", "never-started"}, "--roots"},
		"audit unwritable":   {[]string{"tools", "--audit", filepath.Join(t.TempDir(), "no", "such", "dir"), "--", "never-started"}, "--audit"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runInProcess(t, tc.args...)
			assert.Equal(t, exitUsage, r.code, r.String())
			assert.Contains(t, r.stderr, tc.want, r.String())
			assert.Empty(t, r.stdout)
		})
	}
}

func TestUsageErrorAsJSON(t *testing.T) {
	r := runInProcess(t, "call", "--json", "t", "[]", "--", "never-started")
	assert.Equal(t, exitUsage, r.code)
	var rep errorReport
	require.NoError(t, json.Unmarshal([]byte(r.stderr), &rep), r.String())
	assert.Equal(t, exitUsage, rep.Exit)
	assert.Contains(t, rep.Error, "ARGS_JSON")
}

func TestServerThatCannotStartInProcess(t *testing.T) {
	r := runInProcess(t, "call", "t", "--", filepath.Join(t.TempDir(), "no-such-server"))
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Contains(t, r.stderr, "could not start the server", r.String())
}

// A server that dies before the handshake: exit 3, and its hidden stderr
// is shown.
func TestServerThatDiesInProcess(t *testing.T) {
	r := runInProcess(t, "tools", "--", "sh", "-c", "echo 'fatal: no config' >&2; exit 4")
	assert.Equal(t, exitConnect, r.code, r.String())
	assert.Contains(t, r.stderr, "could not connect", r.String())
	assert.Contains(t, r.stderr, "fatal: no config", r.String())
}

func TestHelpListsTheContractFlags(t *testing.T) {
	contract := []string{
		"--url", "--server-id", "--era", "--protocol-version", "--timeout", "--max-total-timeout", "--header",
		"--answers", "--roots", "--handler-timeout", "--max-server-requests", "--audit", "--log-level", "--json",
	}
	for _, cmd := range []string{"call", "tools", "resources", "prompts", "read", "prompt"} {
		r := runInProcess(t, cmd, "--help")
		assert.Equal(t, exitOK, r.code, r.String())
		for _, f := range contract {
			assert.Contains(t, r.stdout, "  "+f+" ", "%s --help lists %s", cmd, f)
		}
		for _, s := range []string{"Connection flags:", "Handler flags:", "-v, --verbose", "Exit status: 0 success", `"sampling":`} {
			assert.Contains(t, r.stdout, s, "%s --help", cmd)
		}
	}
	r := runInProcess(t, "--help")
	assert.Equal(t, exitOK, r.code)
	for _, cmd := range []string{"call", "tools", "resources", "prompts", "read", "prompt"} {
		assert.Contains(t, r.stdout, "  "+cmd+" ")
	}
}

// Every command's --help describes the CLI as it is: interactive prompts
// at a terminal, HTTP as well as stdio, the demo's --scripted. Sentences
// that were once true are gone.
func TestHelpIsCurrent(t *testing.T) {
	stale := []string{
		"interactive prompts are not available yet",
		"The server runs as a subprocess speaking stdio",
		"from a scripted answers file, and prints the result",
		"Without --answers, a built-in handler answers",
		"TOOL [ARGS_JSON] -- COMMAND",
		"[flags] -- COMMAND",
		"URI -- COMMAND",
		"the protocol era: auto|legacy|modern",
	}
	server := []string{"call", "tools", "resources", "prompts", "read", "prompt"}
	want := map[string][]string{
		"": {
			"At a terminal you answer each request yourself;\n--answers FILE answers them from a scripted file.",
			"Give the server as a command after -- (a subprocess speaking stdio) or as\n--url URL (Streamable HTTP, falling back to the older HTTP+SSE transport when\nthe server refuses it; --transport picks one).",
			"  conduit call --url http://127.0.0.1:8080/mcp test_simple_text\n",
			"  conformance  Run one client scenario",
			"  demo         Watch the client answer",
		},
		"demo": {
			"At a terminal you answer each request yourself (about 20 prompts); --scripted,\nor a run without a terminal, lets the built-in scripted handler answer instead:",
			"  conduit demo --scripted\n",
			"      --scripted ",
			"non-interactively (the format of conduit call --help)\n",
			"critical, alert, emergency (default info)\n",
		},
		"conformance": {"conformance URL"},
	}
	for _, cmd := range server {
		want[cmd] = []string{
			"(--url URL | -- COMMAND [ARGS...])",
			"At a terminal (stdin is one) and without --answers, you answer each request\n  yourself",
			"Without a terminal and without --answers, the client offers no sampling and\n  no elicitation, and roots only with --roots.",
			"--era ERA ",
		}
	}
	for cmd, sentences := range want {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		r := runInProcess(t, args...)
		require.Equal(t, exitOK, r.code, r.String())
		for _, s := range stale {
			assert.NotContains(t, r.stdout, s, "conduit %s --help", cmd)
		}
		for _, s := range sentences {
			assert.Contains(t, r.stdout, s, "conduit %s --help", cmd)
		}
	}
}

func TestStderrTail(t *testing.T) {
	var tail stderrTail
	for i := range tailLines + 5 {
		tail.add(strings.Repeat("x", i))
	}
	got := tail.get()
	require.Len(t, got, tailLines)
	assert.Equal(t, strings.Repeat("x", 5), got[0])
	assert.Equal(t, strings.Repeat("x", tailLines+4), got[tailLines-1])
}

// oneLine is sanitize.Text: an escape sequence goes whole, no "[31m" left
// behind, and line breaks and tabs become one space.
func TestOneLine(t *testing.T) {
	for in, want := range map[string]string{
		"a\tb\x1bc":                      "a b",      // ESC c (terminal reset) goes whole
		"\x1b[31mred\x1b[0m tool":        "red tool", // CSI colour: no "[31m" residue
		"  x\r\ny\x00z\x07 ":             "x yz",
		"name\x1b]0;title\x07 after":     "name after", // OSC window title
		"\u202eevil\u2028line\x1b[2Kend": "evil lineend",
	} {
		assert.Equal(t, want, oneLine(in), "%q", in)
		assert.Equal(t, sanitize.Text(strings.TrimSpace(in), 0), oneLine(in), "%q: one implementation", in)
	}
	assert.Equal(t, "first", firstLine("  first\nsecond"))
	assert.Equal(t, "first", firstLine("\x1b[1mfirst\x1b[0m\nsecond"))
}

// A listing shows no C1 control (U+009B is an 8-bit CSI, U+009D an OSC)
// nor a bidi or invisible control a server put in a name or description:
// they reorder or rewrite the table the person reads.
func TestListingsHoldNoTerminalControls(t *testing.T) {
	var b bytes.Buffer
	toolRows([]conduit.Tool{{Name: "rm\u202e\u2066fdp.exe", Description: "clear\u009b2J the screen, \u009d0;pwned\u009ctitle, in\u200bvisible"}})(&b)
	assert.Equal(t, "rmfdp.exe\tclear the screen, title, invisible\n", b.String())
}

func TestHumanLogger(t *testing.T) {
	var buf bytes.Buffer
	l := newLogger(&buf, 0, false)
	l.Info("hidden without -v")
	l.Warn("input handler failed", "method", "sampling/createMessage", "err", "context canceled", "empty", "")
	l.With("component", "x").WithGroup("g").Error("boom", "k", 1)
	assert.Equal(t, `conduit: warning: input handler failed method=sampling/createMessage err="context canceled" empty=""
conduit: error: boom component=x g.k=1
`, buf.String())

	buf.Reset()
	tail := &stderrTail{}
	server := slog.New(tailHandler{next: newLogger(&buf, 1, false).Handler(), tail: tail})
	server.LogAttrs(context.Background(), slog.LevelInfo, "listening on stdio", slog.String("stream", "stderr"))
	assert.Equal(t, "server: listening on stdio\n", buf.String())
	assert.Equal(t, []string{"listening on stdio"}, tail.get())

	buf.Reset()
	server = slog.New(tailHandler{next: newLogger(&buf, 0, false).Handler(), tail: tail})
	server.LogAttrs(context.Background(), slog.LevelInfo, "second", slog.String("stream", "stderr"))
	assert.Empty(t, buf.String(), "the server's stderr is hidden without -v")
	assert.Equal(t, []string{"listening on stdio", "second"}, tail.get(), "but kept")

	buf.Reset()
	newLogger(&buf, 0, true).Warn("w", "k", "v")
	var m map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &m))
	assert.Equal(t, "WARN", m["level"])
	assert.Equal(t, "v", m["k"])
}

func TestNeedsTasks(t *testing.T) {
	rpc := func(code int, data string) error {
		return &conduit.Error{Kind: conduit.KindRPC, Method: "tools/call", RPC: &conduit.RPCError{Code: code, Message: "Missing capability", Data: json.RawMessage(data)}}
	}
	assert.True(t, needsTasks(rpc(-32021, `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)))
	assert.False(t, needsTasks(rpc(-32021, `{"requiredCapabilities":{"elicitation":{}}}`)), "another capability")
	assert.False(t, needsTasks(rpc(-32601, `{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`)), "another code")
	assert.False(t, needsTasks(errors.New("boom")))
}

// An answers file's numbers reach the server as written: an integer past
// 2^53 or a decimal with more digits than a float64 holds is not rounded.
func TestScriptedElicitationNumbersAsWritten(t *testing.T) {
	a, err := parseAnswers([]byte(`{"elicitation": {"action": "accept", "content": {"id": 9007199254740993, "ratio": 0.10000000000000000001}}}`))
	require.NoError(t, err)
	res, err := (&elicitor{answers: a}).HandleElicitation(context.Background(), &conduit.ElicitationRequest{Mode: "form"})
	require.NoError(t, err)
	b, err := json.Marshal(res.Content)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"id":9007199254740993`)
	assert.Contains(t, string(b), `"ratio":0.10000000000000000001`)
}

// A result whose text block is its structured content as JSON (as the
// specification asks a tool to send it) is printed once; structured
// content that no text repeats is printed after the text.
func TestPrintCallResultStructuredOnce(t *testing.T) {
	print := func(res *conduit.CallToolResult) string {
		var out bytes.Buffer
		require.NoError(t, newApp(streams{out: &out, err: io.Discard}).printCallResult(res))
		return out.String()
	}
	same := &conduit.CallToolResult{
		Content:           []conduit.ContentBlock{{Type: "text", Text: "{\n  \"temperature\": 22.5,\n  \"unit\": \"C\"\n}"}},
		StructuredContent: json.RawMessage(`{"unit":"C","temperature":22.5}`),
	}
	assert.Equal(t, "{\n  \"temperature\": 22.5,\n  \"unit\": \"C\"\n}\n", print(same))
	other := &conduit.CallToolResult{
		Content:           []conduit.ContentBlock{{Type: "text", Text: "It is 22.5 °C"}},
		StructuredContent: json.RawMessage(`{"unit":"C","temperature":22.5}`),
	}
	assert.Equal(t, "It is 22.5 °C\n{\"unit\":\"C\",\"temperature\":22.5}\n", print(other))
}

// An answers file's "servers" entries answer for one server each (by its
// id, its name under --config): a kind an entry gives replaces the file's;
// a kind only some entries give is declared, and refused -32601 to a
// server without it.
func TestAnswersScopedByServer(t *testing.T) {
	a, err := parseAnswers([]byte(`{
		"elicitation": {"action": "accept", "content": {"name": "Ada"}},
		"roots": ["file:///shared"],
		"servers": {
			"files": {"roots": ["file:///srv/files"], "elicitation": {"action": "decline"}},
			"llm": {"sampling": {"result": {"content": {"type": "text", "text": "from llm's entry"}}}}
		}}`))
	require.NoError(t, err)
	h := newHandlers(&notifier{}, a, nil, samplingCommand{})
	require.NotNil(t, h.Sampling, "declared: one server's entry gives it")
	ctx := context.Background()
	rc := func(server string) conduit.RequestContext { return conduit.RequestContext{ServerID: server} }

	res, err := h.Roots(ctx, &conduit.RootsRequest{RequestContext: rc("files")})
	require.NoError(t, err)
	assert.Equal(t, []conduit.Root{{URI: "file:///srv/files"}}, res.Roots, "the server's own roots replace the file's")
	res, err = h.Roots(ctx, &conduit.RootsRequest{RequestContext: rc("other")})
	require.NoError(t, err)
	assert.Equal(t, []conduit.Root{{URI: "file:///shared"}}, res.Roots)

	el, err := h.Elicitation(ctx, &conduit.ElicitationRequest{RequestContext: rc("files"), Mode: "form"})
	require.NoError(t, err)
	assert.Equal(t, "decline", el.Action)
	el, err = h.Elicitation(ctx, &conduit.ElicitationRequest{RequestContext: rc("llm"), Mode: "form"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "Ada"}, el.Content, "an entry without elicitation takes the file's")

	sr, err := h.Sampling(ctx, &conduit.SamplingRequest{RequestContext: rc("llm")})
	require.NoError(t, err)
	assert.Equal(t, "from llm's entry", sr.Content.Blocks[0].Text)
	_, err = h.Sampling(ctx, &conduit.SamplingRequest{RequestContext: rc("files")})
	var rpc *conduit.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, conduit.RPCError{Code: -32601, Message: `Method not found: the answers file gives no sampling answer for server "files"`}, *rpc)

	for _, bad := range []struct{ file, want string }{
		{`{"servers": {"a": {"servers": {"b": {}}}}}`, `servers.a: "servers" only at the top of the file`},
		{`{"servers": {"a": {"colour": 1}}}`, `servers.a: invalid JSON: json: unknown field "colour"`},
		{`{"servers": {"": {}}}`, `servers: a server's id cannot be ""`},
	} {
		_, err := parseAnswers([]byte(bad.file))
		assert.EqualError(t, err, bad.want)
	}
}

// conduit tools says which kinds of input the client declared when it did
// not declare them all, and nothing when it did, or with --json.
func TestNoteDeclared(t *testing.T) {
	note := func(h conduit.Handlers, json bool) string {
		var errOut bytes.Buffer
		a := newApp(streams{err: &errOut})
		a.opts.json, a.declared = json, h
		a.noteDeclared()
		return errOut.String()
	}
	roots := func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) { return nil, nil }
	sampling := func(context.Context, *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) { return nil, nil }
	elicit := func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) { return nil, nil }
	assert.Equal(t, "conduit: note: this client declared roots, not sampling or elicitation: a server may list only the tools it can run with what a client declares (answer at a terminal, or give --answers FILE or --roots)\n",
		note(conduit.Handlers{Roots: roots}, false))
	assert.Empty(t, note(conduit.Handlers{Roots: roots, Sampling: sampling, Elicitation: elicit}, false))
	assert.Empty(t, note(conduit.Handlers{}, true))
}
