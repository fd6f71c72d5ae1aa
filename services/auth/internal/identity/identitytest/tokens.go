package identitytest

import (
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authn"
	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

func tokenBehaviours() []behaviour {
	return []behaviour{
		{Name: "token/live until it expires, with its user's account", Run: func(st *StoreTest) {
			u := user(st, "Alice", authz.Viewer)
			at := now()
			tok := identity.Token{ID: identity.TokenID("t1"), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			testenv.OK(st.T, createToken(st, tok, identity.Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: at}, nil))
			st.Restart()
			a, valid, err := st.Store.ValidToken(st.Ctx, tok.ID, at.Add(time.Hour-time.Second))
			testenv.OK(st.T, err)
			// The account carries the token's expiry (CheckToken's plinth-token-expires).
			want := authn.Account{ID: u.ID, Name: "Alice", Role: authz.Viewer, Expires: tok.ExpiresAt.Truncate(time.Microsecond)}
			if !valid || a.ID != want.ID || a.Name != want.Name || a.Role != want.Role || !a.Expires.Equal(want.Expires) {
				st.T.Fatalf("before expiry: %+v %v, want %+v", a, valid, want)
			}
			if _, valid, err := st.Store.ValidToken(st.Ctx, tok.ID, tok.ExpiresAt); err != nil || valid {
				st.T.Fatalf("at expiry: %v %v, want not live", valid, err)
			}
		}},
		{Name: "token/unknown token is not live and not an error", Run: func(st *StoreTest) {
			user(st, "alice", authz.Operator)
			st.Restart()
			a, valid, err := st.Store.ValidToken(st.Ctx, identity.TokenID("never issued"), now())
			if err != nil || valid || a != (authn.Account{}) {
				st.T.Fatalf("unknown token: %+v %v %v", a, valid, err)
			}
		}},
		{Name: "token/a token of a disabled user is not live", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			testenv.Must(st.Store.UpdateUser(st.Ctx, "alice", identity.ChangeDisabled(true)))(st.T)
			// Login's rule issues no token to a disabled user; a rule that does (the store writes
			// what it is given) shows ValidToken checks the user all the same.
			at := now()
			tok := identity.Token{ID: identity.TokenID("t1"), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			a := identity.Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: at}
			testenv.Must(st.Store.FinishLogin(st.Ctx, u.ID, a, func(before identity.LoginState) (identity.LoginChange, error) {
				return identity.LoginChange{Counters: before.Counters, Token: &tok}, nil
			}))(st.T)
			st.Restart()
			if live(st, tok.ID) {
				st.T.Fatal("a disabled user's token is live")
			}
		}},
		{Name: "token/revoking is idempotent and unknown tokens are no error", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			t1 := login(st, u, identity.TokenID("t1"), "192.0.2.1")
			t2 := login(st, u, identity.TokenID("t2"), "192.0.2.1")
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, t1.ID, identity.SignOut))
			st.Restart()
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, t1.ID, identity.SignOut))
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, identity.TokenID("never issued"), identity.SignOut))
			if live(st, t1.ID) || !live(st, t2.ID) {
				st.T.Fatal("revoking one token must revoke exactly that one")
			}
		}},
		{Name: "token/purge drops dead tokens and idle counters only", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			at := now()
			dead := identity.Token{ID: identity.TokenID("expired"), UserID: u.ID, CreatedAt: at.Add(-3 * time.Hour), ExpiresAt: at.Add(-2 * time.Hour)}
			testenv.OK(st.T, createToken(st, dead, identity.Attempt{Username: "alice", At: at}, nil))
			revoked := login(st, u, identity.TokenID("revoked"), "192.0.2.1")
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, revoked.ID, identity.SignOut))
			kept := login(st, u, identity.TokenID("kept"), "192.0.2.1")
			// One idle counter (a pair with no address: one row), one recent.
			p := policy(5, 5)
			testenv.OK(st.T, begin(st, identity.Attempt{Username: "old", At: at.Add(-48 * time.Hour)}, p))
			testenv.OK(st.T, begin(st, identity.Attempt{Username: "new", At: at}, p))
			st.Restart()
			if n := testenv.Must(st.Store.Purge(st.Ctx, at.Add(time.Minute), at.Add(-24*time.Hour)))(st.T); n != 3 {
				st.T.Fatalf("purged %d rows, want 2 tokens and 1 counter", n)
			}
			if !live(st, kept.ID) {
				st.T.Fatal("purge took a live token")
			}
			if n := testenv.Must(st.Store.ClearUserThrottles(st.Ctx, "new"))(st.T); n != 1 {
				st.T.Fatalf("the recent counter: %d rows, want it kept", n)
			}
			if n := testenv.Must(st.Store.Purge(st.Ctx, at.Add(time.Minute), at.Add(-24*time.Hour)))(st.T); n != 0 {
				st.T.Fatalf("purged again %d", n)
			}
		}},
	}
}
