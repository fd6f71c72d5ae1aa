package app_test

import (
	"context"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/gateway/internal/app"
)

// TestForgedForwardedForThroughTheGateway (issue #36, "x-forwarded-for from any local client
// is believed"): auth and the gateway wired as make up wires them; a local client at
// 127.0.0.1 (the gateway's own address, which make up's auth used to trust) sends 30 wrong
// passwords for admin through the gateway, each with a new forged x-forwarded-for. They are
// counted at its real address, so it is throttled; a client at another address (127.0.0.2)
// still signs in through the gateway, which shows auth believes the gateway's own forwarding;
// and no forged address has a failure counter.
func TestForgedForwardedForThroughTheGateway(t *testing.T) {
	t.Parallel()
	s := newSuite(t)
	g := s.gateway(t, app.Options{})
	attacker := authpb.NewAuthServiceClient(g.conn)
	ctx := ctxT(t)
	throttled := 0
	for i := range 30 {
		forged := metadata.AppendToOutgoingContext(ctx, "x-forwarded-for", fmt.Sprintf("203.0.113.%d", i+1))
		_, err := attacker.Login(forged, &authpb.LoginRequest{Username: "admin", Password: "wrong-password"})
		switch status.Code(err) {
		case codes.ResourceExhausted:
			throttled++
		case codes.Unauthenticated:
		default:
			t.Fatalf("wrong password %d: %v", i, err)
		}
	}
	if throttled < 30-5 {
		t.Fatalf("30 wrong passwords from 127.0.0.1 with forged x-forwarded-for through the gateway: %d throttled, want all after the 5th", throttled)
	}
	right := &authpb.LoginRequest{Username: "admin", Password: adminPassword}
	if _, err := attacker.Login(ctx, right); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("the right password from the throttled 127.0.0.1: %v", err)
	}
	if _, err := authpb.NewAuthServiceClient(dialFrom(t, g.addr, "127.0.0.2")).Login(ctx, right); err != nil {
		t.Fatalf("admin from 127.0.0.2 through the gateway, not the attacker's address: %v", err)
	}
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM login_failures WHERE key LIKE '%203.0.113.%'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d failure counters at forged addresses: a client chose whom to lock out", n)
	}
}

// dialFrom connects to addr from the local address ip (any of 127.0.0.0/8 on Linux), as a
// second local client.
func dialFrom(t *testing.T, addr, ip string) *grpc.ClientConn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
