package transport

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// slowStreamable is a Streamable HTTP connection whose server refused the
// initialize (HTTP 400, read at once) while the Write of it has not
// returned yet: that Write ends with ErrClosed when the fallback closes
// the connection, as httpConn's does when its Close comes first.
type slowStreamable struct {
	refused chan Message
	closed  chan struct{}
}

func (s *slowStreamable) Write(ctx context.Context, data []byte) error {
	s.refused <- Message{Err: &HTTPStatusError{Status: http.StatusBadRequest}, Related: "1"}
	<-s.closed
	return ErrClosed
}

func (s *slowStreamable) Read(ctx context.Context) (Message, error) {
	select {
	case m := <-s.refused:
		return m, nil
	case <-s.closed:
		return Message{}, ErrClosed
	}
}

func (s *slowStreamable) Close() error {
	select {
	case <-s.closed:
	default:
		close(s.closed)
	}
	return nil
}

// The initialize's Write on the refused Streamable HTTP connection ends
// only after the fallback closed that connection: it is not a failed
// write, since the initialize went again over SSE (a loaded machine made
// `conduit call --url` fail with "write to the server failed").
func TestFallbackInitializeWriteOutlivesTheSwitch(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "sse", Version: "1"}, nil)
	old := &slowStreamable{refused: make(chan Message, 1), closed: make(chan struct{})}
	f := &fallbackConn{cur: old, sse: SSE{URL: sseSDKServer(t, server)}}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wrote := make(chan error, 1)
	go func() { wrote <- f.Write(ctx, []byte(legacyInit)) }()
	m, err := f.Read(ctx)
	if err != nil || m.Err != nil || !strings.Contains(string(m.Data), `"protocolVersion":"2024-11-05"`) {
		t.Fatalf("Read after the fallback: %s, %v, %v", m.Data, m.Err, err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("the initialize's Write: %v, want nil (it was sent again over SSE)", err)
	}
	if err := f.Write(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		t.Fatalf("a Write after the switch: %v", err)
	}
}
