package app_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/server"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// whoami plays a downstream service protected by the shared interceptor: its CheckToken
// answers whether the interceptor put an account into the context.
type whoami struct {
	authpb.UnimplementedAuthServiceServer
}

func (whoami) CheckToken(ctx context.Context, _ *authpb.CheckTokenRequest) (*authpb.CheckTokenResponse, error) {
	_, ok := authn.AccountFrom(ctx)
	return &authpb.CheckTokenResponse{Success: ok}, nil
}

// countingChecker counts how often the downstream service asks auth.
type countingChecker struct {
	next  authn.Checker
	calls atomic.Int32
}

func (c *countingChecker) CheckToken(ctx context.Context, token string) (authn.Account, bool, error) {
	c.calls.Add(1)
	return c.next.CheckToken(ctx, token)
}

// downstream starts a service assembled as stats and kaas are: its NATS step, a connection
// to auth (authConn's target), the Verifier step and a gRPC server guarded by it.
func downstream(t testing.TB, natsURL string, authConn *grpc.ClientConn, cacheTTL time.Duration) (authpb.AuthServiceClient, *countingChecker, *authn.Verifier) {
	t.Helper()
	s, err := service.New(service.Options{Name: "downstream", Logger: slog.New(slog.DiscardHandler), Admin: config.Admin{AdminAddr: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	_, js, err := s.NATS(config.NATS{NATSURL: natsURL})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := s.Dial("auth", authConn.Target())
	if err != nil {
		t.Fatal(err)
	}
	checker := &countingChecker{next: authn.NewGRPCChecker(conn, 0)}
	v, err := s.Verifier(checker, js, authn.Options{CacheTTL: cacheTTL})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := s.GRPC(config.GRPC{GRPCAddr: "127.0.0.1:0"}, server.Options{Authenticate: v.Authenticate})
	if err != nil {
		t.Fatal(err)
	}
	authpb.RegisterAuthServiceServer(srv.GRPC(), whoami{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	client, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	waitCtx := ctxT(t)
	for !v.Watching() {
		select {
		case <-waitCtx.Done():
			t.Fatal("the verifier never started watching revocations")
		case <-time.After(10 * time.Millisecond):
		}
	}
	return authpb.NewAuthServiceClient(client), checker, v
}

func TestRevocationReachesAnotherProcessCacheWithinASecond(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := authpb.NewAuthServiceClient(e.start(t, e.config(t)))
	bConn := e.start(t, e.config(t))
	svc, checker, _ := downstream(t, e.natsURL, bConn, authn.MaxCacheTTL)
	ctx := ctxT(t)

	if _, err := svc.CheckToken(ctx, &authpb.CheckTokenRequest{}); status.Code(err) != codes.Unauthenticated ||
		status.Convert(err).Message() != authn.MsgNoToken {
		t.Fatalf("no token: %v", err)
	}
	token := login(t, ctx, a, "admin", "admin-secret-pw").GetToken()
	for i := 0; i < 3; i++ {
		resp, err := svc.CheckToken(bearer(ctx, token), &authpb.CheckTokenRequest{})
		if err != nil || !resp.GetSuccess() {
			t.Fatalf("call %d with a live token: %v %v", i, resp, err)
		}
	}
	if n := checker.calls.Load(); n != 1 {
		t.Fatalf("auth asked %d times; the warm cache must answer repeat calls", n)
	}
	if _, err := a.Logout(bearer(ctx, token), &authpb.LogoutRequest{}); err != nil {
		t.Fatal(err)
	}
	// Polled until the test's context ends rather than timed: the figure is logged, and the
	// bound that matters (a cache entry outlives a missed event by at most MaxCacheTTL) is
	// not what this waits for, since the cache TTL here is that maximum.
	revokedAt := time.Now()
	for {
		_, err := svc.CheckToken(bearer(ctx, token), &authpb.CheckTokenRequest{})
		if status.Code(err) == codes.Unauthenticated {
			if status.Convert(err).Message() != authn.MsgInvalidToken {
				t.Fatalf("message %q", status.Convert(err).Message())
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("revoked token still accepted by the other process (last: %v)", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if since := time.Since(revokedAt); since >= authn.MaxCacheTTL {
		t.Fatalf("the revocation took %v: the event was missed and the cache expired instead", since)
	}
	t.Logf("revocation reached the other process's cache in %v", time.Since(revokedAt))
}

func TestLockoutSpansInstancesSharingTheDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lock3 := func(c *app.Config) { c.LockPairAfter = 3 }
	a := authpb.NewAuthServiceClient(e.start(t, e.config(t, lock3)))
	b := authpb.NewAuthServiceClient(e.start(t, e.config(t, lock3)))
	ctx := ctxT(t)
	for i, c := range []authpb.AuthServiceClient{a, b, a} {
		if _, err := c.Login(ctx, &authpb.LoginRequest{Username: "admin", Password: "wrong-password"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("failure %d: %v", i, err)
		}
	}
	var header metadataMD
	_, err := b.Login(ctx, &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"}, grpc.Header(&header))
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "retry after") {
		t.Fatalf("after 3 failures on two instances the right password must be refused: %v", err)
	}
	if len(st.Details()) != 1 {
		t.Fatalf("want a RetryInfo detail, got %v", st.Details())
	}
	if ra := header["retry-after"]; len(ra) != 1 || ra[0] == "0" {
		t.Fatalf("retry-after header %v", ra)
	}
}
