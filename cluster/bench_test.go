package cluster

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/host"
	"github.com/conduitmcp/conduit/internal/testpeer"
)

func freePort(b *testing.B) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// BenchmarkClusterHop is the cost of a tool call through a cluster
// member's Servers: from the member that holds the server (a local actor
// message to its grain) and from another (a gRPC hop each way), beside the
// same call on a host in this process (no cluster). Two members in this
// process, on loopback; the everything-server's test_simple_text.
func BenchmarkClusterHop(b *testing.B) {
	server, err := testpeer.EverythingServer()
	if err != nil {
		b.Fatal(err)
	}
	cfg := host.Config{Servers: map[string]host.Server{"e": {Command: server, Conduit: host.Settings{Era: conduit.EraLegacy}}}}
	ctx := context.Background()
	call := func(b *testing.B, fn func() error) {
		for b.Loop() {
			if err := fn(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("host", func(b *testing.B) {
		h, err := host.New(cfg, host.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		call(b, func() error { _, err := h.CallTool(ctx, "e", "test_simple_text", nil); return err })
	})
	health := []int{freePort(b), freePort(b)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", health[0]), fmt.Sprintf("127.0.0.1:%d", health[1])}
	var members []*Member
	var servers []*Servers
	for i := range 2 {
		m, err := Join(cfg, Options{Name: "bench", Listen: fmt.Sprintf("127.0.0.1:%d", freePort(b)), HealthPort: health[i], Seeds: seeds, Refresh: 200 * time.Millisecond, Secret: []byte("bench-secret-0123456789")})
		if err != nil {
			b.Fatal(err)
		}
		members = append(members, m)
		servers = append(servers, m.Servers())
	}
	defer func() {
		for i := range members {
			servers[i].Close()
			members[i].Close()
		}
	}()
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Settle(wait, 2); err != nil {
			b.Fatal(err)
		}
	}
	holder, other := servers[0], servers[1]
	if servers[0].Holder("e") != members[0].Address() {
		holder, other = servers[1], servers[0]
	}
	for _, c := range []struct {
		name string
		s    *Servers
	}{{"holder", holder}, {"other", other}} {
		b.Run(c.name, func(b *testing.B) {
			call(b, func() error { _, err := c.s.CallTool(ctx, "e", "test_simple_text", nil); return err })
		})
	}
}
