package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/hostiletest"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// Hand-built request bodies of grpc.health.v1.HealthCheckRequest (field 1: string service).
var (
	// Field 1 announces 5 bytes and one follows: not a protobuf message.
	malformed = []byte{0x0a, 0x05, 'a'}
	// Field 1 holds two bytes that are not UTF-8, which proto3 strings must be.
	badUTF8 = []byte{0x0a, 0x02, 0xff, 0xfe}
)

// TestUndecodableRequestIsInvalidArgument sends bytes that are not a valid request to a real
// server, unary and streaming, with an auth hook that refuses everything: the client gets
// InvalidArgument naming the message type (grpc-go's own answer is Internal), the line is
// logged at INFO, not ERROR, and no note of the failure is left behind.
func TestUndecodableRequestIsInvalidArgument(t *testing.T) {
	logs := &testenv.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(Options{Name: "codec-test", GRPCAddr: "127.0.0.1:0", Logger: log,
		Authenticate: func(context.Context, string) (context.Context, error) {
			return nil, status.Error(codes.Unauthenticated, "no token")
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.GRPC().RegisterService(&echoDesc, struct{}{})
	go func() { _ = srv.Serve() }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Stop(ctx)
	})
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })

	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"malformed protobuf", malformed, "cannot parse the request as grpc.health.v1.HealthCheckRequest: "},
		{"invalid UTF-8", badUTF8, "cannot parse the request as grpc.health.v1.HealthCheckRequest: "},
	} {
		t.Run(tc.name+"/unary", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var out []byte
			err := conn.Invoke(ctx, "/grpc.health.v1.Health/Check", &tc.body, &out, grpc.ForceCodecV2(hostiletest.RawCodec{}))
			assertParseRefusal(t, err, tc.want)
		})
		t.Run(tc.name+"/stream", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/grpc.health.v1.Health/Watch", grpc.ForceCodecV2(hostiletest.RawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SendMsg(&tc.body); err != nil {
				t.Fatal(err)
			}
			_ = st.CloseSend()
			var out []byte
			assertParseRefusal(t, st.RecvMsg(&out), tc.want)
		})
	}
	if n := srv.codec.pending(); n != 0 {
		t.Errorf("%d decode failures are still noted after their calls ended", n)
	}

	// A valid request still decodes and is served.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "codec-test"}); status.Code(err) != codes.NotFound {
		t.Errorf("a valid Check of an unknown service answered %v; want NotFound", err)
	}

	// A method behind the auth hook: the undecodable request is refused as such (the hook
	// would answer Unauthenticated), and logged at INFO as a client error.
	var out []byte
	err = conn.Invoke(ctx, "/plinth.test.Echo/Check", &malformed, &out, grpc.ForceCodecV2(hostiletest.RawCodec{}))
	assertParseRefusal(t, err, "cannot parse the request as grpc.health.v1.HealthCheckRequest: ")
	if err := conn.Invoke(ctx, "/plinth.test.Echo/Check", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a valid request answered %v; want the auth hook's Unauthenticated", err)
	}
	if n := srv.codec.pending(); n != 0 {
		t.Errorf("%d decode failures are still noted after their calls ended", n)
	}
	got := logs.String()
	if !strings.Contains(got, "level=INFO") || !strings.Contains(got, "grpc.code=InvalidArgument") {
		t.Errorf("the refusal was not logged at INFO with its code:\n%s", got)
	}
	if strings.Contains(got, "level=ERROR") {
		t.Errorf("a client's undecodable request was logged at ERROR:\n%s", got)
	}
}

// echoDesc is a one-method service taking a HealthCheckRequest, registered like generated
// code registers a service, so its calls pass the auth hook and are logged.
var echoDesc = grpc.ServiceDesc{
	ServiceName: "plinth.test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Check",
		Handler: func(_ any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
			in := new(healthpb.HealthCheckRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			handle := func(context.Context, any) (any, error) { return &healthpb.HealthCheckResponse{}, nil }
			return ic(ctx, in, &grpc.UnaryServerInfo{FullMethod: "/plinth.test.Echo/Check"}, handle)
		},
	}},
}

func assertParseRefusal(t *testing.T, err error, want string) {
	t.Helper()
	s, _ := status.FromError(err)
	if s.Code() != codes.InvalidArgument || !strings.HasPrefix(s.Message(), want) {
		t.Fatalf("answered %v %q; want InvalidArgument %q…", s.Code(), s.Message(), want)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}
