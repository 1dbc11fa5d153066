package demoserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/conduitmcp/conduit"
	"github.com/conduitmcp/conduit/cmd/conduit/demoserver"
)

// A Conduit client connected to the demo server in process: the server is
// the transport.
func Example() {
	ctx := context.Background()
	srv := demoserver.New()
	defer srv.Close()
	client, err := conduit.Connect(ctx, srv, conduit.Options{Era: conduit.EraLegacy})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	tools, err := client.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.ServerInfo().Name, client.ProtocolVersion(), len(tools), "tools, the first", tools[0].Name)
	// Output: conduit-demo 2025-11-25 10 tools, the first profile_form
}
