package app_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/telemetry"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// TestServesLoginsWhileNATSIsAway: auth starts with NATS unreachable (before, it exited in
// 20 ms with "no servers available", so a restart during a NATS outage took logins down),
// serves logins, and /readyz stays ready while saying events wait in the outbox.
func TestServesLoginsWhileNATSIsAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadNATS := "nats://" + lis.Addr().String()
	_ = lis.Close() // nothing listens there now
	cfg := e.config(t, func(c *app.Config) { c.NATSURL = deadNATS })

	log, err := telemetry.NewLogger(e.logs, "json", "debug")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := app.Open(ctx, cfg, log, e.stdout)
	if err != nil {
		t.Fatalf("auth did not start without NATS: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	conn := dial(t, s.GRPCAddr())
	resp := login(t, ctxT(t), authpb.NewAuthServiceClient(conn), "admin", "admin-secret-pw")
	if resp.GetToken() == "" {
		t.Fatal("no token")
	}
	res, err := http.Get("http://" + s.AdminAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "NATS is unreachable") {
		t.Errorf("/readyz with NATS away = %d %q; want 200 with a warning", res.StatusCode, body)
	}
}
