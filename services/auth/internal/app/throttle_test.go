package app_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// TestOperatorUnlocksWithTheCLI: `auth users unlock NAME` frees a throttled (username, address)
// pair and `auth users unlock-address ADDR` a throttled address, so an operator can always let
// the first admin back in.
func TestOperatorUnlocksWithTheCLI(t *testing.T) {
	e := newEnv(t) // not parallel: the CLI helper swaps os.Stdin/os.Stdout
	c := authpb.NewAuthServiceClient(e.start(t, e.config(t, func(c *app.Config) { c.LockPairAfter, c.LockAddrAfter = 2, 4 })))
	ctx := ctxT(t)
	wrong := func(user string) {
		t.Helper()
		if _, err := c.Login(ctx, &authpb.LoginRequest{Username: user, Password: "wrong-password"}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("wrong password for %s: %v", user, err)
		}
	}
	admin := func() error {
		_, err := c.Login(ctx, &authpb.LoginRequest{Username: "admin", Password: "admin-secret-pw"})
		return err
	}
	wrong("admin")
	wrong("admin")
	if err := admin(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("want the pair throttled: %v", err)
	}
	if out, err := e.users(t, "", "unlock", "Admin"); err != nil || !strings.Contains(out, "cleared 1 login throttle(s) of Admin") {
		t.Fatalf("unlock: %q %v", out, err)
	}
	if err := admin(); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	for _, u := range []string{"mallory", "trent"} { // with admin's two: the address's four
		wrong(u)
	}
	if err := admin(); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("want the address throttled: %v", err)
	}
	if out, err := e.users(t, "", "unlock-address", "127.0.0.1"); err != nil || !strings.Contains(out, "of address 127.0.0.1") {
		t.Fatalf("unlock-address: %q %v", out, err)
	}
	if err := admin(); err != nil {
		t.Fatalf("after unlock-address: %v", err)
	}
	if _, err := e.users(t, "", "unlock-address", "localhost"); err == nil || !strings.Contains(err.Error(), "address: must be an IP address") {
		t.Fatalf("a name instead of an address: %v", err)
	}
}
