package era

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/conduitmcp/conduit/messages"
)

// capsKey is what Capabilities depends on: the declaration (its modes
// joined) and the version.
type capsKey struct {
	sampling, samplingTools, samplingContext, roots, tasks bool
	modes, version                                         string
}

// capsJSON holds CapabilitiesJSON's encodings for the revisions Conduit
// speaks: a few flags and at most two modes, so a handful of entries for a
// process however many clients it connects.
var capsJSON sync.Map // capsKey → json.RawMessage

// CapabilitiesJSON is Capabilities(version) encoded. For a revision
// Conduit speaks it is encoded once per process and declaration and shared:
// the caller must not modify it. Connecting a client then builds no maps
// for its capabilities (decision 60).
func (d Declared) CapabilitiesJSON(version string) (json.RawMessage, error) {
	if !known(version) {
		return json.Marshal(d.Capabilities(version))
	}
	k := capsKey{d.Sampling, d.SamplingTools, d.SamplingContext, d.Roots, d.Tasks, strings.Join(d.ElicitModes, ","), version}
	if b, ok := capsJSON.Load(k); ok {
		return b.(json.RawMessage), nil
	}
	b, err := json.Marshal(d.Capabilities(version))
	if err != nil {
		return nil, err
	}
	v, _ := capsJSON.LoadOrStore(k, json.RawMessage(b))
	return v.(json.RawMessage), nil
}

// EncodeInitializeParams is InitializeParams(d, info, version) encoded,
// its capabilities those of CapabilitiesJSON, and the version it offers.
func EncodeInitializeParams(d Declared, info messages.Implementation, version string) (params json.RawMessage, offered string, err error) {
	if version == "" {
		version = LegacyVersions[0]
	}
	caps, err := d.CapabilitiesJSON(version)
	if err != nil {
		return nil, "", err
	}
	params, err = json.Marshal(struct {
		ProtocolVersion string                  `json:"protocolVersion"`
		Capabilities    json.RawMessage         `json:"capabilities"`
		ClientInfo      messages.Implementation `json:"clientInfo"`
	}{version, caps, info})
	return params, version, err
}
