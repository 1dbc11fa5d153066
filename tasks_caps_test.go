package conduit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A session's tasks capability is decoded once, not at every call: a
// call's check of it allocates nothing after the first.
func TestServerTasksDecodedOnce(t *testing.T) {
	s := &session{}
	s.init.Capabilities = json.RawMessage(`{"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}}`)
	caps := serverTasks(s)
	assert.True(t, declared(caps.Cancel))
	assert.True(t, declared(caps.Requests.Tools.Call))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = serverTasks(s) }))
	assert.Equal(t, caps, serverTasks(s))
	none := &session{}
	none.init.Capabilities = json.RawMessage(`{"tools":{}}`)
	assert.Nil(t, serverTasks(none).Requests)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = serverTasks(none) }))
}
