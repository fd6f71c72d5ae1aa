// Package identitytest is the conformance suite every identity.Store implementation must pass
// (after Waypoint's statetest): a table of behaviours, each run twice — once on one store, once
// reopening the store mid-test, so that nothing a behaviour relies on lives only in a process.
package identitytest

import (
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) identity.Store

// Reopen returns a fresh store on the same data as s, as a restarted (or another) replica
// would have.
type Reopen = func(t *testing.T, s identity.Store) identity.Store

// StoreTest is one behaviour's run against one store: the test, its context, the store under
// test, and Restart, which swaps the store for one reopened on the same data.
type StoreTest = testenv.StoreRun[identity.Store]

// behaviour is one row of the conformance table.
type behaviour = testenv.Case[*StoreTest]

// behaviours is the conformance table.
func behaviours() []behaviour {
	var all []behaviour
	for _, group := range [][]behaviour{userBehaviours(), tokenBehaviours(), quotaBehaviours(), throttleBehaviours(), writeBehaviours(), externalBehaviours()} {
		all = append(all, group...)
	}
	return all
}

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, behaviours(), factory, reopen)
}

// unknownID is a well-formed user id no store has issued.
const unknownID = "00000000-0000-4000-8000-000000000000"

// now is the present at the precision every store keeps (Postgres: microseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

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
	return testenv.Must(st.Store.CreateUser(st.Ctx, name, "$argon2id$"+name, role))(st.T)
}

// login stores a token of u as a successful login from addr issues it, live for an hour.
func login(st *StoreTest, u identity.User, id, addr string) identity.Token {
	st.T.Helper()
	at := now()
	t := identity.Token{ID: id, UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	testenv.OK(st.T, createToken(st, t, identity.Attempt{Username: u.Username, ClientAddress: addr, At: at}, nil))
	return t
}

// createToken ends the attempt a with the token t as Login does (identity.LoginSucceeded,
// no quota), except that admit (nil: admit all) is asked with the live tokens the store
// counted and may refuse; it returns the refusal.
func createToken(st *StoreTest, t identity.Token, a identity.Attempt, admit func(live int) error) error {
	u, err := st.Store.UserByID(st.Ctx, t.UserID)
	if err != nil {
		return err
	}
	c, err := st.Store.FinishLogin(st.Ctx, t.UserID, a, func(before identity.LoginState) (identity.LoginChange, error) {
		c, err := identity.LoginSucceeded(identity.TokenQuota{}, a, t, u.PasswordHash, "")(before)
		if admit != nil && err == nil {
			if c.Refused = admit(before.LiveTokens); c.Refused != nil {
				c.Token, c.Events = nil, nil
			}
		}
		return c, err
	})
	if err != nil {
		return err
	}
	return c.Refused
}

// begin begins the attempt a under the lockout policy p, as Login does.
func begin(st *StoreTest, a identity.Attempt, p identity.LockoutPolicy) error {
	return st.Store.BeginAttempt(st.Ctx, a, p.Count(a.At))
}

// live reports whether the token id is valid now.
func live(st *StoreTest, id string) bool {
	st.T.Helper()
	_, valid, err := st.Store.ValidToken(st.Ctx, id, now())
	testenv.OK(st.T, err)
	return valid
}
