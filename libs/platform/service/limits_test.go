package service

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/plinth-dev/plinth/libs/platform/config"
)

// TestClientLimitsReachTheServer: the service's PLINTH_MAX_CONNS_PER_CLIENT reaches every
// gRPC server it builds, and its refusals are on the service's /metrics.
func TestClientLimitsReachTheServer(t *testing.T) {
	h := start(t, opts{ClientLimits: config.ClientLimits{MaxConnsPerClient: 2, MaxCallsPerClient: 256}})
	check := func(cc *grpc.ClientConn) error {
		ctx, cancel := context.WithTimeout(testCtx(t), 5*time.Second)
		defer cancel()
		_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	ccs := []*grpc.ClientConn{h.conn}
	for range 2 {
		cc, err := grpc.NewClient(h.srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		ccs = append(ccs, cc)
	}
	for i, cc := range ccs[:2] {
		if err := check(cc); err != nil {
			t.Fatalf("connection %d of 2: %v", i+1, err)
		}
	}
	if err := check(ccs[2]); status.Code(err) != codes.Unavailable {
		t.Fatalf("a third connection from one address: %v; want it closed (Unavailable)", err)
	}
	_, body := h.get(t, "/metrics")
	// At least one: grpc-go may try the connection again before the call gives up.
	if got := grep(body, `plinth_grpc_connections_refused_total{limit="per_client"}`); got == "" || strings.HasSuffix(got, " 0") {
		t.Errorf("the refusal is not on /metrics: %q", got)
	}
}
