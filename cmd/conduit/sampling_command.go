package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

// samplingCommand is --sampling-command: a program that produces a
// completion. It receives the sampling request (as the guards changed it)
// as JSON on stdin and prints the completion's text on stdout. Its answer
// is still approved by the person at the terminal unless --yes.
type samplingCommand struct {
	command string
	yes     bool
}

// maxCompletion bounds what the command may print.
const maxCompletion = 1 << 20

// errNoApprover refuses a completion nobody can approve.
var errNoApprover = &conduit.RPCError{Code: messages.CodeSamplingRejected,
	Message: "User rejected sampling request: no one at a terminal to approve the completion (--yes sends it without approval)"}

// run runs the command for r, honouring ctx, and returns its completion.
func (c samplingCommand) run(ctx context.Context, r *conduit.SamplingRequest) (string, error) {
	in, err := json.Marshal(r.Params)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "sh", "-c", c.command)
	cmd.Stdin = bytes.NewReader(in)
	var out, errOut bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: maxCompletion}
	cmd.Stderr = &limitedWriter{w: &errOut, n: 4096}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("--sampling-command %q: %w: %s", c.command, err, strings.TrimSpace(errOut.String()))
	}
	text := strings.TrimRight(out.String(), "\r\n")
	if text == "" {
		return "", errors.New("--sampling-command printed nothing")
	}
	return text, nil
}

// completion wraps text as the assistant's answer.
func (c samplingCommand) completion(text string) *conduit.CreateMessageResult {
	return &conduit.CreateMessageResult{Role: "assistant", Content: messages.Text(text), Model: "sampling-command", StopReason: "endTurn"}
}

// commandSampler answers sampling with the command when no person is there
// to approve: only with --yes; otherwise it refuses (-1).
type commandSampler struct{ cmd samplingCommand }

func (s *commandSampler) HandleSampling(ctx context.Context, r *conduit.SamplingRequest) (*conduit.CreateMessageResult, error) {
	if !s.cmd.yes {
		return nil, errNoApprover
	}
	text, err := s.cmd.run(ctx, r)
	if err != nil {
		return nil, err
	}
	return s.cmd.completion(text), nil
}

// limitedWriter keeps the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
