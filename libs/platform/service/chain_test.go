package service

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/plinth-dev/plinth/libs/platform/server"
)

func TestPanicBecomesInternalAndServerKeepsServing(t *testing.T) {
	h := start(t, opts{})
	_, err := h.call(testCtx(t), "Panic", "x")
	wantCode(t, err, codes.Internal)
	if msg := status.Convert(err).Message(); msg != "internal error" {
		t.Errorf("client saw %q; the panic value must not reach the client", msg)
	}
	if out, err := h.call(testCtx(t), "Echo", "still here"); err != nil || out != "still here" {
		t.Fatalf("after panic: Echo = %q, %v", out, err)
	}
	logs := h.logs.String()
	if !contains(logs, "panic in gRPC handler", "boom: secret internal state", "harness_test.go", "/plinth.test.v1.Echo/Panic") {
		t.Errorf("panic not logged with value, stack and method:\n%s", logs)
	}
	// The inner recovery lets logging and metrics see the call as Internal.
	if !contains(logs, `"grpc.method":"Panic"`, `"grpc.code":"Internal"`) {
		t.Errorf("finished-call line for the panic missing:\n%s", logs)
	}
}

// bearerAuth accepts "authorization: Bearer good" and puts the user in the context.
func bearerAuth(ctx context.Context, fullMethod string) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	switch v := md.Get("authorization"); {
	case len(v) == 0:
		return nil, status.Error(codes.Unauthenticated, "missing bearer token")
	case v[0] == "Bearer good":
		return context.WithValue(ctx, userKey{}, "alice"), nil
	case v[0] == "Bearer broken":
		return nil, errors.New("token store: connection refused to 10.0.0.7")
	default:
		return nil, status.Error(codes.Unauthenticated, "invalid bearer token")
	}
}

func TestAuthHook(t *testing.T) {
	h := start(t, opts{Options: server.Options{
		Authenticate: bearerAuth,
		AuthExempt:   []string{"/" + testServiceName + "/Public"},
	}})
	ctx := testCtx(t)
	withToken := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
	}

	_, err := h.call(ctx, "Echo", "x")
	wantCode(t, err, codes.Unauthenticated)
	_, err = h.call(withToken("bad"), "Echo", "x")
	wantCode(t, err, codes.Unauthenticated)

	user, err := h.call(withToken("good"), "Whoami", "")
	if err != nil || user != "alice" {
		t.Fatalf("Whoami with a good token = %q, %v; want the identity from the auth hook", user, err)
	}

	// A non-status error from the hook must not leak its text.
	_, err = h.call(withToken("broken"), "Echo", "x")
	wantCode(t, err, codes.Internal)
	if strings.Contains(err.Error(), "10.0.0.7") {
		t.Errorf("auth hook error leaked to the client: %v", err)
	}

	// Streams are guarded too.
	stream, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/"+testServiceName+"/Repeat")
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(wrapperspb.String("hi")); err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	wantCode(t, stream.RecvMsg(new(wrapperspb.StringValue)), codes.Unauthenticated)

	// Allow-listed method, health and reflection pass without credentials.
	if out, err := h.call(ctx, "Public", "x"); err != nil || out != "public x" {
		t.Errorf("exempt method = %q, %v", out, err)
	}
	if got := h.healthStatus(t, ""); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health without token = %v", got)
	}
	refl, err := reflectionv1.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := refl.Send(&reflectionv1.ServerReflectionRequest{
		MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := refl.Recv(); err != nil {
		t.Errorf("reflection without token: %v", err)
	}
}

func TestNewRejectsBadAuthExempt(t *testing.T) {
	for _, bad := range []string{"Login", "services.auth.AuthService/Login", "/services.auth.AuthService", "/svc/", "/a/b/c"} {
		_, err := server.New(server.Options{Name: "t", GRPCAddr: "127.0.0.1:0", AuthExempt: []string{bad}})
		if err == nil || !strings.Contains(err.Error(), "not a full method name") {
			t.Errorf("AuthExempt %q: New = %v, want a clear error", bad, err)
		}
	}
}

func TestLogsCarryTraceIDAndNoSecrets(t *testing.T) {
	h := start(t, opts{})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(testCtx(t),
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01",
		"authorization", "Bearer md-hunter2",
		"x-api-key", "hdr-hunter2",
	)
	if _, err := h.call(ctx, "Echo", "payload-hunter2"); err != nil {
		t.Fatal(err)
	}
	if err := h.stop(t); err != nil {
		t.Fatal(err)
	}
	logs := h.logs.String()
	if strings.Contains(logs, "hunter2") {
		t.Fatalf("logs contain a secret, payload or metadata:\n%s", logs)
	}

	var finished, handler map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		switch rec["msg"] {
		case "finished call":
			finished = rec
		case "echo handler":
			handler = rec
		}
	}
	if finished == nil || handler == nil {
		t.Fatalf("missing finished-call or handler line:\n%s", logs)
	}
	for name, rec := range map[string]map[string]any{"finished call": finished, "handler": handler} {
		if rec["trace_id"] != traceID {
			t.Errorf("%s line has trace_id %v, want the caller's %s", name, rec["trace_id"], traceID)
		}
	}
	if handler["token"] != "[REDACTED]" {
		t.Errorf("handler's token attribute = %v, want [REDACTED]", handler["token"])
	}
	for _, k := range []string{"grpc.service", "grpc.method", "grpc.code", "grpc.time_ms"} {
		if _, ok := finished[k]; !ok {
			t.Errorf("finished-call line lacks %s: %v", k, finished)
		}
	}
}
