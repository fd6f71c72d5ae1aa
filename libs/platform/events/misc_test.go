package events

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

func TestNakDelay(t *testing.T) {
	c := Consumer{MaxNakDelay: 5 * time.Second}
	got := []time.Duration{c.nakDelay(0), c.nakDelay(1), c.nakDelay(2), c.nakDelay(3), c.nakDelay(4), c.nakDelay(100)}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	if !slices.Equal(got, want) {
		t.Fatalf("nak delays %v, want %v", got, want)
	}
}

func TestHeaderCarrierRoundTrip(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled,
	}))
	h := nats.Header{}
	prop := propagation.TraceContext{}
	prop.Inject(ctx, HeaderCarrier(h))
	if h.Get("traceparent") != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("headers %v", h)
	}
	if keys := HeaderCarrier(h).Keys(); !slices.Contains(keys, "traceparent") {
		t.Fatalf("keys %v", keys)
	}
	sc := trace.SpanContextFromContext(prop.Extract(context.Background(), HeaderCarrier(h)))
	if sc.TraceID() != tid || sc.SpanID() != sid || !sc.IsRemote() {
		t.Fatalf("extracted %v", sc)
	}
}
