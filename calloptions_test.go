package conduit

import "testing"

// TestCallOptionsAllocs: a call without options allocates nothing for
// them.
func TestCallOptionsAllocs(t *testing.T) {
	c := &Client{}
	if n := testing.AllocsPerRun(100, func() { _ = c.callOptions(nil) }); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
	if o := c.callOptions([]CallOption{WithTimeout(5)}); o.timeout != 5 {
		t.Fatalf("WithTimeout not applied: %+v", o)
	}
}
