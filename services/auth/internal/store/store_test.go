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
	"github.com/plinth-dev/plinth/libs/platform/authz"
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

// issue ends the attempt a with the token t as a successful Login does (no quota), rehash
// ("": none) replacing the password hash.
func issue(ctx context.Context, st *store.Store, t identity.Token, a identity.Attempt, rehash string) error {
	u, err := st.UserByID(ctx, t.UserID)
	if err != nil {
		return err
	}
	_, err = st.FinishLogin(ctx, t.UserID, a, identity.LoginSucceeded(identity.TokenQuota{}, a, t, u.PasswordHash, rehash))
	return err
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
	u, err := st.CreateUser(ctx, "Alice", "$hash", authz.Operator)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "alice", "$hash", authz.Operator); !errors.Is(err, identity.ErrExists) {
		t.Fatalf("duplicate: %v", err)
	}
	got, err := st.UserByName(ctx, "ALICE")
	if err != nil || got.ID != u.ID || got.Username != "Alice" {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if _, err := st.UserByName(ctx, "bob"); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("missing user: %v", err)
	}
	if _, err := st.UpdateUser(ctx, "bob", identity.ChangeDisabled(true)); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("disable missing user: %v", err)
	}
}

func TestTokensAndRevocationEvents(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	u, _ := st.CreateUser(ctx, "carol", "$hash", authz.Operator)
	now := time.Now()
	a := identity.Attempt{Username: "carol", ClientAddress: "10.0.0.1", At: now}
	for _, id := range []string{"t1", "t2", "t3"} {
		if err := issue(ctx, st, identity.Token{ID: id, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, a, ""); err != nil {
			t.Fatal(err)
		}
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.LoginSucceeded{})) != 3 {
		t.Fatal("want one login.succeeded per token")
	}
	if uid, ok, err := st.ValidToken(ctx, "t1", now); err != nil || !ok || uid.ID != u.ID || uid.Name != "carol" || uid.Role != authz.Operator {
		t.Fatalf("t1: %v %v %v", uid, ok, err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t1", now.Add(2*time.Hour)); ok {
		t.Fatal("expired token valid")
	}
	if err := st.RevokeToken(ctx, "t1", identity.SignOut); err != nil {
		t.Fatal(err)
	}
	if err := st.RevokeToken(ctx, "t1", identity.SignOut); err != nil { // idempotent
		t.Fatal(err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t1", now); ok {
		t.Fatal("revoked token valid")
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})) != 1 {
		t.Fatal("second revoke of one token must not publish again")
	}
	if _, err := st.UpdateUser(ctx, "carol", identity.ChangeDisabled(true)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ValidToken(ctx, "t2", now); ok {
		t.Fatal("token of disabled user valid")
	}
	if outboxCount(t, ctx, st, events.SubjectOf(&eventsv1.TokenRevoked{})) != 3 {
		t.Fatal("disabling must revoke (and announce) each remaining token")
	}
	if _, err := st.UpdateUser(ctx, "carol", identity.ChangeDisabled(false)); err != nil {
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
			err := st.BeginAttempt(ctx, identity.Attempt{Username: "Dave", ClientAddress: "10.0.0.9", At: now}, p.Count(now))
			mu.Lock()
			defer mu.Unlock()
			var le *identity.LockedError
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
	if allowed != p.PairThreshold || locked != 12-p.PairThreshold {
		t.Fatalf("allowed %d, locked %d: exactly %d attempts may be counted", allowed, locked, p.PairThreshold)
	}
	// The throttle expires after BaseDelay; a success then resets the pair's counter.
	later := now.Add(p.BaseDelay + time.Second)
	a := identity.Attempt{Username: "dave", ClientAddress: "10.0.0.9", At: later}
	if err := st.BeginAttempt(ctx, a, p.Count(a.At)); err != nil {
		t.Fatalf("after the lock interval: %v", err)
	}
	u, _ := st.CreateUser(ctx, "dave", "$h", authz.Operator)
	if err := issue(ctx, st, identity.Token{ID: "x", UserID: u.ID, CreatedAt: later, ExpiresAt: later.Add(time.Hour)}, a, ""); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < p.PairThreshold; i++ {
		if err := st.BeginAttempt(ctx, identity.Attempt{Username: "DAVE", ClientAddress: "10.0.0.9", At: later}, p.Count(later)); err != nil {
			t.Fatalf("attempt %d after a success: %v", i, err)
		}
	}
}

// migrationsUpTo is the embedded migrations numbered up to last (e.g. "002").
func migrationsUpTo(t *testing.T, last string) fstest.MapFS {
	t.Helper()
	entries, err := fs.ReadDir(store.Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	out := fstest.MapFS{}
	for _, e := range entries {
		if e.Name()[:3] > last {
			continue
		}
		data, err := fs.ReadFile(store.Migrations, "migrations/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		out["migrations/"+e.Name()] = &fstest.MapFile{Data: data}
	}
	return out
}

// TestUpgradeGivesEveryUserARole opens a database migrated before the admin flag existed (only
// 001), then one before roles existed (up to 003), with every migration: the bootstrap user
// `admin` and a user made an admin under 002 become admins, everyone else an operator (what
// they could do before), and the role column refuses names authz does not know.
func TestUpgradeGivesEveryUserARole(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	db := testenv.DB(t)
	step := func(last, sql string) {
		t.Helper()
		old, err := service.OpenPostgres(ctx, db.URL, store.Schema, migrationsUpTo(t, last))
		if err != nil {
			t.Fatal(err)
		}
		defer old.Close()
		if _, err := old.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	step("001", `INSERT INTO users (username, password_hash) VALUES ('Admin', '$h'), ('bob', '$h'), ('carol', '$h')`)
	step("003", `UPDATE users SET admin = true WHERE username = 'carol'`)

	pool, err := service.OpenPostgres(ctx, db.URL, store.Schema, store.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st := store.New(pool)
	for name, want := range map[string]authz.Role{"admin": authz.Admin, "bob": authz.Operator, "carol": authz.Admin} {
		u, err := st.UserByName(ctx, name)
		if err != nil || u.Role != want || u.Admin != (want == authz.Admin) {
			t.Fatalf("%s after the upgrade: role %q admin %v %v", name, u.Role, u.Admin, err)
		}
	}
	var admin bool
	if err := pool.QueryRow(ctx, `SELECT admin FROM users WHERE username = 'bob'`).Scan(&admin); err != nil || admin {
		t.Fatalf("the admin column must follow the role: %v %v", admin, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE users SET role = 'root' WHERE username = 'bob'`); err == nil {
		t.Fatal("the role column accepted an unknown role")
	}
	if u, err := st.UpdateUser(ctx, "BOB", identity.ChangeRole(authz.Viewer)); err != nil || u.Role != authz.Viewer {
		t.Fatalf("set role: %+v %v", u, err)
	}
	if _, err := st.UpdateUser(ctx, "nobody", identity.ChangeRole(authz.Admin)); !errors.Is(err, identity.ErrNotFound) {
		t.Fatalf("set role of nobody: %v", err)
	}
}

// TestSetRoleKeepsAnAdminAndRevokesTokens: a role change revokes every live token of the user
// (one token.revoked event each, as disabling does); setting the role a user has changes
// nothing; the last enabled admin cannot be demoted, also when two admins demote each other at
// once.
func TestSetRoleKeepsAnAdminAndRevokesTokens(t *testing.T) {
	t.Parallel()
	st, ctx := open(t)
	if _, err := st.CreateUser(ctx, "root", "$h", authz.Admin); err != nil {
		t.Fatal(err)
	}
	dan, _ := st.CreateUser(ctx, "dan", "$h", authz.Operator)
	now := time.Now()
	for _, id := range []string{"d1", "d2"} {
		if err := issue(ctx, st, identity.Token{ID: id, UserID: dan.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, identity.Attempt{Username: "dan", At: now}, ""); err != nil {
			t.Fatal(err)
		}
	}
	revoked := events.SubjectOf(&eventsv1.TokenRevoked{})
	if u, err := st.UpdateUser(ctx, "dan", identity.ChangeRole(authz.Operator)); err != nil || u.Role != authz.Operator {
		t.Fatalf("same role: %+v %v", u, err)
	}
	if a, ok, _ := st.ValidToken(ctx, "d1", now); !ok || a.Role != authz.Operator || outboxCount(t, ctx, st, revoked) != 0 {
		t.Fatal("setting the role a user has must not revoke anything")
	}
	if u, err := st.UpdateUser(ctx, "dan", identity.ChangeRole(authz.Viewer)); err != nil || u.Role != authz.Viewer || u.Admin {
		t.Fatalf("demote: %+v %v", u, err)
	}
	for _, id := range []string{"d1", "d2"} {
		if _, ok, _ := st.ValidToken(ctx, id, now); ok {
			t.Fatalf("token %s survived a role change", id)
		}
	}
	if n := outboxCount(t, ctx, st, revoked); n != 2 {
		t.Fatalf("%d token.revoked events, want one per token (2)", n)
	}

	if _, err := st.UpdateUser(ctx, "root", identity.ChangeRole(authz.Operator)); !errors.Is(err, identity.ErrLastAdmin) {
		t.Fatalf("demoting the last admin: %v", err)
	}
	// A disabled admin does not count: it cannot sign in to administer anyone.
	if _, err := st.UpdateUser(ctx, "dan", identity.ChangeRole(authz.Admin)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateUser(ctx, "dan", identity.ChangeDisabled(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateUser(ctx, "root", identity.ChangeRole(authz.Operator)); !errors.Is(err, identity.ErrLastAdmin) {
		t.Fatalf("demoting the last enabled admin: %v", err)
	}
	if u, err := st.UpdateUser(ctx, "dan", identity.ChangeRole(authz.Viewer)); err != nil || u.Role != authz.Viewer {
		t.Fatalf("demoting a disabled admin: %+v %v", u, err)
	}
	if _, err := st.UpdateUser(ctx, "dan", identity.ChangeDisabled(false)); err != nil {
		t.Fatal(err)
	}

	// Two admins demote each other at once: exactly one demotion succeeds.
	if _, err := st.UpdateUser(ctx, "dan", identity.ChangeRole(authz.Admin)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, name := range []string{"root", "dan"} {
		wg.Go(func() { _, errs[i] = st.UpdateUser(ctx, name, identity.ChangeRole(authz.Operator)) })
	}
	wg.Wait()
	if (errs[0] == nil) == (errs[1] == nil) || !(errors.Is(errs[0], identity.ErrLastAdmin) || errors.Is(errs[1], identity.ErrLastAdmin)) {
		t.Fatalf("concurrent demotions: %v, %v; want one success and one ErrLastAdmin", errs[0], errs[1])
	}
}
