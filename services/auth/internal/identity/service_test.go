package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

// These tests drive identity.Service over the real Postgres store: expiry and rehashing
// involve both the rules and what the store keeps.

func TestMain(m *testing.M) { testenv.Main(m) }

func open(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	pool, err := service.OpenPostgres(ctx, testenv.DB(t).URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool), ctx
}

// cheap are fast argon2id parameters; stronger ones stand for "the operator raised them".
func cheap() identity.HashParams {
	return identity.HashParams{Memory: 8 * 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

func newService(t *testing.T, st identity.Store, p identity.HashParams, now func() time.Time) *identity.Service {
	t.Helper()
	svc, err := identity.NewService(st, identity.Options{Hash: p, Lockout: identity.DefaultLockoutPolicy(), TokenTTL: time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestTokensExpire(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	clock := time.Now()
	svc := newService(t, st, cheap(), func() time.Time { return clock })
	if _, err := svc.AddUser(ctx, "erin", "erin-password", authz.Operator); err != nil {
		t.Fatal(err)
	}
	token, tok, err := svc.Login(ctx, "erin", "erin-password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if !tok.ExpiresAt.Equal(clock.Add(time.Hour)) {
		t.Fatalf("expires %v", tok.ExpiresAt)
	}
	clock = clock.Add(59 * time.Minute)
	if _, ok, _ := svc.CheckToken(ctx, token); !ok {
		t.Fatal("token invalid before its expiry")
	}
	clock = clock.Add(2 * time.Minute)
	if _, ok, _ := svc.CheckToken(ctx, token); ok {
		t.Fatal("token valid after its expiry")
	}
}

func TestLoginRehashesWithRaisedParameters(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	old := newService(t, st, cheap(), nil)
	if _, err := old.AddUser(ctx, "frank", "frank-password", authz.Operator); err != nil {
		t.Fatal(err)
	}
	raised := cheap()
	raised.Iterations = 3
	if _, _, err := newService(t, st, raised, nil).Login(ctx, "frank", "frank-password", ""); err != nil {
		t.Fatal(err)
	}
	u, _ := st.UserByName(ctx, "frank")
	if !strings.Contains(u.PasswordHash, "m=8192,t=3,p=1") {
		t.Fatalf("hash not upgraded on login: %s", u.PasswordHash[:30])
	}
	// The upgraded hash still verifies, and old-parameter services can still read it.
	if _, _, err := old.Login(ctx, "frank", "frank-password", ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Login(ctx, "frank", "wrong-password", ""); !errors.Is(err, identity.ErrBadLogin) {
		t.Fatalf("wrong password: %v", err)
	}
}

// TestTokenQuotaFreedByExpiry: a user at the token quota gets *TokenQuotaError and no token,
// whoever else logs in; once their tokens expire (here: the clock moves past the TTL) the
// places are free again — expired tokens never count.
func TestTokenQuotaFreedByExpiry(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	clock := time.Now()
	svc, err := identity.NewService(st, identity.Options{Hash: cheap(), Lockout: identity.DefaultLockoutPolicy(), TokenTTL: time.Hour,
		Tokens: identity.TokenQuota{MaxPerUser: 2}, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"vera", "walt"} {
		if _, err := svc.AddUser(ctx, u, u+"-password", authz.Viewer); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, _, err := svc.Login(ctx, "vera", "vera-password", "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = svc.Login(ctx, "vera", "vera-password", "192.0.2.1")
	var qe *identity.TokenQuotaError
	if !errors.As(err, &qe) || qe.Username != "vera" || qe.Live != 2 || qe.Limit != 2 ||
		!strings.Contains(err.Error(), identity.TokensQuotaSetting) {
		t.Fatalf("the third login: %v, want a *TokenQuotaError for vera naming %s", err, identity.TokensQuotaSetting)
	}
	if _, _, err := svc.Login(ctx, "walt", "walt-password", "192.0.2.1"); err != nil {
		t.Fatalf("another user: %v", err)
	}
	clock = clock.Add(time.Hour + time.Second)
	for range 2 {
		if _, _, err := svc.Login(ctx, "vera", "vera-password", "192.0.2.1"); err != nil {
			t.Fatalf("after the first tokens expired: %v", err)
		}
	}
}
