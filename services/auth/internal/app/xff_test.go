package app_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/jackc/pgx/v5"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/libs/platform/config"
	"github.com/plinth-dev/plinth/libs/platform/mtls/mtlstest"
	"github.com/plinth-dev/plinth/libs/platform/ports"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// from sends x-forwarded-for addr, as a client that wants to pick its address would.
func from(ctx context.Context, addr string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", addr)
}

// TestForgedForwardedForOnAuthsPortIsNotBelieved (issue #36, "x-forwarded-for from any local
// client is believed"): a local client on auth's own TCP port sends 30 wrong passwords for
// admin, each with a new forged x-forwarded-for. They are counted at its real address
// (127.0.0.1), so it is throttled, and the address it named for its victim is never locked.
func TestForgedForwardedForOnAuthsPortIsNotBelieved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := authpb.NewAuthServiceClient(e.start(t, e.config(t, makeUpAuth(t))))
	ctx := ctxT(t)
	throttled := 0
	for i := range 30 {
		_, err := c.Login(from(ctx, fmt.Sprintf("203.0.113.%d", i+1)), &authpb.LoginRequest{Username: "admin", Password: "wrong-password"})
		switch status.Code(err) {
		case codes.ResourceExhausted:
			throttled++
		case codes.Unauthenticated:
		default:
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	if throttled < 30-5 {
		t.Fatalf("30 wrong passwords from 127.0.0.1 with forged x-forwarded-for: %d throttled, want all after the 5th", throttled)
	}
	// The right password from 127.0.0.1 is throttled too: the pair (admin, 127.0.0.1) earned it.
	if _, err := c.Login(from(ctx, "198.51.100.1"), &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"}); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the right password from the throttled real address: %v", err)
	}
	e.assertAddressFree(t, "203.0.113.7")
}

// makeUpAuth is auth as make up configures it: the gateway reaches it on a private unix
// socket, and no address is a trusted proxy.
func makeUpAuth(t *testing.T) func(*app.Config) {
	sock := filepath.Join(shortTempDir(t), "auth-gateway.sock")
	return func(c *app.Config) { c.GatewayAddr = "unix://" + sock }
}

// shortTempDir is a temp dir short enough for a unix socket path (107 bytes).
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "auth")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// assertAddressFree fails when any failed login was counted against addr (as an address or in
// a (username, address) pair).
func (e *env) assertAddressFree(t *testing.T, addr string) {
	t.Helper()
	conn, err := pgx.Connect(ctxT(t), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	err = conn.QueryRow(ctxT(t), `SELECT count(*) FROM login_failures WHERE key = $1 OR key LIKE '% ' || $1`, addr).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a forged address, %s, has %d failure counter(s): a client chose whom to lock out", addr, n)
	}
}

// TestGatewayListenerBelievesItsForwardedFor: the gateway, proven by its channel (the private
// unix socket, or mutual TLS with its client certificate), names the client in the last
// x-forwarded-for entry; failures count there, earlier entries (its client's) are ignored, and
// other addresses and auth's own port are not affected. Without the gateway's certificate the
// TLS listener answers nothing.
func TestGatewayListenerBelievesItsForwardedFor(t *testing.T) {
	t.Parallel()
	pairs := mtlstest.Write(t, t.TempDir(), "auth")
	for name, mutate := range map[string]func(*app.Config){
		"unix socket": makeUpAuth(t),
		"mutual TLS": func(c *app.Config) {
			p, err := ports.Free(1)
			if err != nil {
				t.Fatal(err)
			}
			c.GatewayAddr = fmt.Sprintf("127.0.0.1:%d", p[0])
			c.GatewayTLSCert, c.GatewayTLSKey, c.GatewayClientCA = pairs.ServerCert, pairs.ServerKey, pairs.ClientCert
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.config(t, mutate)
			conn := e.start(t, cfg)
			ctx := ctxT(t)
			gwAddr := cfg.GatewayAddr
			var gw authpb.AuthServiceClient
			if strings.HasPrefix(gwAddr, "unix://") {
				gw = authpb.NewAuthServiceClient(dial(t, gwAddr))
			} else {
				anyone := authpb.NewAuthServiceClient(dial(t, gwAddr))
				if _, err := anyone.Login(from(ctx, "198.51.100.7"), &authpb.LoginRequest{Username: "admin", Password: "wrong-password"}); status.Code(err) != codes.Unavailable {
					t.Fatalf("a client without the gateway's certificate: %v", err)
				}
				gw = authpb.NewAuthServiceClient(dialTLS(t, gwAddr, pairs))
			}
			for range 5 {
				_, err := gw.Login(from(ctx, "203.0.113.99, 198.51.100.7"), &authpb.LoginRequest{Username: "admin", Password: "wrong-password"})
				if status.Code(err) != codes.Unauthenticated {
					t.Fatalf("wrong password through the gateway: %v", err)
				}
			}
			right := &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"}
			if _, err := gw.Login(from(ctx, "198.51.100.7"), right); status.Code(err) != codes.ResourceExhausted {
				t.Fatalf("the client the gateway named is not throttled: %v", err)
			}
			if _, err := gw.Login(from(ctx, "198.51.100.8"), right); err != nil {
				t.Fatalf("another client of the gateway: %v", err)
			}
			if _, err := authpb.NewAuthServiceClient(conn).Login(ctx, right); err != nil {
				t.Fatalf("auth's own port (127.0.0.1): %v", err)
			}
			e.assertAddressFree(t, "203.0.113.99")
		})
	}
}

// TestLoopbackIsNeverATrustedProxy: a trusted proxy range holding a loopback (or unspecified)
// address is refused before anything starts, naming the setting; so is a gateway listener on
// TCP without mutual TLS.
func TestLoopbackIsNeverATrustedProxy(t *testing.T) {
	e := &env{dbURL: "postgres://x@127.0.0.1/db", natsURL: "nats://127.0.0.1:4222"}
	defaults := func() app.Config {
		c := app.Defaults()
		if err := config.Load(&c, nil, []string{"PLINTH_DATABASE_URL=" + e.dbURL, "PLINTH_NATS_URL=" + e.natsURL}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, bad := range []string{"127.0.0.1/32", "127.0.0.0/8", "::1/128", "0.0.0.0/0", "::/0", "::ffff:127.0.0.1/128", "0.0.0.0/32"} {
		c := defaults()
		c.TrustedProxies = []string{"172.29.71.10/32", bad}
		if err := c.ValidateServe(); err == nil || !strings.Contains(err.Error(), "PLINTH_AUTH_TRUSTED_PROXIES") || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("trusted proxy %s: %v", bad, err)
		}
	}
	c := defaults()
	c.TrustedProxies = []string{"172.29.71.10/32"}
	if err := c.ValidateServe(); err != nil {
		t.Fatalf("a single gateway address: %v", err)
	}
	c.GatewayAddr = "127.0.0.1:7011"
	if err := c.ValidateServe(); err == nil || !strings.Contains(err.Error(), "PLINTH_AUTH_GATEWAY_ADDR: a TCP address needs mutual TLS") {
		t.Fatalf("a gateway listener on TCP without TLS: %v", err)
	}
}

// dialTLS connects to addr with the gateway's client pair of p.
func dialTLS(t *testing.T, addr string, p mtlstest.Pairs) *grpc.ClientConn {
	t.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{p.ClientPair(t)}, RootCAs: p.ServerRoots(t), ServerName: "auth"}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
