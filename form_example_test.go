package conduit_test

import (
	"fmt"

	"github.com/conduitmcp/conduit"
)

// A UI checks each value as it is typed, with the client's own rules, and
// words the failure from its Reason.
func ExampleCheckField() {
	lo, hi := 1.0, 5.0
	replicas := conduit.FormField{Name: "replicas", Kind: conduit.FieldInteger, Minimum: &lo, Maximum: &hi}
	for _, v := range []any{3, 2.5, 9} {
		if err := conduit.CheckField(replicas, v); err != nil {
			fmt.Printf("%v: %s (%s)\n", v, err.Reason, err)
			continue
		}
		fmt.Printf("%v: fits\n", v)
	}
	// Output:
	// 3: fits
	// 2.5: type (field "replicas" fails "type")
	// 9: maximum (field "replicas" fails "maximum")
}
