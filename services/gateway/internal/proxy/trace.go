package proxy

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The gateway traces each proxied call with one span of its own, continuing the client's
// trace (W3C traceparent) and handing it on to the backend. One span, not otelgrpc's
// server and client handlers: those cost more than the rest of the proxy together
// (bench/gateway.sh: p99 3.4x higher), and a proxy's two halves are one unit of work.
const tracerName = "github.com/plinth-dev/plinth/services/gateway/internal/proxy"

// mdCarrier is a propagation.TextMapCarrier over gRPC metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// startSpan continues the trace of the incoming metadata with the gateway's span. Without a
// tracer it only reads the client's trace context into ctx (the access log names its trace)
// and returns a span that records nothing.
func (p *Proxy) startSpan(ctx context.Context, in metadata.MD, method string) (context.Context, trace.Span) {
	ctx = p.o.Propagator.Extract(ctx, mdCarrier(in))
	if p.tracer == nil {
		return ctx, noopSpan
	}
	service, name, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	return p.tracer.Start(ctx, strings.TrimPrefix(method, "/"),
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("rpc.system", "grpc"), attribute.String("rpc.service", service),
			attribute.String("rpc.method", name)))
}

var noopSpan = noop.Span{}

// endSpan records the call's code and ends the span.
func endSpan(span trace.Span, backend string, err error) {
	if !span.IsRecording() {
		return
	}
	code := status.Code(err)
	span.SetAttributes(attribute.Int("rpc.grpc.status_code", int(code)), attribute.String("plinth.backend", backend))
	if code != codes.OK {
		span.SetStatus(otelcodes.Error, code.String())
	}
	span.End()
}
