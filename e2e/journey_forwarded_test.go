package e2e

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
)

// journeyLockoutPerAddress: behind the gateway auth counts the browser's address (the
// gateway's x-forwarded-for, which make up tells auth to believe), not 127.0.0.1 for every
// browser. Wrong logins from one address lock that address; a login from another address,
// and one without x-forwarded-for, still work.
func (s *journeySuite) journeyLockoutPerAddress(t *testing.T) {
	auth := authpb.NewAuthServiceClient(s.gw)
	from := func(addr string) context.Context {
		return metadata.AppendToOutgoingContext(callCtx(t), "x-forwarded-for", addr)
	}
	const guesser = "203.0.113.7"
	// A new username each time: only the address's limit (20) can throttle, not a pair's (5).
	locked := false
	for i := 0; i < 25 && !locked; i++ {
		_, err := auth.Login(from(guesser), &authpb.LoginRequest{Username: "guess-" + randomHex(t, 4), Password: "wrong-password"})
		switch status.Code(err) {
		case codes.Unauthenticated:
		case codes.ResourceExhausted:
			locked = true
		default:
			t.Fatalf("wrong login %d from %s: %v", i+1, guesser, err)
		}
	}
	if !locked {
		t.Fatalf("25 wrong logins from %s through the gateway did not lock that address", guesser)
	}
	if _, err := auth.Login(from(guesser), &authpb.LoginRequest{Username: "admin", Password: s.password}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("admin's login from the locked %s: %v, want ResourceExhausted", guesser, err)
	}
	if _, err := auth.Login(from("198.51.100.9"), &authpb.LoginRequest{Username: "admin", Password: s.password}); err != nil {
		t.Errorf("admin's login from another address after %s was locked: %v (auth counts the gateway's address, not the browser's)", guesser, err)
	}
	if _, err := auth.Login(callCtx(t), &authpb.LoginRequest{Username: "admin", Password: s.password}); err != nil {
		t.Errorf("admin's login without x-forwarded-for after %s was locked: %v", guesser, err)
	}
}
