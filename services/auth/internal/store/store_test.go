package store_test

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/service"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
	"github.com/plinth-dev/plinth/services/auth/internal/store"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func open(t *testing.T) (*store.Store, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	db := testenv.DB(t)
	pool, err := service.OpenPostgres(ctx, db.URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return store.New(pool), ctx
}

func outboxCount(t *testing.T, ctx context.Context, st *store.Store, subject string) int {
	t.Helper()
	n, err := st.CountOutbox(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUsersAreCaseInsensitivelyUnique(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	u, err := st.CreateUser(ctx, "Alice", "$hash", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "alice", "$hash", false); !errors.Is(err, identity.ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	got, err := st.UserByName(ctx, "ALICE")
	if err != nil || got.ID != u.ID || got.Username != "Alice" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if _, err := st.UserByName(ctx, "bob"); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("missing user: %v", err)
	}
	if _, err := st.SetDisabled(ctx, "bob", true); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("disable missing user: %v", err)
	}
}

func TestTokensAndRevocationEvents(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	u, _ := st.CreateUser(ctx, "carol", "$hash", false)
	now := time.Now()
	a := identity.Attempt{Username: "carol", ClientAddress: "10.0.0.1", At: now}
	for _, id := range []string{"t1", "t2", "t3"} {
		if err := st.CreateToken(ctx, identity.Token{ID: id, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, a); err != nil {
			t.Fatal(err)
		}
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.LoginSucceeded{})) != 3 {
		t.Fatal("want one login.succeeded per token")
	}
	if uid, ok, err := st.ValidToken(ctx, "t1", now); err != nil || !ok || uid != u.ID {
		t.Fatalf("t1: %v %v %v", uid, ok, err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t1", now.Add(2*time.Hour)); ok {
		t.Fatal("expired token valid")
	}
	if err := st.RevokeToken(ctx, "t1", identity.RevokeLogout); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, "t1", identity.RevokeLogout); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t1", now); ok {
		t.Fatal("revoked token valid")
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})) != 1 {
		t.Fatal("second revoke of one token must not publish again")
	}
	if _, err := st.SetDisabled(ctx, "carol", true); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t2", now); ok {
		t.Fatal("token of disabled user valid")
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})) != 3 {
		t.Fatal("disabling must revoke (and announce) each remaining token")
	}
	if _, err := st.SetDisabled(ctx, "carol", false); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t2", now); ok {
		t.Fatal("re-enabling must not resurrect revoked tokens")
	}
	n, err := st.Purge(ctx, now.Add(3*time.Hour), now.Add(-time.Hour))
	if err != nil || n < 3 {
		t.Fatalf("purge: %d %v", n, err)
	}
}

func TestLockoutCountsConcurrentAttemptsExactly(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	p := identity.DefaultLockoutPolicy()
	now := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed, locked := 0, 0
	for i := 0; i < 12; i++ {
		wg.Go(func() {
			err := st.BeginAttempt(ctx, identity.Attempt{Username: "Dave", ClientAddress: "10.0.0.9", At: now}, p)
			mu.Lock()
			defer mu.Unlock()
			var le *identity.ErrLocked
			switch {
			case err == nil:
				allowed++
			case errors.As(err, &le):
				locked++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if allowed != p.UserThreshold || locked != 12-p.UserThreshold {
		t.Fatalf("allowed %d, locked %d: exactly %d attempts may be counted", allowed, locked, p.UserThreshold)
	}
	// The lock expires after BaseDelay; a success then resets the username's counter.
	later := now.Add(p.BaseDelay + time.Second)
	a := identity.Attempt{Username: "dave", ClientAddress: "10.0.0.9", At: later}
	if err := st.BeginAttempt(ctx, a, p); err != nil {
		t.Fatalf("after the lock interval: %v", err)
	}
	u, _ := st.CreateUser(ctx, "dave", "$h", false)
	if err := st.CreateToken(ctx, identity.Token{ID: "x", UserID: u.ID, CreatedAt: later, ExpiresAt: later.Add(time.Hour)}, a); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < p.UserThreshold; i++ {
		if err := st.BeginAttempt(ctx, identity.Attempt{Username: "dave", At: later}, p); err != nil {
			t.Fatalf("attempt %d after a success: %v", i, err)
		}
	}
}

// TestUpgradeMakesTheFirstUserAnAdmin opens a database migrated before the admin flag
// existed (only 001) with every migration: the bootstrap user `admin` becomes an admin,
// nobody else does.
func TestUpgradeMakesTheFirstUserAnAdmin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	db := testenv.DB(t)
	first, err := fs.ReadFile(store.Migrations, "migrations/001_create_users_and_tokens.up.sql")
	if err != nil {
		t.Fatal(err)
	}
	old, err := service.OpenPostgres(ctx, db.URL, store.Schema, fstest.MapFS{
		"migrations/001_create_users_and_tokens.up.sql": {Data: first},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Exec(ctx, `INSERT INTO users (username, password_hash) VALUES ('Admin', '$h'), ('bob', '$h')`); err != nil {
		t.Fatal(err)
	}
	old.Close()

	pool, err := service.OpenPostgres(ctx, db.URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	for name, want := range map[string]bool{"admin": true, "bob": false} {
		u, err := st.UserByName(ctx, name)
		if err != nil || u.Admin != want {
			t.Fatalf("%s after the upgrade: admin=%v %v", name, u.Admin, err)
		}
	}
	if u, err := st.SetAdmin(ctx, "BOB", true); err != nil || !u.Admin {
		t.Fatalf("grant: %+v %v", u, err)
	}
	if _, err := st.SetAdmin(ctx, "nobody", true); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("grant to nobody: %v", err)
	}
}
