package service

import (
	"slices"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
)

func TestHealthServingThenNotServingDuringShutdown(t *testing.T) {
	h := start(t, opts{DrainDelay: 2 * time.Second})
	for _, svc := range []string{"", testServiceName, healthpb.Health_ServiceDesc.ServiceName} {
		if got := h.healthStatus(t, svc); got != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, want SERVING", svc, got)
		}
	}

	h.cancel()
	// During the drain delay the server still answers, but reports NOT_SERVING.
	deadline := time.Now().Add(10 * time.Second)
	for h.healthStatus(t, testServiceName) != healthpb.HealthCheckResponse_NOT_SERVING {
		if time.Now().After(deadline) {
			t.Fatal("health never reported NOT_SERVING during shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := h.healthStatus(t, ""); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("overall health = %v during drain, want NOT_SERVING", got)
	}
	if code, body := h.get(t, "/readyz"); code != 503 || !contains(body, "shutting down") {
		t.Errorf("/readyz during drain = %d %q, want 503 shutting down", code, body)
	}
	if err := h.stop(t); err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
}

func TestReflectionListsServices(t *testing.T) {
	h := start(t, opts{})
	want := []string{
		testServiceName,
		healthpb.Health_ServiceDesc.ServiceName,
		reflectionv1.ServerReflection_ServiceDesc.ServiceName,
		reflectionv1alpha.ServerReflection_ServiceDesc.ServiceName,
	}
	t.Run("v1", func(t *testing.T) {
		stream, err := reflectionv1.NewServerReflectionClient(h.conn).ServerReflectionInfo(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		req := &reflectionv1.ServerReflectionRequest{
			MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{ListServices: ""},
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			got = append(got, s.GetName())
		}
		assertSameSet(t, got, want)
	})
	t.Run("v1alpha", func(t *testing.T) {
		stream, err := reflectionv1alpha.NewServerReflectionClient(h.conn).ServerReflectionInfo(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		req := &reflectionv1alpha.ServerReflectionRequest{
			MessageRequest: &reflectionv1alpha.ServerReflectionRequest_ListServices{ListServices: ""},
		}
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range resp.GetListServicesResponse().GetService() {
			got = append(got, s.GetName())
		}
		assertSameSet(t, got, want)
	})
}

func assertSameSet(t *testing.T, got, want []string) {
	t.Helper()
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("services = %v, want %v", got, want)
	}
}
