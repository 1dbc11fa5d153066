package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
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
