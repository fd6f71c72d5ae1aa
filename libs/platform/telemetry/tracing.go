package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newTracerProvider samples every root span (and follows the caller's decision otherwise).
// Without an endpoint it registers no span processor: spans still get real ids, which the
// logs need, and finishing them costs next to nothing.
func newTracerProvider(ctx context.Context, o Options) (*sdktrace.TracerProvider, error) {
	attrs := []attribute.KeyValue{attribute.String("service.name", o.ServiceName)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	// resource.New rather than resource.Default: Default also reads OTEL_* variables from the
	// process environment, and configuration must come only from the loaded Config.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("build trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())),
	}
	if o.OTLPEndpoint != "" {
		// WithEndpointURL takes TLS from the scheme: http:// plaintext, https:// TLS. The
		// exporter connects lazily, so a collector that is down delays spans, not startup.
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(o.OTLPEndpoint))
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter for %q: %w", o.OTLPEndpoint, err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}
