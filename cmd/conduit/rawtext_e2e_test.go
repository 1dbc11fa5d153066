package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// End-to-end: nothing a server wrote reaches the terminal raw. The server
// is this test binary run again with CONDUIT_RAWTEXT_SERVER=1 (TestMain
// hands over to rawTextServer); every text it writes is evilText.

// rawTextServerEnv makes the test binary the raw-text server when "1".
const rawTextServerEnv = "CONDUIT_RAWTEXT_SERVER"

// evilText carries what a terminal acts on: OSC 52 (writes the clipboard),
// OSC 0 (sets the window title), CSI 2J (clears the screen), its C1 form,
// RLO (reorders the line), LS (forges a line), CR LF.
const evilText = "a\x1b]52;c;cHduZWQ=\x07b\x1b]0;pwned\x07c\x1b[2Jd\u009b2Je\u202elive\u2028forged\r\nline2"

// Its forms as the CLI prints them.
const (
	// evilLines is sanitize.Lines(evilText): on stdout at a terminal.
	evilLines = "abcdelive\nforged\nline2"
	// evilOneLine is sanitize.Text(evilText, 0): on the final error line.
	evilOneLine = "abcdelive forged line2"
	// evilJSON is evilText as a JSON string with --json.
	evilJSON = `"a\u001b]52;c;cHduZWQ=\u0007b\u001b]0;pwned\u0007c\u001b[2Jd\u009b2Je\u202elive\u2028forged\r\nline2"`
)

// rawTextServer is a legacy MCP server whose tools/call "text" answers
// with evilText in a text block, in a resource link's name and in the
// structured content; tools/call "fail" answers a JSON-RPC error whose
// message is evilText; resources/read and prompts/get answer evilText.
// It writes evilText on its stderr first.
func rawTextServer(r io.Reader, w io.Writer) int {
	fmt.Fprintf(os.Stderr, "%s\n", evilText)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	evil, _ := json.Marshal(evilText)
	send := func(id json.RawMessage, field, body string) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,%q:%s}`+"\n", id, field, body)
	}
	for sc.Scan() {
		var m hostileMsg
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" || len(m.ID) == 0 {
			continue
		}
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		switch {
		case m.Method == "initialize":
			send(m.ID, "result", `{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"raw","version":"1"}}`)
		case m.Method == "tools/call" && p.Name == "fail":
			send(m.ID, "error", fmt.Sprintf(`{"code":-32000,"message":%s}`, evil))
		case m.Method == "tools/call":
			send(m.ID, "result", fmt.Sprintf(`{"content":[{"type":"text","text":%s},{"type":"resource_link","uri":"file:///x","name":%s}],"structuredContent":{"s":%s}}`, evil, evil, evil))
		case m.Method == "resources/read":
			send(m.ID, "result", fmt.Sprintf(`{"contents":[{"uri":"file:///x","text":%s}]}`, evil))
		case m.Method == "prompts/get":
			send(m.ID, "result", fmt.Sprintf(`{"messages":[{"role":"user","content":{"type":"text","text":%s}}]}`, evil))
		default:
			send(m.ID, "result", `{}`)
		}
	}
	return 0
}

// rawTextServerCmd is the server command, after --.
func rawTextServerCmd(t *testing.T) []string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{"env", rawTextServerEnv + "=1", self}
}

// Without a terminal the final error line is sanitised all the same (it
// is one line of diagnostics); the result text is written as the server
// wrote it (piped, it is data), its JSON pieces escaped.
func TestServerTextPiped(t *testing.T) {
	srv := rawTextServerCmd(t)

	r := runCLI(t, append([]string{"call", "fail", "--"}, srv...)...)
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Equal(t, "conduit: tools/call: rpc: jsonrpc error -32000: "+evilOneLine+"\n", r.stderr)

	r = runCLI(t, append([]string{"call", "text", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, evilText+"\n"+
		`{"type":"resource_link","uri":"file:///x","name":`+evilJSON+"}\n"+
		`{"s":`+evilJSON+"}\n", r.stdout)

	// The server's stderr lines, with -v, are one sanitised line each.
	r = runCLI(t, append([]string{"call", "-v", "text", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stderr, "server: abcdelive forged\nserver: line2\n", r.String())
	assert.NotContains(t, r.stderr, "\x1b", r.String())
}

// With --json every output escapes the controls and bidirectional
// characters encoding/json leaves raw: exact bytes for the result, the
// resource, the prompt and the final error.
func TestServerTextJSON(t *testing.T) {
	srv := rawTextServerCmd(t)

	r := runCLI(t, append([]string{"call", "--json", "fail", "--"}, srv...)...)
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Equal(t, `{"error":"tools/call: rpc: jsonrpc error -32000: `+strings.Trim(evilJSON, `"`)+`","exit":1,"kind":"rpc","code":-32000}`+"\n", r.stderr)

	r = runCLI(t, append([]string{"call", "--json", "text", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, `{
  "content": [
    {
      "type": "text",
      "text": `+evilJSON+`
    },
    {
      "type": "resource_link",
      "uri": "file:///x",
      "name": `+evilJSON+`
    }
  ],
  "structuredContent": {
    "s": `+evilJSON+`
  }
}
`, r.stdout)

	r = runCLI(t, append([]string{"read", "--json", "file:///x", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, `"text": `+evilJSON+"\n", r.String())
	r = runCLI(t, append([]string{"prompt", "--json", "p", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stdout, `"text": `+evilJSON+"\n", r.String())

	// The server's stderr line, as a JSON log record with -v.
	r = runCLI(t, append([]string{"call", "--json", "-v", "text", "--"}, srv...)...)
	assert.Equal(t, exitOK, r.code, r.String())
	assert.Contains(t, r.stderr, `"msg":"a\u001b]52;c;cHduZWQ=\u0007b\u001b]0;pwned\u0007c\u001b[2Jd\u009b2Je\u202elive\u2028forged","stream":"stderr"}`, r.String())
	for _, c := range []string{"\x1b", "\u009b", "\u202e", "\u2028"} {
		assert.NotContains(t, r.stdout+r.stderr, c)
	}
}

// rawTmux runs `conduit ARGS` in a real terminal (tmux) whose clipboard
// takes OSC 52 (set-clipboard on: a sequence that gets through makes a
// paste buffer), and returns the screen once the command has ended.
func rawTmux(t *testing.T, args string) (tt *tmuxTerm, screen string) {
	t.Helper()
	requireTmux(t)
	cli, _ := binaries(t)
	conf := filepath.Join(t.TempDir(), "tmux.conf")
	require.NoError(t, os.WriteFile(conf, []byte("set -g set-clipboard on\nset -g allow-rename on\n"), 0o600))
	tt = &tmuxTerm{t: t, sock: fmt.Sprintf("conduit-test-%d-%d", os.Getpid(), tmuxServers.Add(1)), deadline: time.Now().Add(60 * time.Second)}
	tt.tmux("-f", conf, "new-session", "-d", "-s", "cli", "-x", "200", "-y", "50", "-c", t.TempDir(), "sh", "-c", cli+" "+args+"; echo EXIT=$?; sleep 60")
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tt.sock, "kill-server").Run() })
	return tt, tt.waitFor("EXIT=")
}

// At a terminal: the result's text shows as sanitize.Lines makes it, the
// final error line as sanitize.Text does; no clipboard write, no title, no
// cleared screen.
func TestServerTextAtATerminal(t *testing.T) {
	srv := strings.Join(rawTextServerCmd(t), " ")
	// The screen is compared whole by each test: a cleared screen, a line
	// reordered or forged, would show there.
	check := func(t *testing.T, tt *tmuxTerm) {
		t.Helper()
		assert.Empty(t, strings.TrimSpace(tt.tmux("list-buffers")), "OSC 52 wrote the clipboard")
		assert.NotEqual(t, "pwned", strings.TrimSpace(tt.tmux("display-message", "-p", "-t", "cli", "#{pane_title}")), "OSC 0 set the title")
	}

	t.Run("result", func(t *testing.T) {
		tt, screen := rawTmux(t, "call --era legacy text -- "+srv)
		assert.Equal(t, evilLines+"\n"+
			`{"type":"resource_link","uri":"file:///x","name":`+evilJSON+"}\n"+
			`{"s":`+evilJSON+"}\n"+
			"EXIT=0\n", strings.TrimRight(screen, "\n")+"\n")
		check(t, tt)
	})
	t.Run("error", func(t *testing.T) {
		tt, screen := rawTmux(t, "call --era legacy fail -- "+srv)
		assert.Equal(t, "conduit: tools/call: rpc: jsonrpc error -32000: "+evilOneLine+"\nEXIT=1\n", strings.TrimRight(screen, "\n")+"\n")
		check(t, tt)
	})
	t.Run("resource", func(t *testing.T) {
		tt, screen := rawTmux(t, "read --era legacy file:///x -- "+srv)
		assert.Equal(t, evilLines+"\nEXIT=0\n", strings.TrimRight(screen, "\n")+"\n")
		check(t, tt)
	})
	t.Run("prompt", func(t *testing.T) {
		tt, screen := rawTmux(t, "prompt --era legacy p -- "+srv)
		assert.Equal(t, "[user] "+evilLines+"\nEXIT=0\n", strings.TrimRight(screen, "\n")+"\n")
		check(t, tt)
	})
	t.Run("stderr", func(t *testing.T) {
		tt, screen := rawTmux(t, "call -v --era legacy text -- "+srv+" 2>&1 >/dev/null | grep server:")
		assert.Equal(t, "server: abcdelive forged\nserver: line2\nEXIT=0\n", strings.TrimRight(screen, "\n")+"\n")
		check(t, tt)
	})
	// --raw, asked for, prints the text as written: the clipboard and
	// the title change (which shows the checks above can see them).
	t.Run("raw", func(t *testing.T) {
		tt, _ := rawTmux(t, "call --raw --era legacy text -- "+srv)
		assert.Equal(t, "pwned", strings.TrimSpace(tt.tmux("display-message", "-p", "-t", "cli", "#{pane_title}")))
		assert.Equal(t, "pwned", tt.tmux("show-buffer"))
	})
}
