package conduit_test

import (
	"fmt"

	"github.com/conduitmcp/conduit"
)

// A layer that forwards calls reads the assigns a caller gave.
func ExampleAssignsOf() {
	opts := []conduit.CallOption{conduit.WithAssigns(map[string]any{"tenant": "acme"})}
	fmt.Println(conduit.AssignsOf(opts...)["tenant"])
	fmt.Println(conduit.AssignsOf() == nil)
	// Output:
	// acme
	// true
}

// A layer that forwards calls reads the progress token a caller gave.
func ExampleProgressTokenOf() {
	fmt.Println(conduit.ProgressTokenOf(conduit.WithProgressToken("job-7")))
	fmt.Println(conduit.ProgressTokenOf() == nil)
	// Output:
	// job-7
	// true
}
