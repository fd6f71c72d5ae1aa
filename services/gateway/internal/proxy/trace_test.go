package proxy

import (
	"context"
	"net"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/emptypb"

	vagrantpb "github.com/plinth-dev/plinth/libs/api/hashicorp/vagrant"
	"github.com/plinth-dev/plinth/services/gateway/internal/catalog"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

// seen is a vagrant backend that keeps the metadata of the last call.
type seen struct {
	vagrantpb.UnimplementedVagrantServer
	md chan metadata.MD
}

func (s *seen) GetVersionInfo(ctx context.Context, _ *emptypb.Empty) (*vagrantpb.GetVersionInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.md <- md
	return &vagrantpb.GetVersionInfoResponse{}, nil
}

func listen(t *testing.T, s *grpc.Server) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestTraceContext: a tracing gateway puts its span between the client's and the backend's
// (the backend's parent is the gateway's span, in the client's trace); a gateway that does
// not trace hands the client's trace context to the backend as it came.
func TestTraceContext(t *testing.T) {
	const (
		traceID      = "4bf92f3577b34da6a3ce929d0e0e4736"
		clientSpan   = "00f067aa0ba902b7"
		clientParent = "00-" + traceID + "-" + clientSpan + "-01"
	)
	backend := &seen{md: make(chan metadata.MD, 1)}
	bs := grpc.NewServer()
	vagrantpb.RegisterVagrantServer(bs, backend)
	backendConn := listen(t, bs)
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	call := func(t *testing.T, o Options) []string {
		t.Helper()
		o.Backends = NewBackends(map[string]grpc.ClientConnInterface{routes.VagrantServer: backendConn}, nil)
		o.Methods = cat
		gs := grpc.NewServer(New(o).ServerOptions()...)
		c := vagrantpb.NewVagrantClient(listen(t, gs))
		ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", clientParent, "tracestate", "k=v")
		if _, err := c.GetVersionInfo(ctx, &emptypb.Empty{}); err != nil {
			t.Fatal(err)
		}
		return (<-backend.md).Get("traceparent")
	}

	t.Run("traced", func(t *testing.T) {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		got := call(t, Options{TracerProvider: tp, Propagator: propagation.TraceContext{}})
		spans := rec.Ended()
		if len(spans) != 1 {
			t.Fatalf("%d spans ended, want the gateway's one", len(spans))
		}
		sc := spans[0].SpanContext()
		if spans[0].Parent().SpanID().String() != clientSpan || sc.TraceID().String() != traceID {
			t.Errorf("gateway span %s parent %s, want trace %s under the client's span %s",
				sc.TraceID(), spans[0].Parent().SpanID(), traceID, clientSpan)
		}
		if want := "00-" + traceID + "-" + sc.SpanID().String() + "-01"; len(got) != 1 || got[0] != want {
			t.Errorf("backend traceparent %q, want %q (the gateway's span, the client's header not copied beside it)", got, want)
		}
	})
	t.Run("untraced", func(t *testing.T) {
		got := call(t, Options{})
		if len(got) != 1 || got[0] != clientParent {
			t.Errorf("backend traceparent %q, want the client's %q", got, clientParent)
		}
		// The access log still names the client's trace.
		ctx, span := New(Options{Propagator: propagation.TraceContext{}}).startSpan(context.Background(),
			metadata.Pairs("traceparent", clientParent), "/m")
		if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != traceID || span.IsRecording() {
			t.Errorf("untraced call's context: trace %s (recording %v), want the client's %s", got, span.IsRecording(), traceID)
		}
	})
	t.Run("untraced without a client trace", func(t *testing.T) {
		gs := grpc.NewServer(New(Options{Methods: cat,
			Backends: NewBackends(map[string]grpc.ClientConnInterface{routes.VagrantServer: backendConn}, nil)}).ServerOptions()...)
		if _, err := vagrantpb.NewVagrantClient(listen(t, gs)).GetVersionInfo(context.Background(), &emptypb.Empty{}); err != nil {
			t.Fatal(err)
		}
		if got := (<-backend.md).Get("traceparent"); len(got) != 0 {
			t.Errorf("backend traceparent %q, want none (the gateway starts no trace it does not export)", got)
		}
	})
}
