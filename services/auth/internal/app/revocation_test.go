package app_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/server"
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

func (c *countingChecker) CheckToken(ctx context.Context, token string) (string, bool, error) {
	c.calls.Add(1)
	return c.next.CheckToken(ctx, token)
}

// downstream starts a server whose interceptor asks authConn and watches revocations on NATS.
func downstream(t testing.TB, natsURL string, authConn *grpc.ClientConn, cacheTTL time.Duration) (authpb.AuthServiceClient, *countingChecker, *authn.Verifier) {
	t.Helper()
	checker := &countingChecker{next: authn.NewGRPCChecker(authConn, 0)}
	v, err := authn.NewVerifier(checker, authn.Options{CacheTTL: cacheTTL})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go v.WatchRevocations(ctx, js)
	srv, err := server.New(server.Options{Name: "downstream", GRPCAddr: "127.0.0.1:0", Authenticate: v.Authenticate, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	authpb.RegisterAuthServiceServer(srv.GRPC(), whoami{})
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !v.Watching() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !v.Watching() {
		t.Fatal("the verifier never started watching revocations")
	}
	return authpb.NewAuthServiceClient(conn), checker, v
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
	revokedAt := time.Now()
	for {
		_, err := svc.CheckToken(bearer(ctx, token), &authpb.CheckTokenRequest{})
		if status.Code(err) == codes.Unauthenticated {
			if status.Convert(err).Message() != authn.MsgInvalidToken {
				t.Fatalf("message %q", status.Convert(err).Message())
			}
			break
		}
		if time.Since(revokedAt) > time.Second {
			t.Fatalf("revoked token still accepted by the other process after 1s (last: %v)", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("revocation reached the other process's cache in %v", time.Since(revokedAt))
}

func TestLockoutSpansInstancesSharingTheDatabase(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lock3 := func(c *app.Config) { c.LockUserAfter = 3 }
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
