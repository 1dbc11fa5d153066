package conduit_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/actors"
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
	"github.com/conduitmcp/conduit/transport"
)

// The root package re-exports what everyday use needs from messages and
// guards: each name must be the original, not a look-alike.
func TestReExportsAreTheOriginals(t *testing.T) {
	for name, pair := range map[string][2]*conduit.RPCError{
		"ErrParse":                   {conduit.ErrParse, messages.ErrParse},
		"ErrInvalidRequest":          {conduit.ErrInvalidRequest, messages.ErrInvalidRequest},
		"ErrMethodNotFound":          {conduit.ErrMethodNotFound, messages.ErrMethodNotFound},
		"ErrInvalidParams":           {conduit.ErrInvalidParams, messages.ErrInvalidParams},
		"ErrInternal":                {conduit.ErrInternal, messages.ErrInternal},
		"ErrBusy":                    {conduit.ErrBusy, messages.ErrBusy},
		"ErrUnsupportedVersion":      {conduit.ErrUnsupportedVersion, messages.ErrUnsupportedVersion},
		"ErrMissingClientCapability": {conduit.ErrMissingClientCapability, messages.ErrMissingClientCapability},
		"ErrHeaderMismatch":          {conduit.ErrHeaderMismatch, messages.ErrHeaderMismatch},
	} {
		assert.Same(t, pair[1], pair[0], name)
	}
	for name, pair := range map[string][2]int{
		"CodeParseError":                 {conduit.CodeParseError, messages.CodeParseError},
		"CodeInvalidRequest":             {conduit.CodeInvalidRequest, messages.CodeInvalidRequest},
		"CodeMethodNotFound":             {conduit.CodeMethodNotFound, messages.CodeMethodNotFound},
		"CodeInvalidParams":              {conduit.CodeInvalidParams, messages.CodeInvalidParams},
		"CodeInternalError":              {conduit.CodeInternalError, messages.CodeInternalError},
		"CodeBusy":                       {conduit.CodeBusy, messages.CodeBusy},
		"CodeResourceNotFound":           {conduit.CodeResourceNotFound, messages.CodeResourceNotFound},
		"CodeHeaderMismatch":             {conduit.CodeHeaderMismatch, messages.CodeHeaderMismatch},
		"CodeMissingClientCapability":    {conduit.CodeMissingClientCapability, messages.CodeMissingClientCapability},
		"CodeUnsupportedProtocolVersion": {conduit.CodeUnsupportedProtocolVersion, messages.CodeUnsupportedProtocolVersion},
		"CodeURLElicitationRequired":     {conduit.CodeURLElicitationRequired, messages.CodeURLElicitationRequired},
		"CodeSamplingRejected":           {conduit.CodeSamplingRejected, messages.CodeSamplingRejected},
	} {
		assert.Equal(t, pair[1], pair[0], name)
	}
	for name, pair := range map[string][2]string{
		"ActionAccept":       {conduit.ActionAccept, messages.ActionAccept},
		"ActionDecline":      {conduit.ActionDecline, messages.ActionDecline},
		"ActionCancel":       {conduit.ActionCancel, messages.ActionCancel},
		"ModeForm":           {conduit.ModeForm, messages.ModeForm},
		"ModeURL":            {conduit.ModeURL, messages.ModeURL},
		"RefPrompt":          {conduit.RefPrompt, messages.RefPrompt},
		"RefResource":        {conduit.RefResource, messages.RefResource},
		"OutcomeAnswered":    {conduit.OutcomeAnswered, guards.OutcomeAnswered},
		"OutcomeRefused":     {conduit.OutcomeRefused, guards.OutcomeRefused},
		"OutcomeTimeout":     {conduit.OutcomeTimeout, guards.OutcomeTimeout},
		"OutcomeCancelled":   {conduit.OutcomeCancelled, guards.OutcomeCancelled},
		"OutcomeBusy":        {conduit.OutcomeBusy, guards.OutcomeBusy},
		"OutcomeRateLimited": {conduit.OutcomeRateLimited, guards.OutcomeRateLimited},
	} {
		assert.Equal(t, pair[1], pair[0], name)
	}
	assert.Equal(t, messages.Text("hi"), conduit.Text("hi"))
}

// A server's -32601 matches the root sentinel, and a refusal is audited
// with the root outcome and code.
func TestRootSentinelMatchesAServersError(t *testing.T) {
	clientSide, serverSide := transport.NewMemoryPair()
	defer serverSide.Close()
	go refusingServer(serverSide)
	var mu sync.Mutex
	var audited []conduit.AuditRecord
	c, err := conduit.Connect(context.Background(), transport.NewMemoryTransport(clientSide), conduit.Options{
		Audit: func(r conduit.AuditRecord) { mu.Lock(); audited = append(audited, r); mu.Unlock() },
	})
	require.NoError(t, err)
	defer c.Close()

	_, err = c.CallTool(context.Background(), "missing", nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, conduit.ErrMethodNotFound), "err: %v", err)
	assert.False(t, errors.Is(err, conduit.ErrInvalidParams), "err: %v", err)
	var rpc *conduit.RPCError
	require.ErrorAs(t, err, &rpc)
	assert.Equal(t, conduit.CodeMethodNotFound, rpc.Code)
	assert.Equal(t, "Unknown tool: missing", rpc.Message)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, audited, 1, "the roots/list request the client has no handler for")
	assert.Equal(t, conduit.OutcomeRefused, audited[0].Outcome)
	require.NotNil(t, audited[0].Code)
	assert.Equal(t, conduit.CodeMethodNotFound, *audited[0].Code)
}

// refusingServer is a legacy server that, asked for a tool, first asks the
// client for its roots (which it has no handler for), then says the tool
// does not exist.
func refusingServer(conn transport.Conn) {
	ctx := context.Background()
	send := func(v any) { b, _ := json.Marshal(v); _ = conn.Write(ctx, b) }
	var callID any
	for {
		msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m map[string]any
		_ = json.Unmarshal(msg.Data, &m)
		switch {
		case m["method"] == "server/discover":
			send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "error": map[string]any{"code": -32601, "message": "Method not found"}})
		case m["method"] == "initialize":
			send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": map[string]any{
				"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "script", "version": "1"}}})
		case m["method"] == "tools/call":
			callID = m["id"]
			send(map[string]any{"jsonrpc": "2.0", "id": "r1", "method": "roots/list"})
		case m["id"] == "r1":
			send(map[string]any{"jsonrpc": "2.0", "id": callID, "error": map[string]any{"code": -32601, "message": "Unknown tool: missing"}})
		}
	}
}

// Each default is written in one place: the root's constants are the
// runtime's, so that what the root documents is what bites (the root's
// DefaultMaxServerRequests was an 8 of its own that nothing read).
func TestDefaultsHaveOneSource(t *testing.T) {
	assert.Equal(t, actors.DefaultMaxServerRequests, conduit.DefaultMaxServerRequests)
	assert.Equal(t, actors.DefaultHandlerTimeout, conduit.DefaultHandlerTimeout)
	assert.Equal(t, actors.DefaultElicitationTimeout, conduit.DefaultElicitationTimeout)
}
