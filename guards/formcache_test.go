package guards

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

const cachedSchema = `{"type":"object","properties":{"name":{"type":"string","default":"Ada"}},"required":["name"]}`

func TestFormCacheParsesASchemaOncePerVersion(t *testing.T) {
	var c formCache
	a, err := c.parse(messages.Version20251125, json.RawMessage(cachedSchema))
	require.NoError(t, err)
	b, err := c.parse(messages.Version20251125, json.RawMessage(cachedSchema))
	require.NoError(t, err)
	assert.Same(t, a, b, "the same schema and version: the cached form")
	// The version is part of the key: 2025-06-18 has no string defaults.
	_, err = c.parse(messages.Version20250618, json.RawMessage(cachedSchema))
	require.ErrorContains(t, err, "defaults other than on booleans do not exist in protocol version 2025-06-18")
	assert.Len(t, c.forms, 1, "a failure is not kept")
	_, err = c.parse(messages.Version20250618, json.RawMessage(cachedSchema))
	require.Error(t, err, "and fails again")
}

func TestFormCacheIsBounded(t *testing.T) {
	var c formCache
	for i := range formCacheEntries + 5 {
		_, err := c.parse(messages.Version20251125, json.RawMessage(fmt.Sprintf(`{"type":"object","title":"%d","properties":{}}`, i)))
		require.NoError(t, err)
		require.LessOrEqual(t, len(c.forms), formCacheEntries)
	}
	big := fmt.Sprintf(`{"type":"object","description":%q,"properties":{}}`, strings.Repeat("a", formCacheMaxSize))
	a, err := c.parse(messages.Version20251125, json.RawMessage(big))
	require.NoError(t, err)
	b, err := c.parse(messages.Version20251125, json.RawMessage(big))
	require.NoError(t, err)
	assert.NotSame(t, a, b, "a schema over the size bound is not kept")
}

// A handler that changes the fields it was given does not change what the
// next request with the same schema gets from the cached form.
func TestCachedFormHandsOutCopies(t *testing.T) {
	p := New(Config{})
	params := `{"message":"Name?","requestedSchema":` + cachedSchema + `}`
	req, r := p.Before(legacyIn(messages.MethodElicit, params))
	require.Nil(t, r)
	first := req.(*messages.ElicitationRequest)
	require.Len(t, first.Form, 1)
	first.Form[0].Name, first.Form[0].Default = "changed", "changed"
	req, r = p.Before(legacyIn(messages.MethodElicit, params))
	require.Nil(t, r)
	second := req.(*messages.ElicitationRequest)
	assert.Equal(t, "name", second.Form[0].Name)
	assert.Equal(t, "Ada", second.Form[0].Default)
}
