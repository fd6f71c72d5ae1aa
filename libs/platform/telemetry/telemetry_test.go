package telemetry

import (
	"bytes"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

func TestSetupWithoutEndpointStillCreatesSpans(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	tel, err := Setup(ctx, Options{ServiceName: "plinth-test", LogFormat: "json", LogOutput: &buf})
	if err != nil {
		t.Fatal(err)
	}
	spanCtx, span := tel.TracerProvider.Tracer("test").Start(ctx, "op")
	if !span.SpanContext().IsValid() || !span.SpanContext().IsSampled() {
		t.Fatalf("span context %v is not a valid sampled context", span.SpanContext())
	}
	tel.Logger.InfoContext(spanCtx, "inside")
	span.End()
	if !strings.Contains(buf.String(), span.SpanContext().TraceID().String()) {
		t.Errorf("log line lacks the span's trace id:\n%s", buf.String())
	}

	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(spanCtx, carrier)
	if !strings.HasPrefix(carrier.Get("traceparent"), "00-"+span.SpanContext().TraceID().String()) {
		t.Errorf("global propagator is not W3C TraceContext: %v", carrier)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestSetupRequiresServiceName(t *testing.T) {
	if _, err := Setup(context.Background(), Options{}); err == nil {
		t.Error("Setup without ServiceName succeeded")
	}
}

// collector is an in-process OTLP/gRPC trace receiver.
type collector struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []string // "service.name/span name"
}

func (c *collector) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		var service string
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, service+"/"+s.GetName())
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func TestSetupExportsToOTLPEndpoint(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, col)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)

	ctx := context.Background()
	tel, err := Setup(ctx, Options{
		ServiceName: "plinth-export-test", LogOutput: &bytes.Buffer{},
		OTLPEndpoint: "http://" + lis.Addr().String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tel.TracerProvider.Tracer("test").Start(ctx, "exported-op")
	span.End()

	flushCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(flushCtx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != 1 || col.spans[0] != "plinth-export-test/exported-op" {
		t.Errorf("collector received %v, want [plinth-export-test/exported-op]", col.spans)
	}
}
