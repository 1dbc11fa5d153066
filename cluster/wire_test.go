package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	pcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
)

// A server's JSON-RPC error crosses members as it is: the gateway of the
// calling member answers downstream with the same code, message and data.
func TestClusterWireErrorKeepsTheServersRPCError(t *testing.T) {
	in := &conduit.Error{Kind: conduit.KindRPC, Method: "tools/call", Message: "bad", RPC: &conduit.RPCError{Code: -32602, Message: "no such tool", Data: json.RawMessage(`{"tool":"x"}`)}}
	resp := encodeError(in)
	assert.Equal(t, "conduit.cluster.v1.Error", resp.MessageTypeName)
	out := decodeError("CallTool", resp.MessageData)
	var ce *conduit.Error
	require.True(t, errors.As(out, &ce))
	assert.Equal(t, conduit.KindRPC, ce.Kind)
	assert.Equal(t, &conduit.RPCError{Code: -32602, Message: "no such tool", Data: json.RawMessage(`{"tool":"x"}`)}, ce.RPC)
	assert.Equal(t, in.Error(), ce.Message)
}

// Any other error crosses as its text, a transport error; an answer that
// is not JSON is a protocol error, not a panic.
func TestClusterWireErrorOfPlainErrorsAndGarbage(t *testing.T) {
	out := decodeError("GetPrompt", encodeError(errors.New("disk full")).MessageData)
	assert.Equal(t, &conduit.Error{Kind: conduit.KindTransport, Method: "GetPrompt", Message: "disk full"}, out)
	var ce *conduit.Error
	require.True(t, errors.As(decodeError("GetPrompt", []byte("{")), &ce))
	assert.Equal(t, conduit.KindProtocol, ce.Kind)
}

// The lost-member error is a transport error whose connection ended, and
// names the member.
func TestClusterLostMemberError(t *testing.T) {
	err := errLost("CallTool", "s", lostMember{member: "127.0.0.1:7001 (abc)", why: "its connection dropped"})
	assert.True(t, errors.Is(err, conduit.ErrConnectionEnded))
	assert.Contains(t, err.Error(), `cluster member 127.0.0.1:7001 (abc) holding server "s" was lost with the request in flight: its connection dropped`)
}

// Join refuses what would make a member no other can reach, before it
// starts anything.
func TestClusterJoinRefusesUnreachableSettings(t *testing.T) {
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Listen: "127.0.0.1:7001", HealthPort: 6001, Seeds: []string{"127.0.0.1:6001"}}, "cluster: no cluster name"},
		{Options{Name: "c", Listen: "0.0.0.0:7001", HealthPort: 6001, Seeds: []string{"127.0.0.1:6001"}}, `cluster: listen address "0.0.0.0:7001": want HOST:PORT with a host the others can reach and a port`},
		{Options{Name: "c", Listen: "127.0.0.1:0", HealthPort: 6001, Seeds: []string{"127.0.0.1:6001"}}, `cluster: listen address "127.0.0.1:0": want HOST:PORT with a host the others can reach and a port`},
		{Options{Name: "c", Listen: "127.0.0.1", HealthPort: 6001, Seeds: []string{"127.0.0.1:6001"}}, `cluster: listen address "127.0.0.1": address 127.0.0.1: missing port in address`},
		{Options{Name: "c", Listen: "127.0.0.1:7001", Seeds: []string{"127.0.0.1:6001"}}, "cluster: no health port"},
		{Options{Name: "c", Listen: "127.0.0.1:7001", HealthPort: 6001}, "cluster: no seeds"},
		{Options{Name: "c", Listen: "127.0.0.1:7001", HealthPort: 6001, Seeds: []string{"127.0.0.1:6001"}, Secret: []byte("short")},
			"cluster: no shared secret of 16 bytes at least (--cluster-secret-file FILE or $CONDUIT_CLUSTER_SECRET, the same on every member): it seals the modern calls' requestStates that any member may receive"},
	} {
		m, err := Join(host.Config{}, c.opts)
		assert.Nil(t, m)
		assert.EqualError(t, err, c.want)
	}
}

// A client's or a gateway's own JSON-RPC error (an input refused, a
// requestState refused) crosses with its code, message and data, so the
// server, or the downstream client, sees the same error.
func TestClusterWireErrorKeepsABareRPCError(t *testing.T) {
	resp := encodeError(fmt.Errorf("wrapped: %w", &conduit.RPCError{Code: -32601, Message: "Method not found: roots/list", Data: json.RawMessage(`1`)}))
	var we wireError
	require.NoError(t, json.Unmarshal(resp.MessageData, &we))
	assert.Equal(t, wireError{Kind: conduit.KindRPC, Message: "wrapped: jsonrpc error -32601: Method not found: roots/list (data: 1)", Code: -32601, RPCMessage: "Method not found: roots/list", Data: json.RawMessage(`1`)}, we)
}

// Every member derives the same requestState key from the same secret,
// and another from another.
func TestClusterStateKeyIsTheSecretsOnly(t *testing.T) {
	a, b := stateKey([]byte("secret-0123456789")), stateKey([]byte("secret-0123456789"))
	assert.Equal(t, a, b)
	assert.Len(t, a, 32)
	assert.NotEqual(t, a, stateKey([]byte("secret-0123456780")))
	assert.NotEqual(t, []byte("secret-0123456789"), a[:17], "the key is not the secret")
}

// Undecodable relay requests are answered with an error, not a panic.
func TestClusterRelayRefusesGarbage(t *testing.T) {
	s := &Servers{m: &Member{}, calls: map[string]*call{}, draining: map[string]time.Time{}}
	for _, resp := range []*pcluster.GrainResponse{s.serveInput([]byte("{")), s.serveResume([]byte("[")), s.onDraining([]byte("7"))} {
		assert.Equal(t, typeError, resp.MessageTypeName)
	}
}

// A CancelResume ends the Resume it names: the gateway's wait for the
// call's next round ends as a local retry's does when its client goes.
func TestClusterCancelResumeEndsItsWait(t *testing.T) {
	s := &Servers{m: &Member{}, resumes: map[string]context.CancelFunc{}}
	waiting := make(chan struct{})
	s.HandleResume(func(ctx context.Context, _ *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
		close(waiting)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	done := make(chan *pcluster.GrainResponse)
	go func() {
		done <- s.serveResume([]byte(`{"timeoutMs":600000,"id":"r1","params":{"name":"t","requestState":"x"}}`))
	}()
	<-waiting
	s.cancelResume([]byte(`{"id":"other"}`))
	s.cancelResume([]byte(`{"id":"r1"}`))
	var resp *pcluster.GrainResponse
	select {
	case resp = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the Resume was not cancelled")
	}
	assert.Equal(t, typeError, resp.MessageTypeName)
	assert.Contains(t, string(resp.MessageData), "context canceled")
	s.mu.Lock()
	assert.Empty(t, s.resumes)
	s.mu.Unlock()
}
