// Package identitytest is the conformance suite every identity.Store implementation must pass
// (after Waypoint's statetest): a table of behaviours, each run twice — once on one store, once
// reopening the store mid-test, so that nothing a behaviour relies on lives only in a process.
package identitytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory func(t *testing.T) identity.Store

// Reopen returns a fresh store on the same data as s, as a restarted (or another) replica
// would have.
type Reopen func(t *testing.T, s identity.Store) identity.Store

// StoreTest is one behaviour's run against one store: the test, its context, the store under
// test, and Restart, which swaps the store for one reopened on the same data.
type StoreTest struct {
	T      *testing.T
	Ctx    context.Context
	Store  identity.Store
	reopen func() identity.Store
}

// Restart reopens the store (a no-op in the plain variant).
func (st *StoreTest) Restart() { st.Store = st.reopen() }

// behaviour is one row of the conformance table.
type behaviour struct {
	name string
	run  func(st *StoreTest)
}

// behaviours is the conformance table.
func behaviours() []behaviour {
	var all []behaviour
	for _, group := range [][]behaviour{userBehaviours(), tokenBehaviours(), throttleBehaviours()} {
		all = append(all, group...)
	}
	return all
}

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	for _, b := range behaviours() {
		for _, variant := range []string{"plain", "restart"} {
			t.Run(b.name+"/"+variant, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t.Cleanup(cancel)
				st := &StoreTest{T: t, Ctx: ctx, Store: factory(t)}
				st.reopen = func() identity.Store { return st.Store }
				if variant == "restart" {
					st.reopen = func() identity.Store { return reopen(t, st.Store) }
				}
				b.run(st)
			})
		}
	}
}

// unknownID is a well-formed user id no store has issued.
const unknownID = "00000000-0000-4000-8000-000000000000"

// now is the present at the precision every store keeps (Postgres: microseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// must takes a call's (value, error) and returns a check that fails t on the error and
// otherwise gives the value: must(s.UserByName(ctx, "alice"))(t).
func must[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// ok fails t on err.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// is requires errors.Is(err, target).
func is(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: %v, want %v", what, err, target)
	}
}

// user creates a user with a placeholder hash (stores keep hashes, they do not make them).
func user(st *StoreTest, name string, role authz.Role) identity.User {
	st.T.Helper()
	return must(st.Store.CreateUser(st.Ctx, name, "$argon2id$"+name, role))(st.T)
}

// login stores a token of u as a successful login from addr issues it, live for an hour.
func login(st *StoreTest, u identity.User, id, addr string) identity.Token {
	st.T.Helper()
	at := now()
	t := identity.Token{ID: id, UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	ok(st.T, st.Store.CreateToken(st.Ctx, t, identity.Attempt{Username: u.Username, ClientAddress: addr, At: at}))
	return t
}

// live reports whether the token id is valid now.
func live(st *StoreTest, id string) bool {
	st.T.Helper()
	_, valid, err := st.Store.ValidToken(st.Ctx, id, now())
	ok(st.T, err)
	return valid
}
