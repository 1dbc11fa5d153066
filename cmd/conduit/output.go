package main

import (
	"errors"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/conduitmcp/conduit/sanitize"
)

// What a server wrote never reaches the terminal raw: a server's text can
// carry escape sequences that write the clipboard (OSC 52), retitle the
// window (OSC 0) or clear the screen, and bidirectional controls and line
// separators that reorder or forge lines.
//
//   - Diagnostics on stderr (the final error line, which quotes a server's
//     JSON-RPC error message; the server's stderr lines; progress, task
//     status and log entries) are always sanitised: each is one line.
//   - What a command prints on stdout (a tool result's text, a resource's,
//     a prompt's messages) is cleaned with sanitize.Lines when stdout is a
//     terminal, unless --raw; piped or redirected it is written as the
//     server wrote it. JSON pieces among it (non-text blocks, structured
//     content) are escaped with sanitize.JSON, which changes no meaning.
//   - With --json, everything written on stdout and stderr goes through
//     jsonEscaper, so C1 controls, bidirectional and invisible characters
//     are \u escapes, as encoding/json already writes the C0 controls.

// jsonEscaper writes each Write's bytes, JSON text, with sanitize.JSON:
// every --json output goes through one. Each Write must be whole JSON
// values (a record, a line), as the CLI's writers do.
type jsonEscaper struct{ w io.Writer }

func (j jsonEscaper) Write(p []byte) (int, error) {
	if _, err := j.w.Write(sanitize.JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// setUpOutput runs before every command, its flags parsed: with --json
// both streams escape what JSON leaves raw; otherwise stdout's server text
// is sanitised when stdout is a terminal, unless --raw.
func (a *app) setUpOutput(*cobra.Command, []string) error {
	if a.opts.json {
		a.std.out = jsonEscaper{a.std.out}
		a.stderr.w = jsonEscaper{a.stderr.w}
		return nil
	}
	a.cleanOut = !a.opts.raw && writerIsTerminal(a.std.out)
	return nil
}

// serverText is text a server wrote, as it is printed on stdout: cleaned
// with sanitize.Lines at a terminal (see setUpOutput).
func (a *app) serverText(s string) string {
	if a.cleanOut {
		return sanitize.Lines(s)
	}
	return s
}

// errorLine is the final error's text as printed on stderr without
// --json: on one line, sanitised, since it may quote the server (a
// JSON-RPC error message). A usage error, in the user's own words and
// cobra's (whose suggestions take several lines), keeps its lines.
func errorLine(err error, code int) string {
	var e *exitError
	if code == exitUsage || errors.As(err, &e) && e.lines {
		return sanitize.Lines(err.Error())
	}
	return sanitize.Text(err.Error(), 0)
}

// writerIsTerminal reports whether w is a terminal.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
