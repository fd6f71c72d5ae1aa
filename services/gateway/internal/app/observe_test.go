package app_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	lvmdpb "github.com/plinth-dev/plinth/libs/api/lvmd"
	statspb "github.com/plinth-dev/plinth/libs/api/stats"
	"github.com/plinth-dev/plinth/services/gateway/routes"
)

func testHealthAndReflection(t *testing.T, g *gateway) {
	h := healthpb.NewHealthClient(g.conn)
	if r, err := h.Check(ctxT(t), &healthpb.HealthCheckRequest{}); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check: %v %v", r, err)
	}
	w, err := h.Watch(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health watch: %v %v", r, err)
	}

	rc, err := reflectionpb.NewServerReflectionClient(g.conn).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(req *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		t.Helper()
		if err := rc.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := rc.Recv()
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	list := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
	var names []string
	for _, s := range list.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, r := range routes.Table {
		if !slices.Contains(names, r.Service) {
			t.Errorf("reflection does not list %s: %v", r.Service, names)
		}
	}
	if !slices.Contains(names, "grpc.health.v1.Health") {
		t.Errorf("reflection does not list health: %v", names)
	}
	desc := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: "stats.StatsService"}})
	if len(desc.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Fatalf("describe stats.StatsService: %v", desc)
	}
}

// testTraceContext: the backend sees the client's trace in one traceparent (this gateway
// exports no traces, so it passes the client's on; internal/proxy tests the tracing one).
func testTraceContext(t *testing.T, s *suite, g *gateway, token string) {
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := metadata.AppendToOutgoingContext(bearer(ctxT(t), token), "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	if _, err := statspb.NewStatsServiceClient(g.conn).GetClusterStats(ctx, &statspb.GetClusterStatsRequest{}); err != nil {
		t.Fatal(err)
	}
	tp := s.stats.take().Get("traceparent")
	if len(tp) != 1 || !strings.Contains(tp[0], traceID) {
		t.Fatalf("backend traceparent %q, want one with trace id %s", tp, traceID)
	}
}

// testAccessLogAndMetrics: a refused call is logged at INFO with method, backend, code and
// peer, and counted per route and code; tokens never reach the log.
func testAccessLogAndMetrics(t *testing.T, s *suite, g *gateway, token string) {
	_, err := lvmdpb.NewVGServiceClient(g.conn).GetFreeBytes(bearer(ctxT(t), "plt_refused-token"), &lvmdpb.GetFreeBytesRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"finished call"`) && strings.Contains(l, `"grpc.code":"Unauthenticated"`) &&
			strings.Contains(l, `"/proto.VGService/GetFreeBytes"`) {
			line = l
		}
	}
	for _, want := range []string{`"level":"INFO"`, `"backend":"lvmd-agent"`, `"peer.address":"127.0.0.1:`, `"grpc.time_ms":`, `"protocol":"grpc"`} {
		if !strings.Contains(line, want) {
			t.Errorf("access log line lacks %s: %q", want, line)
		}
	}
	resp, err := http.Get("http://" + g.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`plinth_gateway_calls_total{backend="lvmd-agent",code="Unauthenticated",route="/proto.VGService/"}`,
		`plinth_gateway_call_duration_seconds_bucket{backend="lvmd-agent",route="/proto.VGService/",le=`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, secret := range []string{token, "plt_refused-token", adminPassword} {
		if strings.Contains(s.logs.String(), secret) {
			t.Errorf("a secret reached the gateway's log: %.8s…", secret)
		}
	}
}
