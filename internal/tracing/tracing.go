// Package tracing holds what Conduit's OpenTelemetry spans share across
// packages: the attribute names (docs/operations.md, "Traces"), and the W3C
// trace context carried in a request's params._meta (traceparent,
// tracestate: keys the 2026-07-28 revision reserves, sent in the legacy era
// too) through otel's propagation.TraceContext.
//
// Nothing here records content: a span names the method, the tool (a name
// from the server's catalog), the server, the era and outcomes, never
// arguments, prompts, URLs or answers.
package tracing

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/conduitmcp/conduit/era"
	"github.com/conduitmcp/conduit/internal/jsonscan"
)

// Scope is the instrumentation scope of Conduit's tracer.
const Scope = "github.com/conduitmcp/conduit"

// Attribute keys of Conduit's spans. The mcp.*, gen_ai.*, rpc.* and
// error.type ones are OpenTelemetry's semantic conventions (MCP, GenAI,
// JSON-RPC); conduit.* are Conduit's own.
const (
	Method    = attribute.Key("mcp.method.name")      // the request's method
	Tool      = attribute.Key("gen_ai.tool.name")     // tools/call: the tool's name
	Version   = attribute.Key("mcp.protocol.version") // the negotiated revision
	Server    = attribute.Key("conduit.server")       // the server's name (Options.ServerID)
	Era       = attribute.Key("conduit.era")          // legacy or modern
	Outcome   = attribute.Key("conduit.input.outcome")
	ErrorCode = attribute.Key("rpc.jsonrpc.error_code")
	ErrorType = attribute.Key("error.type") // a failed call's conduit.Kind
	// Paused is the time an input request kept its call's deadline
	// paused, in milliseconds (0 for an input no call asked for).
	Paused = attribute.Key("conduit.deadline.paused_ms")
)

// Meta keys of the W3C trace context in params._meta.
const (
	MetaTraceparent = "traceparent"
	MetaTracestate  = "tracestate"
)

var propagator = propagation.TraceContext{}

// Members returns the _meta members that carry ctx's span context
// (traceparent, and tracestate when it has one), or nil, without
// allocating, when ctx has no valid span context (tracing off).
func Members(ctx context.Context) []era.Member {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	var c injected
	propagator.Inject(ctx, &c)
	return c.members
}

// injected is the carrier Members injects into.
type injected struct{ members []era.Member }

func (c *injected) Get(string) string { return "" }
func (c *injected) Set(key, value string) {
	c.members = append(c.members, era.Member{Key: key, Value: jsonscan.AppendString(nil, value)})
}
func (c *injected) Keys() []string { return nil }

// Meta is a carrier over a request's _meta members as read from the wire:
// string values under traceparent and tracestate (any other JSON is
// ignored).
type Meta map[string]json.RawMessage

// Get returns the string under key, "" when absent or not a string.
func (m Meta) Get(key string) string {
	raw, ok := m[key]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// Set is not used: Meta is read only.
func (m Meta) Set(string, string) {}

// Keys returns the keys of m.
func (m Meta) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// FromMeta returns ctx carrying the remote span context a request's
// _meta names (its raw JSON object), ctx itself when it names none or is
// malformed.
func FromMeta(ctx context.Context, meta json.RawMessage) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	var m Meta
	if json.Unmarshal(meta, &m) != nil || m == nil {
		return ctx
	}
	return propagator.Extract(ctx, m)
}

// FromCarrier returns ctx carrying the remote span context c names (an
// HTTP header: propagation.HeaderCarrier), ctx itself when none.
func FromCarrier(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	return propagator.Extract(ctx, c)
}
