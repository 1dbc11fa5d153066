package era

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withMetaByMarshal is WithMeta as it was first written, through maps and
// json.Marshal: the reference the one-scan version is held to.
func withMetaByMarshal(params json.RawMessage, extra map[string]json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if err := json.Unmarshal(params, &obj); err != nil {
			return nil, err
		}
	}
	for k, v := range extra {
		obj[k] = v
	}
	if meta != nil {
		merged := map[string]json.RawMessage{}
		if old, ok := obj["_meta"]; ok {
			if err := json.Unmarshal(old, &merged); err != nil {
				return nil, err
			}
		}
		for k, v := range meta {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			merged[k] = b
		}
		b, err := json.Marshal(merged)
		if err != nil {
			return nil, err
		}
		obj["_meta"] = b
	}
	return json.Marshal(obj)
}

func TestWithMetaIsMarshal(t *testing.T) {
	meta := map[string]any{MetaProtocolVersion: "2026-07-28", MetaClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, MetaClientInfo: map[string]any{"name": "a<b>", "version": "1"}}
	for _, p := range []string{``, `null`, `{}`, `{"name":"x","arguments":{"q":"a & b"}}`, ` { "name" : "x" , "_meta" : { "progressToken" : 7 , "io.modelcontextprotocol/protocolVersion" : "old" } } `, "{\"t\":\"\u2028\"}"} {
		for _, extra := range []map[string]json.RawMessage{nil, {"inputResponses": json.RawMessage(`{"k":{"action":"accept"}}`), "requestState": json.RawMessage(`"s 1"`)}} {
			for _, m := range []map[string]any{nil, meta} {
				want, err := withMetaByMarshal(json.RawMessage(p), extra, m)
				require.NoError(t, err)
				got, err := WithMeta(json.RawMessage(p), extra, m)
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got), "params %s", p)
			}
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"_meta":3}`} {
		_, err := WithMeta(json.RawMessage(bad), nil, meta)
		assert.Error(t, err, bad)
	}
}
