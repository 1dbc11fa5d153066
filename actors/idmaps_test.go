package actors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

// A map given back is cleared, and get always hands out an empty map,
// whether the pool had one or not (the race detector's pool drops some).
func TestIDMapsHandOutEmptyMaps(t *testing.T) {
	var p idMaps[*callRequest]
	p.put(nil) // an owner with no map gives back nothing
	m := p.get()
	require.NotNil(t, m)
	assert.Empty(t, m)
	for i := range 20 {
		m[messages.IntID(int64(i))] = &callRequest{}
	}
	p.put(m)
	assert.Empty(t, m, "cleared when given back")
	for range 3 {
		got := p.get()
		require.NotNil(t, got)
		assert.Empty(t, got)
		got[messages.IntID(1)] = &callRequest{}
		p.put(got)
	}
}

// The tracker's stop ends every call and gives its map back: none is left.
func TestTrackerStopEndsEveryCallAndKeepsNoMap(t *testing.T) {
	var tr tracker
	for i := range 10 {
		tr.start(messages.IntID(int64(i)), 0, 0, nil)
	}
	require.Len(t, tr.calls, 10)
	tr.stop()
	assert.Nil(t, tr.calls)
}
