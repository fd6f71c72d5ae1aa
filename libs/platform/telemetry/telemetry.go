// Package telemetry sets up a Plinth binary's logs and traces: a redacting slog logger that
// stamps trace ids on records, and an OpenTelemetry tracer provider that exports over
// OTLP/gRPC only when an endpoint is configured.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"io"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Options configures Setup; the fields map one to one to config.Telemetry.
type Options struct {
	// ServiceName is the OpenTelemetry service.name resource attribute, e.g. "plinth-auth".
	ServiceName string
	// Version is the service.version resource attribute; optional.
	Version string
	// LogFormat is json, text or auto; LogLevel is debug, info, warn or error.
	LogFormat, LogLevel string
	// LogOutput receives the logs; nil means os.Stderr.
	LogOutput io.Writer
	// OTLPEndpoint is the OTLP/gRPC collector URL (http://host:4317, https:// for TLS).
	// Empty: spans are still created, so logs carry trace ids, but nothing is exported.
	OTLPEndpoint string
}

// Telemetry is the logger and tracer provider of one binary.
type Telemetry struct {
	// Logger is the binary's root logger; pass it (or children) explicitly to components.
	Logger *slog.Logger
	// TracerProvider creates the binary's spans; it is also installed as the OTel global.
	TracerProvider *sdktrace.TracerProvider
}

// Setup builds the logger and tracer provider and installs the tracer provider and the W3C
// TraceContext+Baggage propagator as OpenTelemetry globals, because instrumentation libraries
// (otelgrpc, pgx and NATS tracers) look there. Call Shutdown before exiting to flush spans.
func Setup(ctx context.Context, o Options) (*Telemetry, error) {
	if o.ServiceName == "" {
		return nil, errors.New("telemetry: ServiceName is required (it names the service in traces)")
	}
	out := o.LogOutput
	if out == nil {
		out = os.Stderr
	}
	logger, err := NewLogger(out, o.LogFormat, o.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	tp, err := newTracerProvider(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(Propagator())
	// Without this the SDK prints export failures with the standard library logger, bypassing
	// format, level and redaction.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("opentelemetry error", "error", err)
	}))
	return &Telemetry{Logger: logger, TracerProvider: tp}, nil
}

// Propagator is the propagator every Plinth process uses: W3C traceparent/tracestate and
// baggage. The gRPC server uses it explicitly so propagation works even without Setup.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// Shutdown flushes buffered spans and stops the tracer provider; ctx bounds the flush.
// It is safe to register as the last closer of a server.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if err := t.TracerProvider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: flush traces: %w", err)
	}
	return nil
}

// ForService is the Options of a service binary named name (service.name "plinth-<name>") from
// its common settings.
func ForService(name string, c config.Telemetry) Options {
	return Options{ServiceName: "plinth-" + name, LogFormat: c.LogFormat, LogLevel: c.LogLevel, OTLPEndpoint: c.OTLPEndpoint}
}
