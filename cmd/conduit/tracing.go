package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Traces (docs/operations.md, "Traces"): the standard OpenTelemetry
// variables turn on an OTLP/HTTP exporter for the clients of conduit call,
// host, gateway and load (every command that connects to servers but demo
// and conformance); without them the clients get a no-op provider: no
// exporter, nothing recorded, nothing in _meta. The exporter's transport (otlphttp.go) reads the
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, timeout, compression,
// certificate).

// tracingFlushTimeout bounds the flush of the spans still buffered when
// the command ends.
const tracingFlushTimeout = 5 * time.Second

// tracing is the CLI's tracer provider, made on first use.
type tracing struct {
	once     sync.Once
	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when off
}

// tracingOn reports whether the OTEL_* variables ask for traces, and why
// not (a warning to print) when they name something Conduit does not
// export.
func tracingOn(getenv func(string) string) (on bool, warning string) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, ""
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "":
		on = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	case "otlp":
		on = true
	case "none":
		return false, ""
	default:
		return false, fmt.Sprintf("OTEL_TRACES_EXPORTER=%q is not supported (otlp or none): traces are off", exporter)
	}
	if !on {
		return false, ""
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol != "" && protocol != "http/protobuf" {
		return false, fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported (http/protobuf): traces are off", protocol)
	}
	return true, ""
}

// tracerProvider returns the provider every client of the command uses:
// an SDK provider batching to the OTLP/HTTP exporter when the variables
// ask for traces, a no-op one otherwise.
func (a *app) tracerProvider() trace.TracerProvider {
	a.tracing.once.Do(func() {
		a.tracing.provider = noop.NewTracerProvider()
		on, warning := tracingOn(os.Getenv)
		if warning != "" {
			fmt.Fprintf(a.stderr, "conduit: %s\n", warning)
		}
		if !on {
			return
		}
		ctx := context.Background()
		client, err := newOTLPHTTP(os.Getenv)
		if err != nil {
			fmt.Fprintf(a.stderr, "conduit: traces are off: %v\n", err)
			return
		}
		// service.name is conduit unless OTEL_SERVICE_NAME or
		// OTEL_RESOURCE_ATTRIBUTES say otherwise.
		res, err := resource.New(ctx, resource.WithTelemetrySDK(),
			resource.WithAttributes(attribute.String("service.name", "conduit")), resource.WithFromEnv())
		if err != nil {
			fmt.Fprintf(a.stderr, "conduit: OTEL_RESOURCE_ATTRIBUTES: %v\n", err)
		}
		a.tracing.sdk = sdktrace.NewTracerProvider(sdktrace.WithBatcher(client), sdktrace.WithResource(res))
		a.tracing.provider = a.tracing.sdk
	})
	return a.tracing.provider
}

// flushTraces exports the spans still buffered and stops the exporter,
// when traces are on; run calls it as the command ends.
func (a *app) flushTraces() {
	if a.tracing.sdk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := a.tracing.sdk.Shutdown(ctx); err != nil {
		fmt.Fprintf(a.stderr, "conduit: traces not all exported: %v\n", err)
	}
}
