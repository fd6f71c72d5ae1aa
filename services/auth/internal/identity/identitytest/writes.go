package identitytest

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	eventsv1 "github.com/plinth-dev/plinth/libs/api/plinth/events/v1"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/events"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// errRefused is the refusal of the update and count functions these behaviours pass.
var errRefused = errors.New("refused")

// Outbox is what a store under this suite shows of the events it wrote, so the suite can
// check that they are exactly those its rules returned. Every store tested must have it.
type Outbox interface {
	// OutboxPayloads returns the payloads written for subject, in the order written.
	OutboxPayloads(ctx context.Context, subject string) ([][]byte, error)
}

// marker is an event no rule of identity builds: seen in the outbox, the store wrote what it
// was given.
func marker(id string) *eventsv1.UserAccessRevoked {
	return &eventsv1.UserAccessRevoked{UserId: id, Reason: eventsv1.TokenRevocationReason_TOKEN_REVOCATION_REASON_ADMIN}
}

// outbox returns every event of like's type the store has written, in order.
func outbox[M proto.Message](st *StoreTest, like M) []M {
	st.T.Helper()
	o, ok := st.Store.(Outbox)
	if !ok {
		st.T.Fatalf("%T does not show its outbox (identitytest.Outbox)", st.Store)
	}
	payloads := testenv.Must(o.OutboxPayloads(st.Ctx, events.SubjectOf(like)))(st.T)
	out := make([]M, len(payloads))
	for i, p := range payloads {
		out[i] = like.ProtoReflect().New().Interface().(M)
		testenv.OK(st.T, proto.Unmarshal(p, out[i]))
	}
	return out
}

// wrote requires the events of got's type in the outbox to be want, in order.
func wrote[M proto.Message](st *StoreTest, what string, like M, want ...M) {
	st.T.Helper()
	got := outbox(st, like)
	if !slices.EqualFunc(got, want, func(a, b M) bool { return proto.Equal(a, b) }) {
		st.T.Fatalf("%s: the outbox holds %v, want %v", what, got, want)
	}
}

// writeBehaviours check that the stores' rule-taking methods decide nothing: the function
// they are given sees the state as stored, and what it returns — rows and events — is written
// as it is, or nothing when it fails.
func writeBehaviours() []behaviour {
	return []behaviour{
		{Name: "write/an update sees the user, the enabled admins and the live tokens and writes only what it returns", Run: func(st *StoreTest) {
			user(st, "root", authz.Admin)
			user(st, "ann", authz.Admin)
			testenv.Must(st.Store.UpdateUser(st.Ctx, "ann", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Disabled = true
				return identity.UserChange{User: u}, nil
			}))(st.T)
			op := user(st, "op", authz.Operator)
			t1 := login(st, op, identity.TokenID("t1"), "192.0.2.1")
			t2 := login(st, op, identity.TokenID("t2"), "192.0.2.1")
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, t2.ID, func(identity.Token) (identity.TokenChange, error) {
				return identity.TokenChange{Reason: identity.RevokeLogout}, nil
			}))
			st.Restart()
			update := func(what string, change func(before identity.UserState) (identity.UserChange, error)) (identity.User, error) {
				st.T.Helper()
				return st.Store.UpdateUser(st.Ctx, "OP", func(before identity.UserState) (identity.UserChange, error) {
					if before.User.ID != op.ID || before.EnabledAdmins != 1 || !slices.Equal(before.LiveTokens, []string{t1.ID}) {
						st.T.Errorf("%s: update saw %+v; want op, 1 enabled admin (ann is disabled) and t1 (t2 is revoked)", what, before)
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
			// Refused: nothing it returns beside its error is written, events included.
			_, err := update("refused", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Role, u.Disabled, u.PasswordHash = authz.Viewer, true, "$refused"
				return identity.UserChange{User: u, Revoked: b.LiveTokens, Reason: identity.RevokeAdmin, Events: []proto.Message{marker("refused")}}, errRefused
			})
			is(st.T, "a refused update", err, errRefused)
			st.Restart()
			if got := testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T); got.Role != authz.Operator || got.Disabled || got.PasswordHash != op.PasswordHash || !live(st, t1.ID) {
				st.T.Fatalf("a refused update wrote: %+v, token live %v", got, live(st, t1.ID))
			}
			wrote(st, "a refused update", &eventsv1.UserAccessRevoked{})
			// A new role without Revoked or Events: the store revokes and publishes nothing.
			got = testenv.Must(update("role", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.Role = authz.Viewer
				return identity.UserChange{User: u}, nil
			}))(st.T)
			st.Restart()
			if got.Role != authz.Viewer || got.Admin || testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T).Role != authz.Viewer || !live(st, t1.ID) {
				st.T.Fatalf("a role written without Revoked: %+v, token live %v", got, live(st, t1.ID))
			}
			wrote(st, "a role alone", &eventsv1.UserAccessRevoked{})
			wrote(st, "a role alone", &eventsv1.TokenRevoked{})
			// Revoked and Events alone: the tokens named are revoked, the events given written.
			testenv.Must(update("revoke", func(b identity.UserState) (identity.UserChange, error) {
				return identity.UserChange{User: b.User, Revoked: b.LiveTokens, Reason: identity.RevokeAdmin, Events: []proto.Message{marker("revoke")}}, nil
			}))(st.T)
			st.Restart()
			if live(st, t1.ID) {
				st.T.Fatal("Revoked left the token live")
			}
			wrote(st, "a revocation", &eventsv1.UserAccessRevoked{}, marker("revoke"))
			wrote(st, "a revocation", &eventsv1.TokenRevoked{})
			// The disabled flag and the hash are written as returned, and updated_at stamped.
			got = testenv.Must(st.Store.UpdateUser(st.Ctx, "op", func(b identity.UserState) (identity.UserChange, error) {
				if len(b.LiveTokens) != 0 {
					st.T.Errorf("revoked tokens are live: %v", b.LiveTokens)
				}
				u := b.User
				u.Disabled, u.PasswordHash = true, "$new"
				return identity.UserChange{User: u}, nil
			}))(st.T)
			if stored := testenv.Must(st.Store.UserByName(st.Ctx, "op"))(st.T); !got.Disabled || got.Role != authz.Viewer || !stored.Disabled || stored.PasswordHash != "$new" || !stored.UpdatedAt.After(op.UpdatedAt) {
				st.T.Fatalf("disabled with a new hash: %+v, stored %+v", got, stored)
			}
			// A change of another user is not written over this one.
			_, err = st.Store.UpdateUser(st.Ctx, "op", func(b identity.UserState) (identity.UserChange, error) {
				u := b.User
				u.ID, u.Disabled = unknownID, false
				return identity.UserChange{User: u}, nil
			})
			if err == nil || !testenv.Must(st.Store.UserByID(st.Ctx, op.ID))(st.T).Disabled {
				st.T.Fatalf("a change of another user was saved over op: %v", err)
			}
		}},
		{Name: "write/an update revokes only live tokens of its user", Run: func(st *StoreTest) {
			alice, bob := user(st, "alice", authz.Operator), user(st, "bob", authz.Operator)
			mine := login(st, alice, identity.TokenID("mine"), "192.0.2.1")
			his := login(st, bob, identity.TokenID("his"), "192.0.2.1")
			for what, ids := range map[string][]string{"another user's token": {mine.ID, his.ID}, "an unknown token": {mine.ID, identity.TokenID("never")}} {
				_, err := st.Store.UpdateUser(st.Ctx, "alice", func(b identity.UserState) (identity.UserChange, error) {
					u := b.User
					u.Disabled = true
					return identity.UserChange{User: u, Revoked: ids, Reason: identity.RevokeAdmin, Events: []proto.Message{marker(what)}}, nil
				})
				if err == nil {
					st.T.Fatalf("revoking %s was written", what)
				}
			}
			st.Restart()
			if !live(st, mine.ID) || !live(st, his.ID) || testenv.Must(st.Store.UserByID(st.Ctx, alice.ID))(st.T).Disabled {
				st.T.Fatal("a change that named tokens not the user's wrote part of itself")
			}
			wrote(st, "refused revocations", &eventsv1.UserAccessRevoked{})
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
		{Name: "write/the end of a login sees the user, its live tokens and the counters and writes what it returns", Run: func(st *StoreTest) {
			u := user(st, "Alice", authz.Operator)
			login(st, u, identity.TokenID("old"), "192.0.2.9")
			t0 := now()
			a := identity.Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: t0}
			p := policy(5, 5)
			for range 2 {
				testenv.OK(st.T, begin(st, a, p))
			}
			st.Restart()
			tok := identity.Token{ID: identity.TokenID("new"), UserID: u.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			var seen []identity.LoginState
			finish := func(c identity.LoginChange, err error) (identity.LoginChange, error) {
				st.T.Helper()
				return st.Store.FinishLogin(st.Ctx, u.ID, a, func(before identity.LoginState) (identity.LoginChange, error) {
					seen = append(seen, before)
					return c, err
				})
			}
			// Refused: nothing it returns is written — token, counters, hash, events.
			all := identity.LoginChange{Token: &tok, PasswordHash: "$refused", Events: []proto.Message{marker("refused")},
				Counters: identity.Counters{Pair: identity.Counter{}, Address: &identity.Counter{Failures: 9, LastFailure: t0}}}
			_, err := finish(all, errRefused)
			is(st.T, "a refused end", err, errRefused)
			st.Restart()
			if live(st, tok.ID) || testenv.Must(st.Store.UserByID(st.Ctx, u.ID))(st.T).PasswordHash != u.PasswordHash {
				st.T.Fatal("a refused end of a login wrote its token or hash")
			}
			wrote(st, "a refused end", &eventsv1.UserAccessRevoked{})
			b := seen[0]
			if b.Username != "Alice" || b.LiveTokens != 1 || b.Counters.Pair.Failures != 2 || b.Counters.Address == nil || b.Counters.Address.Failures != 2 {
				st.T.Fatalf("the end of a login saw %+v (address %+v); want Alice as stored, 1 live token, 2 failures each", b, b.Counters.Address)
			}
			// Nothing to write but counters: the pair goes (the zero Counter), the address is set.
			all.Token, all.PasswordHash, all.Events = nil, "", nil
			testenv.Must(finish(all, nil))(st.T)
			st.Restart()
			testenv.Must(finish(identity.LoginChange{Counters: seen[1].Counters}, nil))(st.T)
			if b := seen[2]; b.LiveTokens != 1 || b.Counters.Pair != (identity.Counter{}) || b.Counters.Address == nil || b.Counters.Address.Failures != 9 {
				st.T.Fatalf("after counters alone the end saw %+v (address %+v); want no pair, the address's 9 failures and no new token", b, b.Counters.Address)
			}
			// Everything: the token, the hash and the events given.
			all = identity.LoginChange{Token: &tok, PasswordHash: "$rehashed", Events: []proto.Message{marker("all")}, Counters: seen[2].Counters}
			testenv.Must(finish(all, nil))(st.T)
			st.Restart()
			if !live(st, tok.ID) || testenv.Must(st.Store.UserByID(st.Ctx, u.ID))(st.T).PasswordHash != "$rehashed" {
				st.T.Fatal("the end of a login did not write its token and hash")
			}
			wrote(st, "the end of a login", &eventsv1.UserAccessRevoked{}, marker("all"))
			// A token of another user is not written for this one's login.
			other := identity.Token{ID: identity.TokenID("other"), UserID: unknownID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
			if _, err := finish(identity.LoginChange{Token: &other, Counters: seen[2].Counters}, nil); err == nil {
				st.T.Fatal("a token of another user ended this login")
			}
		}},
		{Name: "write/a token's revocation sees the token and writes what it returns", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			t1 := login(st, u, identity.TokenID("t1"), "192.0.2.1")
			revoke := func(c identity.TokenChange, err error) ([]identity.Token, error) {
				var seen []identity.Token
				rerr := st.Store.RevokeToken(st.Ctx, t1.ID, func(before identity.Token) (identity.TokenChange, error) {
					seen = append(seen, before)
					return c, err
				})
				return seen, rerr
			}
			seen, err := revoke(identity.TokenChange{Reason: identity.RevokeLogout, Events: []proto.Message{marker("refused")}}, errRefused)
			is(st.T, "a refused revocation", err, errRefused)
			if len(seen) != 1 || seen[0].ID != t1.ID || seen[0].UserID != u.ID || seen[0].Revoked || !seen[0].ExpiresAt.Equal(t1.ExpiresAt) {
				st.T.Fatalf("the revocation saw %+v, want t1 of alice, live", seen)
			}
			testenv.Must(revoke(identity.TokenChange{Events: []proto.Message{marker("events alone")}}, nil))(st.T)
			st.Restart()
			if !live(st, t1.ID) {
				st.T.Fatal("a refused revocation, or one without a reason, revoked the token")
			}
			wrote(st, "a revocation without a reason", &eventsv1.UserAccessRevoked{}, marker("events alone"))
			testenv.Must(revoke(identity.TokenChange{Reason: identity.RevokeLogout}, nil))(st.T)
			if seen := testenv.Must(revoke(identity.TokenChange{}, nil))(st.T); live(st, t1.ID) || len(seen) != 1 || !seen[0].Revoked {
				st.T.Fatalf("after the revocation: live %v, the next saw %+v", live(st, t1.ID), seen)
			}
			wrote(st, "a revocation without events", &eventsv1.TokenRevoked{})
		}},
	}
}
