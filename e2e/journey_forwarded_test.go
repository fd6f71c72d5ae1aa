package e2e

import (
	"context"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// journeyLockoutPerAddress: behind the gateway auth counts the browser's address — the TCP
// address the gateway saw, which it names on auth's gateway listener — not 127.0.0.1 for every
// browser, and never an address the browser wrote itself (issue #36). Wrong logins from one
// address lock that address, whatever x-forwarded-for they carry; a login from another
// address still works, and the forged address was never locked.
func (s *journeySuite) journeyLockoutPerAddress(t *testing.T) {
	guesserIP, elsewhereIP := loopbackAddr(2, 120), loopbackAddr(130, 250)
	guesser := authpb.NewAuthServiceClient(gatewayFrom(t, s.endpoints.Gateway, guesserIP))
	forged := func(addr string) context.Context {
		return metadata.AppendToOutgoingContext(callCtx(t), "x-forwarded-for", addr)
	}
	const victim = "203.0.113.7"
	// A new username and a new forged address each time: only the real address's limit (20)
	// can throttle, not a pair's (5).
	locked := false
	for i := 0; i < 25 && !locked; i++ {
		_, err := guesser.Login(forged("203.0.113."+strconv.Itoa(10+i)), &authpb.LoginRequest{Username: "guess-" + randomHex(t, 4), Password: "wrong-password"})
		switch status.Code(err) {
		case codes.Unauthenticated:
		case codes.ResourceExhausted:
			locked = true
		default:
			t.Fatalf("wrong login %d from %s: %v", i+1, guesserIP, err)
		}
	}
	if !locked {
		t.Fatalf("25 wrong logins from %s with forged x-forwarded-for through the gateway did not lock its address", guesserIP)
	}
	if _, err := guesser.Login(forged(victim), &authpb.LoginRequest{Username: "admin", Password: s.password}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("admin's login from the locked %s naming another address: %v, want ResourceExhausted", guesserIP, err)
	}
	elsewhere := authpb.NewAuthServiceClient(gatewayFrom(t, s.endpoints.Gateway, elsewhereIP))
	if _, err := elsewhere.Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password}); err != nil {
		t.Errorf("admin's login from %s after %s was locked: %v (auth counts the gateway's address, not the browser's)", elsewhereIP, guesserIP, err)
	}
	// The suite's usual address is not affected either, whatever a request names.
	victimConn := authpb.NewAuthServiceClient(gatewayFrom(t, s.endpoints.Gateway, "127.0.0.1"))
	if _, err := victimConn.Login(forged("203.0.113.10"), &authpb.LoginRequest{Username: "admin", Password: s.password}); err != nil {
		t.Errorf("admin's login from 127.0.0.1 after forged guesses: %v", err)
	}
}

// loopbackAddr is a random address of 127.0.0.lo–hi: on Linux every 127/8 address is this
// machine's, so a test client has an address of its own without forging one.
func loopbackAddr(lo, hi int) string {
	return "127.0.0." + strconv.Itoa(lo+rand.IntN(hi-lo+1))
}

// dialerFrom connects from the local address ip.
func dialerFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: callTimeout}
}

// gatewayFrom is a gRPC connection to the gateway at addr from the local address ip.
func gatewayFrom(t *testing.T, addr, ip string) *grpc.ClientConn {
	t.Helper()
	d := dialerFrom(ip)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return d.DialContext(ctx, "tcp", a) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// httpFrom is an HTTP client whose connections come from the local address ip.
func httpFrom(ip string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialerFrom(ip).DialContext
	return &http.Client{Timeout: callTimeout, Transport: tr}
}
