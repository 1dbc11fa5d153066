package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpHTTP is the CLI's span exporter: OTLP over HTTP, protobuf, the
// ExportTraceServiceRequest written with protowire (otlpwire.go). It is
// not otlptracehttp because of what linking it costs every conduit
// process, traces on or off: gRPC (through its shared config and the
// collector's service package) and the OTLP protobuf types' descriptors,
// 2 MB more resident at rest, which pushed the refused-message scenarios
// of issue 18 over their 100 MB ceiling (docs/decisions.md #47). It reads
// the standard variables otlptracehttp reads, but for client certificates;
// the tests check what it sends with the collector's own protobuf types.
type otlpHTTP struct {
	url      string
	headers  http.Header
	gzip     bool
	timeout  time.Duration
	client   *http.Client
	maxReply int64
}

// defaultOTLPEndpoint is the collector's OTLP/HTTP address by default.
const defaultOTLPEndpoint = "http://localhost:4318"

// newOTLPHTTP configures the transport from the OTEL_EXPORTER_OTLP_*
// variables (the TRACES_ ones over the general ones).
func newOTLPHTTP(getenv func(string) string) (*otlpHTTP, error) {
	pick := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	c := &otlpHTTP{headers: http.Header{}, timeout: 10 * time.Second, maxReply: 64 << 10}
	switch {
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		c.url = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") // as it is
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		c.url = strings.TrimSuffix(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	default:
		c.url = defaultOTLPEndpoint + "/v1/traces"
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", c.url)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		for _, kv := range strings.Split(getenv(name), ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				continue
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				c.headers.Set(k, dv)
			}
		}
	}
	if v := pick("TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TIMEOUT %q: want milliseconds", v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := pick("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_COMPRESSION %q: want gzip or none", v)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if file := pick("CERTIFICATE"); file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE %s: no certificate in it", file)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	c.client = &http.Client{Transport: tr, Timeout: c.timeout}
	return c, nil
}

// ExportSpans posts one ExportTraceServiceRequest holding spans.
func (c *otlpHTTP) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body := appendExportRequest(nil, spans)
	var r io.Reader = bytes.NewReader(body)
	if c.gzip {
		var zb bytes.Buffer
		zw := gzip.NewWriter(&zb)
		_, _ = zw.Write(body)
		_ = zw.Close()
		r = &zb
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, r)
	if err != nil {
		return err
	}
	req.Header = c.headers.Clone()
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.maxReply))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("OTLP export to %s: HTTP %s", c.url, resp.Status)
	}
	return nil
}

// Shutdown closes the idle connections; the provider flushed before.
func (c *otlpHTTP) Shutdown(context.Context) error {
	c.client.CloseIdleConnections()
	return nil
}
