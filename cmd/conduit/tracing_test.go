package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

func TestTracingOn(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		warning string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, warning: `OTEL_TRACES_EXPORTER="zipkin" is not supported (otlp or none): traces are off`},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, warning: `OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported (http/protobuf): traces are off`},
	} {
		on, warning := tracingOn(func(k string) string { return c.env[k] })
		assert.Equal(t, c.on, on, "%v", c.env)
		assert.Equal(t, c.warning, warning, "%v", c.env)
	}
}

// TestE2ECallExportsTraces: conduit call with OTEL_EXPORTER_OTLP_ENDPOINT
// exports, before it exits, the call's span and its sampling request's
// child span to an OTLP/HTTP receiver (the collector's protobuf types).
func TestE2ECallExportsTraces(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var spans []*tracepb.Span
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "not OTLP", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	answers := writeFile(t, "answers.json", e2eAnswers)
	var out bytes.Buffer
	code, stderr := runCLIEnv(t, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_TRACES_EXPORTER=otlp"}, &out,
		"call", "--era", "legacy", "--answers", answers, "test_sampling", `{"prompt":"secret-prompt"}`, "--", server(t))
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, "LLM response: scripted hello\n", out.String())
	mu.Lock()
	defer mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		for _, kv := range s.Attributes {
			assert.NotContains(t, kv.Value.String(), "secret-prompt")
			assert.NotContains(t, kv.Value.String(), "scripted hello")
		}
	}
	call, input := byName["tools/call test_sampling"], byName["sampling/createMessage"]
	require.NotNil(t, call, "spans: %v", names(spans))
	require.NotNil(t, input, "spans: %v", names(spans))
	assert.Equal(t, call.TraceId, input.TraceId)
	assert.Equal(t, call.SpanId, input.ParentSpanId)
}

func names(spans []*tracepb.Span) string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// TestOTLPWireMatchesOtlptracehttp: what the CLI's exporter posts decodes,
// with the collector's protobuf types, to exactly what otel's own
// OTLP/HTTP exporter posts for the same spans: every attribute type,
// events, links, a remote parent, each status and kind, two scopes.
func TestOTLPWireMatchesOtlptracehttp(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	res := resource.NewSchemaless(attribute.String("service.name", "conduit"), attribute.Int("pid", 7))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithResource(res))
	ts, _ := trace.ParseTraceState("k=v")
	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), remote)
	ctx, call := tp.Tracer("github.com/conduitmcp/conduit", trace.WithInstrumentationVersion("1"), trace.WithInstrumentationAttributes(attribute.Bool("x", true))).Start(ctx, "tools/call t", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: remote, Attributes: []attribute.KeyValue{attribute.String("l", "1")}}))
	call.SetAttributes(attribute.String("s", "v"), attribute.Bool("b", true), attribute.Int64("i", -3), attribute.Float64("f", 1.5),
		attribute.StringSlice("ss", []string{"a", "b"}), attribute.BoolSlice("bs", []bool{true}), attribute.Int64Slice("is", []int64{1, 2}), attribute.Float64Slice("fs", []float64{0.5}))
	call.AddEvent("e", trace.WithAttributes(attribute.Int("n", 1)))
	_, input := tp.Tracer("github.com/conduitmcp/conduit").Start(ctx, "sampling/createMessage")
	input.SetStatus(codes.Error, "busy")
	input.End()
	call.SetStatus(codes.Ok, "")
	call.End()
	_, other := tp.Tracer("agent").Start(context.Background(), "turn", trace.WithSpanKind(trace.SpanKindServer))
	other.End()
	spans := rec.Ended()
	require.Len(t, spans, 3)

	posted := make(chan []byte, 2)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := io.Reader(r.Body)
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			require.NoError(t, err)
			body = zr
		}
		b, _ := io.ReadAll(body)
		assert.Equal(t, "/v1/traces", r.URL.Path)
		assert.Equal(t, "application/x-protobuf", r.Header.Get("Content-Type"))
		assert.Equal(t, "secret token", r.Header.Get("Authorization"))
		posted <- b
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer recv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": recv.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=secret%20token", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}
	for k, v := range env {
		t.Setenv(k, v)
	}
	official, err := otlptracehttp.New(context.Background())
	require.NoError(t, err)
	require.NoError(t, official.ExportSpans(context.Background(), spans))
	require.NoError(t, official.Shutdown(context.Background()))
	ours, err := newOTLPHTTP(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, ours.ExportSpans(context.Background(), spans))
	require.NoError(t, ours.Shutdown(context.Background()))

	var want, got coltracepb.ExportTraceServiceRequest
	require.NoError(t, proto.Unmarshal(<-posted, &want))
	require.NoError(t, proto.Unmarshal(<-posted, &got))
	sortScopes := func(r *coltracepb.ExportTraceServiceRequest) {
		for _, rs := range r.ResourceSpans {
			sort.Slice(rs.ScopeSpans, func(i, j int) bool { return rs.ScopeSpans[i].Scope.Name < rs.ScopeSpans[j].Scope.Name })
			sort.Slice(rs.Resource.Attributes, func(i, j int) bool { return rs.Resource.Attributes[i].Key < rs.Resource.Attributes[j].Key })
		}
	}
	sortScopes(&want)
	sortScopes(&got)
	assert.True(t, proto.Equal(&want, &got), "ours:\n%v\notlptracehttp's:\n%v", prototext.Format(&got), prototext.Format(&want))
}

func TestOTLPHTTPConfig(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		url  string
		fail string
	}{
		{env: nil, url: "http://localhost:4318/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318"}, url: "https://collector:4318/v1/traces"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/custom"}, url: "http://t:1/custom"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, fail: `OTLP endpoint "collector:4318/v1/traces": want an http:// or https:// URL`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, fail: `OTEL_EXPORTER_OTLP_TIMEOUT "soon": want milliseconds`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, fail: `OTEL_EXPORTER_OTLP_COMPRESSION "zstd": want gzip or none`},
	} {
		o, err := newOTLPHTTP(func(k string) string { return c.env[k] })
		if c.fail != "" {
			assert.EqualError(t, err, c.fail)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.url, o.url)
	}
	o, err := newOTLPHTTP(func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500"}[k]
	})
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, o.timeout)

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusServiceUnavailable) }))
	defer failing.Close()
	o, err = newOTLPHTTP(func(k string) string { return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": failing.URL}[k] })
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	_, s := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("x").Start(context.Background(), "s")
	s.End()
	assert.EqualError(t, o.ExportSpans(context.Background(), rec.Ended()), "OTLP export to "+failing.URL+": HTTP 503 Service Unavailable")
}
