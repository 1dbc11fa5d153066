package main

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP trace protobuf (opentelemetry-proto, collector/trace/v1 and
// trace/v1), written field by field: what otlpHTTP posts. Field numbers
// are the .proto files'; tracing_test.go decodes the output with the
// generated types.

// appendExportRequest appends an ExportTraceServiceRequest of spans:
// resource_spans = 1, one per resource, each with scope_spans = 2, one per
// instrumentation scope, in the order the spans come.
func appendExportRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct{ name, version, schema string }
	type group struct {
		res    *resource.Resource
		scopes []scopeKey
		by     map[scopeKey][]sdktrace.ReadOnlySpan
		scope  map[scopeKey]instrumentation.Scope
	}
	var groups []*group
	for _, s := range spans {
		var g *group
		for _, h := range groups {
			if h.res == s.Resource() || h.res.Equal(s.Resource()) {
				g = h
				break
			}
		}
		if g == nil {
			g = &group{res: s.Resource(), by: map[scopeKey][]sdktrace.ReadOnlySpan{}, scope: map[scopeKey]instrumentation.Scope{}}
			groups = append(groups, g)
		}
		sc := s.InstrumentationScope()
		k := scopeKey{sc.Name, sc.Version, sc.SchemaURL}
		if _, ok := g.by[k]; !ok {
			g.scopes = append(g.scopes, k)
			g.scope[k] = sc
		}
		g.by[k] = append(g.by[k], s)
	}
	for _, g := range groups {
		b = appendMessage(b, 1, func(b []byte) []byte { // ResourceSpans
			b = appendMessage(b, 1, func(b []byte) []byte { // Resource
				for _, kv := range g.res.Attributes() {
					b = appendKeyValue(b, 1, kv)
				}
				return b
			})
			for _, k := range g.scopes {
				b = appendMessage(b, 2, func(b []byte) []byte { // ScopeSpans
					sc := g.scope[k]
					b = appendMessage(b, 1, func(b []byte) []byte { // InstrumentationScope
						b = appendString(b, 1, sc.Name)
						b = appendString(b, 2, sc.Version)
						for _, kv := range sc.Attributes.ToSlice() {
							b = appendKeyValue(b, 3, kv)
						}
						return b
					})
					for _, s := range g.by[k] {
						b = appendMessage(b, 2, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, 3, sc.SchemaURL)
				})
			}
			return appendString(b, 3, g.res.SchemaURL())
		})
	}
	return b
}

// appendSpan writes a Span's fields.
func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, 1, tid[:])
	b = appendBytes(b, 2, sid[:])
	b = appendString(b, 3, sc.TraceState().String())
	if p := s.Parent(); p.SpanID().IsValid() {
		psid := p.SpanID()
		b = appendBytes(b, 4, psid[:])
	}
	b = appendString(b, 5, s.Name())
	b = appendVarint(b, 6, uint64(s.SpanKind())) // SpanKind: the same numbers as trace.SpanKind
	b = appendFixed64(b, 7, uint64(s.StartTime().UnixNano()))
	b = appendFixed64(b, 8, uint64(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		b = appendKeyValue(b, 9, kv)
	}
	b = appendVarint(b, 10, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = appendMessage(b, 11, func(b []byte) []byte { // Span.Event
			b = appendFixed64(b, 1, uint64(e.Time.UnixNano()))
			b = appendString(b, 2, e.Name)
			for _, kv := range e.Attributes {
				b = appendKeyValue(b, 3, kv)
			}
			return appendVarint(b, 4, uint64(e.DroppedAttributeCount))
		})
	}
	b = appendVarint(b, 12, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, 13, func(b []byte) []byte { // Span.Link
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, 1, ltid[:])
			b = appendBytes(b, 2, lsid[:])
			// No trace_state: otel's own transform writes none for a link.
			for _, kv := range l.Attributes {
				b = appendKeyValue(b, 4, kv)
			}
			b = appendVarint(b, 5, uint64(l.DroppedAttributeCount))
			return appendFlags(b, 6, l.SpanContext.TraceFlags(), l.SpanContext.IsRemote())
		})
	}
	b = appendVarint(b, 14, uint64(s.DroppedLinks()))
	st := s.Status()
	b = appendMessage(b, 15, func(b []byte) []byte { // Status: UNSET 0, OK 1, ERROR 2
		b = appendString(b, 2, st.Description)
		code := uint64(0)
		switch st.Code {
		case codes.Ok:
			code = 1
		case codes.Error:
			code = 2
		}
		return appendVarint(b, 3, code)
	})
	return appendFlags(b, 16, sc.TraceFlags(), s.Parent().IsRemote())
}

// appendFlags writes SpanFlags: the W3C trace flags, and whether the
// parent (a link: the linked context) is remote.
func appendFlags(b []byte, num protowire.Number, tf trace.TraceFlags, remote bool) []byte {
	flags := uint32(tf) | 0x100 // SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK
	if remote {
		flags |= 0x200 // SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK
	}
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, flags)
}

// appendKeyValue writes a KeyValue (key = 1, value = 2) as field num.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	return appendMessage(b, num, func(b []byte) []byte {
		b = appendString(b, 1, string(kv.Key))
		return appendMessage(b, 2, func(b []byte) []byte { return appendAnyValue(b, kv.Value) })
	})
}

// appendAnyValue writes an AnyValue's one field: string 1, bool 2, int 3,
// double 4, array 5 (ArrayValue: values = 1).
func appendAnyValue(b []byte, v attribute.Value) []byte {
	array := func(n int, each func(b []byte, i int) []byte) []byte {
		return appendMessage(b, 5, func(b []byte) []byte {
			for i := range n {
				b = appendMessage(b, 1, func(b []byte) []byte { return each(b, i) })
			}
			return b
		})
	}
	switch v.Type() {
	case attribute.STRING:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BOOL:
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, 4, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		return array(len(s), func(b []byte, i int) []byte { return appendAnyValue(b, attribute.StringValue(s[i])) })
	case attribute.BOOLSLICE:
		s := v.AsBoolSlice()
		return array(len(s), func(b []byte, i int) []byte { return appendAnyValue(b, attribute.BoolValue(s[i])) })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		return array(len(s), func(b []byte, i int) []byte { return appendAnyValue(b, attribute.Int64Value(s[i])) })
	case attribute.FLOAT64SLICE:
		s := v.AsFloat64Slice()
		return array(len(s), func(b []byte, i int) []byte { return appendAnyValue(b, attribute.Float64Value(s[i])) })
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendString(b, v.String())
}

// appendMessage writes field num holding the message body writes.
func appendMessage(b []byte, num protowire.Number, body func([]byte) []byte) []byte {
	return appendBytes(b, num, body(nil))
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// appendString writes a non-empty string (proto3: "" is the default, not
// written).
func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendVarint writes a non-zero varint.
func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, v)
}
