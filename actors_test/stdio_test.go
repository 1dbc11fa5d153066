package actors_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/transport"
)

func TestOverlongLineEndsTheConnectionWithAClearError(t *testing.T) {
	// A "server" that answers anything with a 2 MB line.
	srv := &transport.Command{Path: "sh", Args: []string{"-c", "read x; head -c 2000000 /dev/zero | tr '\\0' a; echo"}, MaxMessageBytes: 1 << 20, CloseTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := conduit.Connect(ctx, srv, conduit.Options{})
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind)
	assert.Contains(t, err.Error(), "transport: stdio message exceeds the limit of 1 MiB; raise transport.Command.MaxMessageBytes")
	var tooLong *transport.MessageTooLongError
	require.ErrorAs(t, err, &tooLong)
	assert.Equal(t, transport.MessageTooLongError{What: "stdio message", Limit: 1 << 20, Setting: "transport.Command.MaxMessageBytes"}, *tooLong)
}

func TestServerThatExitsMidCallFailsItWithTransport(t *testing.T) {
	// Answers initialize, then dies on the next request.
	script := `read init; echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"dies","version":"1"}}}'; read initialized; read call; exit 3`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := conduit.Connect(ctx, &transport.Command{Path: "sh", Args: []string{"-c", script}, CloseTimeout: time.Second}, conduit.Options{Era: conduit.EraLegacy})
	require.NoError(t, err)
	defer c.Close()
	_, err = c.CallTool(ctx, "anything", nil)
	var ce *conduit.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, conduit.KindTransport, ce.Kind)
	assert.Contains(t, err.Error(), "exit status 3")
	<-c.Done()
}
