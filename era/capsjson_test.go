package era

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

// CapabilitiesJSON is Capabilities encoded, for every revision and a
// spread of declarations; for a known revision the second call returns the
// first's bytes and allocates nothing.
func TestCapabilitiesJSONIsCapabilitiesEncodedOncePerProcess(t *testing.T) {
	decls := []Declared{
		{},
		{Sampling: true, SamplingTools: true, SamplingContext: true},
		{ElicitModes: []string{messages.ModeForm}, Roots: true},
		{Sampling: true, ElicitModes: []string{messages.ModeForm, messages.ModeURL}, Roots: true, Tasks: true},
	}
	versions := append(append([]string{}, LegacyVersions...), "2099-01-01")
	for _, d := range decls {
		for _, v := range versions {
			want, err := json.Marshal(d.Capabilities(v))
			require.NoError(t, err)
			got, err := d.CapabilitiesJSON(v)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(got), "%+v at %s", d, v)
		}
	}
	d := decls[2]
	first, _ := d.CapabilitiesJSON(messages.Version20251125)
	second, _ := d.CapabilitiesJSON(messages.Version20251125)
	assert.Same(t, &first[0], &second[0], "one encoding shared")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = d.CapabilitiesJSON(messages.Version20251125) }))
	// An unknown revision is encoded each time: the cache holds only what
	// Conduit speaks, so Options.ProtocolVersion cannot grow it.
	capsJSON.Range(func(k, _ any) bool { assert.True(t, known(k.(capsKey).version), k); return true })
}

// EncodeInitializeParams is InitializeParams encoded, offering the newest
// legacy revision when none is pinned.
func TestEncodeInitializeParamsIsInitializeParamsEncoded(t *testing.T) {
	d := Declared{Sampling: true, Roots: true}
	info := messages.Implementation{Name: "c", Version: "1"}
	for _, v := range []string{"", messages.Version20250326} {
		want, err := json.Marshal(InitializeParams(d, info, v))
		require.NoError(t, err)
		got, offered, err := EncodeInitializeParams(d, info, v)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got))
		wantV := v
		if v == "" {
			wantV = LegacyVersions[0]
		}
		assert.Equal(t, wantV, offered)
	}
}
