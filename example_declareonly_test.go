package conduit_test

import (
	"context"
	"fmt"

	"github.com/conduitmcp/conduit"
)

// A call made WithCapabilities says what it declares; a layer that
// forwards it reads that back, in one order.
func ExampleCapabilitiesOf() {
	names, ok := conduit.CapabilitiesOf(conduit.WithCapabilities("roots", "elicitation.form"))
	fmt.Println(names, ok)
	_, ok = conduit.CapabilitiesOf()
	fmt.Println(ok)
	// Output:
	// [elicitation.form roots] true
	// false
}

// A client that handles elicitation and roots but tells the server only
// of roots (a legacy server learns it at initialize).
func ExampleOptions_declareOnly() {
	opts := conduit.Options{
		DeclareOnly: []string{"roots"},
		Handlers: conduit.Handlers{
			Elicitation: func(context.Context, *conduit.ElicitationRequest) (*conduit.ElicitResult, error) {
				return &conduit.ElicitResult{Action: conduit.ActionDecline}, nil
			},
			Roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
				return &conduit.ListRootsResult{}, nil
			},
		},
	}
	caps, _ := conduit.Capabilities(opts)
	for _, c := range caps {
		if c.Name == "elicitation.form" || c.Name == "roots" {
			fmt.Println(c.Name, c.Advertised, c.Why)
		}
	}
	// Output:
	// elicitation.form false Options.DeclareOnly leaves it out
	// roots true Options.Handlers.Roots is set
}
