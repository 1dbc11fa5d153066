package actors_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conduitmcp/conduit"
)

func TestRootsWithheldByTheFilterAreCounted(t *testing.T) {
	inBothEras(t, func(t *testing.T, e eraCase) {
		h := &handler{roots: func(context.Context, *conduit.RootsRequest) (*conduit.ListRootsResult, error) {
			return &conduit.ListRootsResult{Roots: []conduit.Root{
				{URI: "file:///srv/repo"}, {URI: "https://example.com/"}, {URI: "file://other/x"}, {URI: "repo"},
			}}, nil
		}}
		c, srv := e.connect(t, conduit.Options{Handler: h})
		e.ask(t, c, srv, "roots/list", nil)
		assert.EqualValues(t, 3, c.Stats().RootsWithheld)
		e.ask(t, c, srv, "roots/list", nil)
		assert.EqualValues(t, 6, c.Stats().RootsWithheld)
	})
}
