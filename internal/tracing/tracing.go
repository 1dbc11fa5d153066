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
	"net/http"
	"slices"
	"strings"

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
// (traceparent, and tracestate when it has one), by key, or nil, without
// allocating, when ctx has no valid span context (tracing off).
func Members(ctx context.Context) []era.Member {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	var c injected
	propagator.Inject(ctx, &c)
	slices.SortFunc(c.members, func(a, b era.Member) int { return strings.Compare(a.Key, b.Key) })
	return c.members
}

// injected is the carrier Members injects into.
type injected struct{ members []era.Member }

func (c *injected) Get(string) string { return "" }
func (c *injected) Set(key, value string) {
	c.members = append(c.members, era.Member{Key: key, Value: jsonscan.AppendString(nil, value)})
}
func (c *injected) Keys() []string { return nil }

// Values is a carrier over a decoded _meta (a go-sdk request's Meta):
// string values under traceparent and tracestate, read only.
type Values map[string]any

// Get returns the string under key, "" when absent or not a string.
func (v Values) Get(key string) string {
	s, _ := v[key].(string)
	return s
}

// Set is not used: Values is read only.
func (v Values) Set(string, string) {}

// Keys returns the keys of v.
func (v Values) Keys() []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	return keys
}

// Downstream returns ctx carrying the trace context a downstream client
// sent with a request: the one in its _meta (meta), else the one in the
// HTTP header of the request that carried it (W3C traceparent and
// tracestate headers; nil for stdio). ctx is returned as it is when
// neither names a valid one.
func Downstream(ctx context.Context, meta map[string]any, header http.Header) context.Context {
	if sc := trace.SpanContextFromContext(propagator.Extract(context.Background(), Values(meta))); sc.IsValid() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	if header != nil {
		if sc := trace.SpanContextFromContext(propagator.Extract(context.Background(), propagation.HeaderCarrier(header))); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return ctx
}
