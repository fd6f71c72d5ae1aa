package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminpb "github.com/plinth-dev/plinth/libs/api/plinth/auth/v1"
	authpb "github.com/plinth-dev/plinth/libs/api/services/auth"
	"github.com/plinth-dev/plinth/services/auth/internal/app"
)

// TestTokenQuota is issue #36's "a viewer can mint any number of session tokens", on the wire
// and at the default limit (100 live tokens per user): the 101st login of a viewer is
// ResourceExhausted naming the limit and its setting, and issues nothing; another user is not
// affected; signing out frees a place; logins racing for the last places never take more
// than there are.
func TestTokenQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Enough argon2id places and lockout room for the racing logins from one address: a full
	// gate, or attempts in flight counted against the pair, would answer ResourceExhausted too,
	// for other reasons.
	conn := e.start(t, e.config(t, func(c *app.Config) {
		c.HashConcurrency, c.HashQueue, c.LockPairAfter, c.LockAddrAfter = 16, 64, 50, 100
	}))
	// A hundred and more logins, each an argon2id hash: minutes on a loaded machine, not 30 s.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := authpb.NewAuthServiceClient(conn)
	root := bearer(ctx, login(t, ctx, c, "admin", "admin-secret-pw").GetToken())
	for _, name := range []string{"vera", "walt"} {
		if _, err := adminpb.NewAdminServiceClient(conn).CreateUser(root, &adminpb.CreateUserRequest{Username: name, Password: name + "-password", Role: "viewer"}); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 100
	held := make([]string, 0, limit)
	for range limit {
		held = append(held, login(t, ctx, c, "vera", "vera-password").GetToken())
	}
	refused := func(what string) {
		t.Helper()
		_, err := c.Login(ctx, &authpb.LoginRequest{Username: "vera", Password: "vera-password"})
		quotaRefusal(t, what, err)
	}
	refused("the 101st login")
	refused("the 102nd login") // a refusal is not a failed login: no throttle, the same answer
	for _, tok := range held {
		if !checkToken(t, ctx, c, tok) {
			t.Fatal("a token held before the refusal is no longer live")
		}
	}
	login(t, ctx, c, "walt", "walt-password") // another user's quota is his own

	if _, err := c.Logout(bearer(ctx, held[0]), &authpb.LogoutRequest{}); err != nil {
		t.Fatal(err)
	}
	login(t, ctx, c, "vera", "vera-password") // the revoked token's place
	refused("the login after the freed place was taken")

	// Three places free, ten logins at once: three tokens, seven refusals.
	for _, tok := range held[1:4] {
		if _, err := c.Logout(bearer(ctx, tok), &authpb.LogoutRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := c.Login(ctx, &authpb.LoginRequest{Username: "vera", Password: "vera-password"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		if err == nil {
			ok++
			continue
		}
		quotaRefusal(t, "a racing login", err)
	}
	if ok != 3 {
		t.Fatalf("%d racing logins got a token; 3 places were free", ok)
	}
}

// quotaRefusal requires err to be the token quota's ResourceExhausted, naming the limit and
// the setting that configures it.
func quotaRefusal(t *testing.T, what string, err error) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "100 live tokens") ||
		!strings.Contains(st.Message(), "PLINTH_AUTH_MAX_TOKENS_PER_USER") {
		t.Fatalf("%s: %v, want ResourceExhausted naming the limit (100 live tokens) and PLINTH_AUTH_MAX_TOKENS_PER_USER", what, err)
	}
}
