package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "prefix": false is a server's NoPrefix; true or absent, the catalog's
// names; anything else is refused.
func TestParsePrefix(t *testing.T) {
	cfg, warnings, err := Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "s", "conduit": {"prefix": false}}, "b": {"command": "s", "conduit": {"prefix": true}}, "c": {"command": "s"}}}`), nil)
	require.NoError(t, err)
	assert.Empty(t, warnings)
	assert.True(t, cfg.Servers["a"].Conduit.NoPrefix)
	assert.False(t, cfg.Servers["b"].Conduit.NoPrefix)
	assert.False(t, cfg.Servers["c"].Conduit.NoPrefix)
	_, _, err = Parse("c.json", []byte(`{"mcpServers": {"a": {"command": "s", "conduit": {"prefix": "no"}}}}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `c.json: server "a": key "conduit.prefix": `)
}
