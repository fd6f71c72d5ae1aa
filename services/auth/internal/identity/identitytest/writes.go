package identitytest

import (
	"errors"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// errRefused is the refusal of the update and count functions these behaviours pass.
var errRefused = errors.New("refused")

// writeBehaviours check that UpdateUser and BeginAttempt decide nothing: the function they
// are given sees the state as stored, and what it returns is written as it is, or nothing
// when it fails.
func writeBehaviours() []behaviour {
	return []behaviour{
		{Name: "write/an update sees the user and the enabled admins and writes only what it returns", Run: func(st *StoreTest) {
			user(st, "root", authz.Admin)
			user(st, "ann", authz.Admin)
			testenv.Must(st.Store.SetDisabled(st.Ctx, "ann", true))(st.T)
			op := user(st, "op", authz.Operator)
			t1 := login(st, op, identity.TokenID("t1"), "192.0.2.1")
			st.Restart()
			update := func(what string, change func(before identity.UserState) (identity.UserChange, error)) (identity.User, error) {
				st.T.Helper()
				return st.Store.UpdateUser(st.Ctx, "OP", func(before identity.UserState) (identity.UserChange, error) {
					if before.User.ID != op.ID || before.EnabledAdmins != 1 {
						st.T.Errorf("%s: update saw %+v; want op and 1 enabled admin (ann is disabled)", what, before)
					}
					return change(before)
				})
			}
			// Unchanged: nothing is written, not even the time of the change.
			got := testenv.Must(update("first", func(b identity.UserState) (identity.UserChange, error) {
				return identity.UserChange{User: b.User}, nil
			}))(st.T)
			if got.Role != authz.Operator || !got.UpdatedAt.Equal(op.UpdatedAt) {
				st.T.Fatalf("an unchanged user was written: %+v, was %+v", got, op)
			}
			// Refused: the change it returns beside its error is not written.
			_, err := update("refused", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Role = authz.Viewer
				return identity.UserChange{User: u, Revoke: identity.RevokeAdmin}, errRefused
			})
			is(st.T, "a refused update", err, errRefused)
			st.Restart()
			if got := testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T); got.Role != authz.Operator || !live(st, t1.ID) {
				st.T.Fatalf("a refused update wrote: %+v, token live %v", got, live(st, t1.ID))
			}
			// A new role without Revoke: the store revokes nothing on its own.
			got = testenv.Must(update("role", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Role = authz.Viewer
				return identity.UserChange{User: u}, nil
			}))(st.T)
			st.Restart()
			if got.Role != authz.Viewer || got.Admin || testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T).Role != authz.Viewer || !live(st, t1.ID) {
				st.T.Fatalf("a role written without Revoke: %+v, token live %v", got, live(st, t1.ID))
			}
			// Revoke alone revokes and writes no field; the disabled flag is written as returned.
			testenv.Must(update("revoke", func(b identity.UserState) (identity.UserChange, error) {
				return identity.UserChange{User: b.User, Revoke: identity.RevokeAdmin}, nil
			}))(st.T)
			st.Restart()
			if live(st, t1.ID) {
				st.T.Fatal("Revoke left the token live")
			}
			got = testenv.Must(update("disable", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Disabled = true
				return identity.UserChange{User: u}, nil
			}))(st.T)
			if !got.Disabled || got.Role != authz.Viewer || !testenv.Must(st.Store.UserByName(st.Ctx, "op"))(st.T).Disabled {
				st.T.Fatalf("disabled: %+v", got)
			}
			// A change of another user is not written over this one.
			_, err = update("other", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.ID, u.Disabled = unknownID, false
				return identity.UserChange{User: u}, nil
			})
			if err == nil || !testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T).Disabled {
				st.T.Fatalf("a change of another user was saved over op: %v", err)
			}
		}},
		{Name: "write/an attempt's count sees the counters as stored and writes what it returns", Run: func(st *StoreTest) {
			t0 := now()
			a := identity.Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: t0}
			var seen []identity.Counters
			begin := func(a identity.Attempt, after identity.Counters, err error) error {
				st.T.Helper()
				return st.Store.BeginAttempt(st.Ctx, a, func(before identity.Counters) (identity.Counters, error) {
					seen = append(seen, before)
					return after, err
				})
			}
			counter := func(n int, at time.Time) *identity.Counter { return &identity.Counter{Failures: n, LastFailure: at} }
			testenv.OK(st.T, begin(a, identity.Counters{Pair: *counter(7, t0), Address: counter(3, t0.Add(-time.Minute))}, nil))
			if b := seen[0]; b.Pair.Failures != 0 || b.Address == nil || b.Address.Failures != 0 {
				st.T.Fatalf("new counters: %+v, want no failures, with an address counter", b)
			}
			st.Restart()
			is(st.T, "a refused count", begin(a, identity.Counters{Pair: *counter(99, t0), Address: counter(99, t0)}, errRefused), errRefused)
			testenv.OK(st.T, begin(identity.Attempt{Username: "ALICE", ClientAddress: "192.0.2.1", At: t0}, seen[0], nil))
			for i, b := range seen[1:] {
				if b.Pair.Failures != 7 || !b.Pair.LastFailure.Equal(t0) || b.Address == nil || b.Address.Failures != 3 || !b.Address.LastFailure.Equal(t0.Add(-time.Minute)) {
					st.T.Fatalf("count %d saw %+v (address %+v), want the 7 and 3 written first, untouched by the refusal", i+2, b.Pair, b.Address)
				}
			}
			// Without an address: the pair of its own, and no address counter to see or write.
			noAddr := identity.Attempt{Username: "alice", At: t0}
			testenv.OK(st.T, begin(noAddr, identity.Counters{Pair: *counter(1, t0)}, nil))
			if b := seen[3]; b.Address != nil || b.Pair.Failures != 0 {
				st.T.Fatalf("an attempt without an address saw %+v (address %v)", b.Pair, b.Address)
			}
			if err := begin(noAddr, identity.Counters{Pair: *counter(2, t0), Address: counter(1, t0)}, nil); err == nil {
				st.T.Fatal("an address counter was written for an attempt without an address")
			}
			testenv.OK(st.T, begin(noAddr, identity.Counters{Pair: *counter(2, t0)}, nil))
			if b := seen[5]; b.Pair.Failures != 1 {
				st.T.Fatalf("after a refused write the pair has %d failures, want 1", b.Pair.Failures)
			}
		}},
	}
}
