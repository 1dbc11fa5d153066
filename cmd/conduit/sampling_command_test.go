package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/messages"
)

func TestSamplingCommandGetsTheRequestAsJSON(t *testing.T) {
	cmd := samplingCommand{command: `read -r req; case "$req" in *'"maxTokens":4096'*) echo "saw maxTokens";; *) echo "no: $req";; esac`, yes: true}
	s := &commandSampler{cmd: cmd}
	res, err := s.HandleSampling(context.Background(), &conduit.SamplingRequest{Params: conduitParams(4096)})
	require.NoError(t, err)
	assert.Equal(t, "saw maxTokens", res.Content.Blocks[0].Text)
	assert.Equal(t, "assistant", res.Role)
}

func TestSamplingCommandWithoutYesIsRefusedWithoutAnApprover(t *testing.T) {
	s := &commandSampler{cmd: samplingCommand{command: "echo never run"}}
	_, err := s.HandleSampling(context.Background(), &conduit.SamplingRequest{Params: conduitParams(10)})
	var rpc *conduit.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, -1, rpc.Code)
	assert.Contains(t, rpc.Message, "--yes")
}

func TestSamplingCommandFailureAndSilence(t *testing.T) {
	for _, c := range []struct{ command, want string }{
		{"echo oops >&2; exit 3", "exit status 3: oops"},
		{"cat >/dev/null", "printed nothing"},
	} {
		_, err := samplingCommand{command: c.command, yes: true}.run(context.Background(), &conduit.SamplingRequest{Params: conduitParams(1)})
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestE2ESamplingCommand(t *testing.T) {
	r := runCLI(t, "call", "--sampling-command", "cat >/dev/null; echo from the command", "--yes", "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	require.Equal(t, exitOK, r.code, r.String())
	assert.Equal(t, "LLM response: from the command\n", r.stdout)

	// Without --yes and without a terminal nobody approves: refused (-1).
	r = runCLI(t, "call", "--sampling-command", "echo from the command", "test_sampling", `{"prompt":"hi"}`, "--", server(t))
	assert.Equal(t, exitFailed, r.code, r.String())
	assert.Contains(t, r.stdout, "User rejected sampling request")
}

func conduitParams(maxTokens int) messages.CreateMessageParams {
	return messages.CreateMessageParams{Messages: []messages.SamplingMessage{{Role: "user", Content: messages.Text("hi")}}, MaxTokens: maxTokens}
}

func TestDevNullIsNotATerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer f.Close()
	assert.False(t, isTerminal(f))
}

func TestE2EProgressBar(t *testing.T) {
	for _, era := range []string{"legacy", "modern"} {
		r := runCLI(t, "call", "--era", era, "test_tool_with_progress", "--", server(t))
		require.Equal(t, exitOK, r.code, r.String())
		assert.Equal(t, "conduit-call\n", r.stdout, "the server saw the progress token")
		assert.Contains(t, r.stderr, "progress [--------------------]   0% Completed step 0 of 100\n")
		assert.Contains(t, r.stderr, "progress [##########----------]  50% Completed step 50 of 100\n")
		assert.Contains(t, r.stderr, "progress [####################] 100% Completed step 100 of 100\n")
	}
}

func TestProgressLine(t *testing.T) {
	line, ok := progressLine(&conduit.Progress{Token: int64(1), Progress: 3, Message: "ab"}, false)
	require.True(t, ok)
	assert.Equal(t, "progress 3 ab\n", string(line), "no total: a count")
	total := 20.0
	line, _ = progressLine(&conduit.Progress{Progress: 30, Total: &total}, false)
	assert.Contains(t, string(line), "100%", "clamped")
	line, _ = progressLine(&conduit.Progress{Progress: 5, Total: &total, Message: "m"}, true)
	assert.JSONEq(t, `{"progress":5,"total":20,"message":"m"}`, string(line))
}
