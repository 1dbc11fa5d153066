package cluster

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit"
)

// The capabilities a call declares cross to the member holding its server
// (a set, the empty one included, or none), so that its host reaches the
// connection told them (a legacy server's variant) or sends them in a
// modern request's _meta.
func TestClusterCallCarriesItsCapabilities(t *testing.T) {
	s, _ := tunnelServers()
	s.calls = map[string]*call{}
	for _, tc := range []struct {
		opts []conduit.CallOption
		wire string
		want []string
	}{
		{[]conduit.CallOption{conduit.WithCapabilities("roots", "sampling")}, `["sampling","roots"]`, []string{"sampling", "roots"}},
		{[]conduit.CallOption{conduit.WithCapabilities()}, `[]`, []string{}},
		{nil, ``, nil},
	} {
		req, done := s.called(context.Background(), tc.opts)
		data, err := json.Marshal(req)
		done()
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(data, &m))
		assert.Equal(t, tc.wire, string(m["capabilities"]))
		var got request
		require.NoError(t, json.Unmarshal(data, &got))
		names, ok := conduit.CapabilitiesOf(got.declared()...)
		assert.Equal(t, tc.want != nil, ok)
		assert.Equal(t, tc.want, names)
	}
}
