package service

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// testServiceName is a hand-written service so the tests need no generated code.
const testServiceName = "plinth.test.v1.Echo"

// testService implements the methods of testServiceName.
type testService struct {
	slowEntered chan struct{} // receives when Slow starts
	slowRelease chan struct{} // Slow returns once this is closed
	hangEntered chan struct{} // receives when Hang starts; Hang ignores cancellation
	hangRelease chan struct{}
	log         *slog.Logger
}

func newTestService(t *testing.T, log *slog.Logger) *testService {
	svc := &testService{log: log,
		slowEntered: make(chan struct{}, 1), slowRelease: make(chan struct{}),
		hangEntered: make(chan struct{}, 1), hangRelease: make(chan struct{}),
	}
	t.Cleanup(func() { close(svc.hangRelease) })
	return svc
}

func (svc *testService) desc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: testServiceName,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{
			unaryMethod("Echo", func(ctx context.Context, in string) (string, error) {
				// A handler logging a secret-named attribute: the redactor must catch it.
				svc.log.InfoContext(ctx, "echo handler", "token", in)
				return in, nil
			}),
			unaryMethod("Public", func(_ context.Context, in string) (string, error) { return "public " + in, nil }),
			unaryMethod("Panic", func(context.Context, string) (string, error) { panic("boom: secret internal state") }),
			unaryMethod("Slow", func(context.Context, string) (string, error) {
				svc.slowEntered <- struct{}{}
				<-svc.slowRelease
				return "slow done", nil
			}),
			unaryMethod("Hang", func(context.Context, string) (string, error) {
				svc.hangEntered <- struct{}{}
				<-svc.hangRelease
				return "", nil
			}),
			unaryMethod("Whoami", func(ctx context.Context, _ string) (string, error) {
				user, _ := ctx.Value(userKey{}).(string)
				return user, nil
			}),
		},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Repeat",
			ServerStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				in := new(wrapperspb.StringValue)
				if err := stream.RecvMsg(in); err != nil {
					return err
				}
				return stream.SendMsg(in)
			},
		}},
		Metadata: "plinth/test/v1/echo.proto",
	}
}

type userKey struct{}

func unaryMethod(name string, fn func(context.Context, string) (string, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			call := func(ctx context.Context, req any) (any, error) {
				out, err := fn(ctx, req.(*wrapperspb.StringValue).GetValue())
				if err != nil {
					return nil, err
				}
				return wrapperspb.String(out), nil
			}
			if icpt == nil {
				return call(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + testServiceName + "/" + name}, call)
		},
	}
}

// opts configures start: the gRPC server's options and the service's own.
type opts struct {
	server.Options
	AdminAddr       string
	ShutdownTimeout time.Duration
	DrainDelay      time.Duration
	ClientLimits    config.ClientLimits
}

// harness is a running service with one gRPC server and a client connection to it.
type harness struct {
	svc    *Service
	srv    *server.Server
	echo   *testService
	conn   *grpc.ClientConn
	logs   *testenv.SyncBuffer
	cancel context.CancelFunc
	done   chan error
}

// start builds a service from o (defaults: 127.0.0.1:0 for gRPC and admin, JSON debug logs in
// a buffer, an SDK tracer provider), registers the test service and runs it.
func start(t *testing.T, o opts) *harness {
	t.Helper()
	logs := &testenv.SyncBuffer{}
	if o.Logger == nil {
		l, err := telemetry.NewLogger(logs, "json", "debug")
		if err != nil {
			t.Fatal(err)
		}
		o.Logger = l
	}
	if o.GRPCAddr == "" {
		o.GRPCAddr = "127.0.0.1:0"
	}
	if o.AdminAddr == "" {
		o.AdminAddr = "127.0.0.1:0"
	}
	if o.TracerProvider == nil {
		o.TracerProvider = sdktrace.NewTracerProvider()
	}
	svc, err := New(Options{Name: "test", Logger: o.Logger, DrainDelay: o.DrainDelay, ClientLimits: o.ClientLimits,
		Admin: config.Admin{AdminAddr: o.AdminAddr, ShutdownTimeout: o.ShutdownTimeout}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv, err := svc.GRPC(config.GRPC{GRPCAddr: o.GRPCAddr, LogCalls: o.LogCalls}, o.Options)
	if err != nil {
		t.Fatalf("GRPC: %v", err)
	}
	echo := newTestService(t, o.Logger)
	srv.GRPC().RegisterService(echo.desc(), echo)
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{svc: svc, srv: srv, echo: echo, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- svc.Run(ctx) }()

	h.conn, err = grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = h.conn.Close()
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Error("service did not stop")
		}
	})
	return h
}

// stop cancels Run and returns its result.
func (h *harness) stop(t *testing.T) error {
	t.Helper()
	h.cancel()
	select {
	case err := <-h.done:
		h.done <- err // let Cleanup see that Run returned
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
		return nil
	}
}

func (h *harness) call(ctx context.Context, method, in string, opts ...grpc.CallOption) (string, error) {
	out := new(wrapperspb.StringValue)
	err := h.conn.Invoke(ctx, "/"+testServiceName+"/"+method, wrapperspb.String(in), out, opts...)
	return out.GetValue(), err
}

func (h *harness) healthStatus(t *testing.T, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := healthpb.NewHealthClient(h.conn).Check(testCtx(t), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("health check %q: %v", service, err)
	}
	return resp.GetStatus()
}

func (h *harness) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + h.svc.AdminAddr() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("got %v, want code %v", err, code)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
