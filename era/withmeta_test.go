package era

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conduitmcp/conduit/messages"
)

// withMetaByMarshal is WithMeta as it was first written, through maps and
// json.Marshal: the reference the member-appending version is held to.
func withMetaByMarshal(params json.RawMessage, extra map[string]json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(params); len(t) > 0 && string(t) != "null" {
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
			if merged == nil { // "_meta": null, no members
				merged = map[string]json.RawMessage{}
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

// toMembers turns a map into members (in no particular order).
func toMembers(t *testing.T, m map[string]any) []Member {
	var out []Member
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b, err := json.Marshal(m[k])
		require.NoError(t, err)
		out = append(out, Member{Key: k, Value: b})
	}
	slices.Reverse(out) // With must not depend on their order
	return out
}

func rawMembers(t *testing.T, m map[string]json.RawMessage) []Member {
	var out []Member
	for k, v := range m {
		r, err := RawMember(k, v)
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

var withMetaParams = []string{``, `null`, ` null `, `{}`, `{"name":"x","arguments":{"q":"a & b"}}`,
	` { "name" : "x" , "_meta" : { "progressToken" : 7 , "io.modelcontextprotocol/protocolVersion" : "old" } } `,
	"{\"t\":\"\u2028\"}", `{"a":1,"a":2}`, `{"_meta":{"k":1,"k":{"x" : 2}},"_meta":{"b":null}}`,
	`{"k\u00e9":1,"a<b":"<>","\u00e9":[ 1 , 2 ],"Z":true,"_":null,"~":{}}`, `{"_meta":{}}`,
	`{"requestState":"old","inputResponses":{"old":1},"name":"n"}`, `{"s":"tab\there","n":-1.5e3}`}

func TestWithMetaIsMarshal(t *testing.T) {
	meta := map[string]any{MetaProtocolVersion: "2026-07-28", MetaClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, MetaClientInfo: map[string]any{"name": "a<b>", "version": "1"}}
	for _, p := range withMetaParams {
		for _, extra := range []map[string]json.RawMessage{nil, {"inputResponses": json.RawMessage(`{"k":{"action":"accept"}}`), "requestState": json.RawMessage(`"s 1 <&>"`)}} {
			for _, m := range []map[string]any{nil, meta} {
				want, err := withMetaByMarshal(json.RawMessage(p), extra, m)
				require.NoError(t, err)
				got, err := WithMeta(json.RawMessage(p), rawMembers(t, extra), toMembers(t, m))
				require.NoError(t, err)
				assert.Equal(t, string(want), string(got), "params %s", p)
			}
		}
	}
}

// FuzzWithMetaIsMarshal is TestWithMetaIsMarshal on arbitrary params, an
// arbitrary answer under an arbitrary key (MarshalObject, as each round's
// inputResponses) and an arbitrary request state (RawMember): each is
// held to json.Marshal, and WithMeta to the reference, failing where they
// fail.
func FuzzWithMetaIsMarshal(f *testing.F) {
	for _, p := range withMetaParams {
		f.Add(p, "k", `{"action":"accept"}`, `"s 1 <&>"`)
	}
	f.Add(`{"_meta":null}`, "a<b", ` [ "\u2028" ] `, ` { } `)
	f.Fuzz(func(t *testing.T, params, key, answer, state string) {
		extra := map[string]json.RawMessage{}
		answers := map[string]any{key: json.RawMessage(answer)}
		want, wantErr := json.Marshal(answers)
		got, err := MarshalObject(answers)
		if (err == nil) != (wantErr == nil) || err == nil && string(got) != string(want) {
			t.Fatalf("MarshalObject(%q: %q) = %s, %v; json.Marshal = %s, %v", key, answer, got, err, want, wantErr)
		}
		if err == nil {
			extra["inputResponses"] = got
		}
		want, wantErr = json.Marshal(json.RawMessage(state))
		m, err := RawMember("requestState", json.RawMessage(state))
		if (err == nil) != (wantErr == nil) || err == nil && string(m.Value) != string(want) {
			t.Fatalf("RawMember(%q) = %s, %v; json.Marshal = %s, %v", state, m.Value, err, want, wantErr)
		}
		if err == nil {
			extra["requestState"] = m.Value
		}
		meta := map[string]any{MetaProtocolVersion: "2026-07-28", MetaLogLevel: "<info>"}
		want, wantErr = withMetaByMarshal(json.RawMessage(params), extra, meta)
		got, err = WithMeta(json.RawMessage(params), rawMembers(t, extra), toMembers(t, meta))
		if (err == nil) != (wantErr == nil) || err == nil && string(got) != string(want) {
			t.Fatalf("WithMeta(%q) = %s, %v; the reference = %s, %v", params, got, err, want, wantErr)
		}
	})
}

// TestParamsWithEachRound: Params are read once and written again each
// round; no round's members stay behind in the next.
func TestParamsWithEachRound(t *testing.T) {
	raw := json.RawMessage(`{"name":"x","_meta":{"user":1}}`)
	p, err := ParseParams(raw)
	require.NoError(t, err)
	first := p.With([]Member{{Key: "requestState", Value: json.RawMessage(`"s1"`)}}, []Member{{Key: MetaLogLevel, Value: json.RawMessage(`"info"`)}})
	assert.Equal(t, `{"_meta":{"io.modelcontextprotocol/logLevel":"info","user":1},"name":"x","requestState":"s1"}`, string(first))
	second := p.With(nil, []Member{{Key: MetaProgressToken, Value: json.RawMessage(`7`)}})
	assert.Equal(t, `{"_meta":{"progressToken":7,"user":1},"name":"x"}`, string(second))
	assert.Equal(t, `{"_meta":{"user":1},"name":"x"}`, string(p.With(nil, nil)), "no meta: _meta as it was")
}

// TestWithMetaErrors: params that are not an object, or whose _meta is
// not, fail with json.Unmarshal's words, as they always have.
func TestWithMetaErrors(t *testing.T) {
	meta := []Member{{Key: MetaProtocolVersion, Value: json.RawMessage(`"2026-07-28"`)}}
	for _, bad := range []string{`[1]`, `"s"`, `1`, `{`, `{"a":}`, `{"a":1}x`} {
		var m map[string]json.RawMessage
		want := json.Unmarshal(json.RawMessage(bad), &m)
		require.Error(t, want, bad)
		_, err := WithMeta(json.RawMessage(bad), nil, meta)
		require.Error(t, err, bad)
		assert.Equal(t, "params must be a JSON object: "+want.Error(), err.Error())
	}
	for _, bad := range []string{`{"_meta":3}`, `{"_meta":[]}`, `{"_meta":"x"}`, `{"_meta":null,"a":1}`} {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(json.RawMessage(bad), &m)
		want := json.Unmarshal(m["_meta"], &m)
		_, err := WithMeta(json.RawMessage(bad), nil, meta)
		if want == nil { // null decodes to no members: nothing to refuse
			assert.NoError(t, err, bad)
			continue
		}
		require.Error(t, err, bad)
		assert.Equal(t, "params._meta must be an object: "+want.Error(), err.Error())
	}
}

// TestMetaIsTheMap: the encoded _meta is what json.Marshal made of the map
// every request used to build.
func TestMetaIsTheMap(t *testing.T) {
	caps := Declared{Sampling: true, ElicitModes: []string{messages.ModeForm, messages.ModeURL}, Tasks: true}.ModernCapabilities(ModernVersions[0])
	info := messages.Implementation{Name: "a<b>&c", Version: "1 é"}
	m, err := NewMeta(ModernVersions[0], caps, info)
	require.NoError(t, err)
	assert.Equal(t, ModernVersions[0], m.Version())
	for _, tc := range []struct {
		level string
		token any
	}{{"", nil}, {"debug", nil}, {"", "p-1"}, {"warning", 7}, {"<x>", map[string]any{"odd": true}}} {
		old := map[string]any{MetaProtocolVersion: ModernVersions[0], MetaClientCapabilities: caps, MetaClientInfo: info}
		if tc.level != "" {
			old[MetaLogLevel] = tc.level
		}
		if tc.token != nil {
			old[MetaProgressToken] = tc.token
		}
		want, err := withMetaByMarshal(nil, nil, old)
		require.NoError(t, err)
		members, err := m.Request(tc.level, tc.token)
		require.NoError(t, err)
		got, err := WithMeta(nil, nil, members)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	_, err = m.Request("", func() {})
	assert.EqualError(t, err, "_meta progressToken: json: unsupported type: func()")
}

// TestMetaRequestAllocs: a request adding nothing to the session's _meta
// (no log level, no progress token) allocates nothing for it.
func TestMetaRequestAllocs(t *testing.T) {
	m, err := NewMeta(ModernVersions[0], nil, messages.Implementation{Name: "c", Version: "1"})
	require.NoError(t, err)
	if n := testing.AllocsPerRun(100, func() { _, _ = m.Request("", nil) }); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
	members, err := m.Request("", nil)
	require.NoError(t, err)
	assert.Equal(t, m.session, members)
	assert.Equal(t, len(members), cap(members), "an append must not write into the shared members")
}

func TestRawMember(t *testing.T) {
	for _, raw := range []json.RawMessage{json.RawMessage(`"s1"`), json.RawMessage(`"a b"`), json.RawMessage(`"<&>"`),
		json.RawMessage("\"\u2028\""), json.RawMessage(` { "a" : [ 1 ] } `), json.RawMessage(`null`), nil} {
		want, err := json.Marshal(raw)
		require.NoError(t, err)
		m, err := RawMember("k", raw)
		require.NoError(t, err, "%q", raw)
		assert.Equal(t, Member{Key: "k", Value: want}, m)
	}
	_, err := RawMember("requestState", json.RawMessage(`"open`))
	assert.ErrorContains(t, err, "requestState: json: error calling MarshalJSON for type json.RawMessage")
}

func TestMarshalObjectIsMarshal(t *testing.T) {
	for _, m := range []map[string]any{
		nil, {}, {"b": json.RawMessage(`{"action":"accept"}`), "a": json.RawMessage(` { "x" : "<&>" } `), "c": json.RawMessage(`null`)},
		{"k": map[string]any{"z": 1, "a": "<"}, "r": json.RawMessage(`[1]`)}, {"é": json.RawMessage(`"\u2028"`), "a<": json.RawMessage(`1`)},
		{"bad": json.RawMessage(`{`)}, {"f": func() {}},
	} {
		want, wantErr := json.Marshal(m)
		got, err := MarshalObject(m)
		if wantErr != nil {
			assert.EqualError(t, err, wantErr.Error())
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
}
