package identitytest

import (
	"slices"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

func userBehaviours() []behaviour {
	return []behaviour{
		{Name: "user/created user is found by name in any case and by id", Run: func(st *StoreTest) {
			u := user(st, "Alice", authz.Operator)
			if u.ID == "" || u.Username != "Alice" || u.Role != authz.Operator || u.Admin || u.Disabled || u.CreatedAt.IsZero() {
				st.T.Fatalf("created: %+v", u)
			}
			st.Restart()
			byName := testenv.Must(st.Store.UserByName(st.Ctx, "aLICE"))(st.T)
			byID := testenv.Must(st.Store.UserByID(st.Ctx, u.ID))(st.T)
			for _, got := range []identity.User{byName, byID} {
				if got.ID != u.ID || got.Username != "Alice" || got.PasswordHash != "$argon2id$Alice" || got.Role != authz.Operator || got.Disabled {
					st.T.Fatalf("stored: %+v, want %+v", got, u)
				}
			}
			if admin := user(st, "root", authz.Admin); !admin.Admin {
				st.T.Fatalf("an admin's Admin flag: %+v", admin)
			}
			if n := testenv.Must(st.Store.CountUsers(st.Ctx))(st.T); n != 2 {
				st.T.Fatalf("count: %d, want 2", n)
			}
		}},
		{Name: "user/unknown name or id is not found", Run: func(st *StoreTest) {
			user(st, "alice", authz.Operator)
			st.Restart()
			_, err := st.Store.UserByName(st.Ctx, "bob")
			is(st.T, "unknown name", err, identity.ErrNotFound)
			_, err = st.Store.UserByID(st.Ctx, unknownID)
			is(st.T, "unknown id", err, identity.ErrNotFound)
			_, err = st.Store.UserByID(st.Ctx, "not-an-id")
			is(st.T, "malformed id", err, identity.ErrNotFound)
			_, err = st.Store.UpdateUser(st.Ctx, "bob", identity.NewPassword("$h"))
			is(st.T, "password of an unknown name", err, identity.ErrNotFound)
			_, err = st.Store.UpdateUser(st.Ctx, "bob", identity.ChangeDisabled(true))
			is(st.T, "disable an unknown name", err, identity.ErrNotFound)
			_, err = st.Store.UpdateUser(st.Ctx, "bob", identity.ChangeRole(authz.Viewer))
			is(st.T, "role of an unknown name", err, identity.ErrNotFound)
		}},
		{Name: "user/usernames are unique case-insensitively", Run: func(st *StoreTest) {
			user(st, "Alice", authz.Operator)
			st.Restart()
			_, err := st.Store.CreateUser(st.Ctx, "aliCE", "$h", authz.Admin)
			is(st.T, "same name in another case", err, identity.ErrExists)
			if n := testenv.Must(st.Store.CountUsers(st.Ctx))(st.T); n != 1 {
				st.T.Fatalf("count after the conflict: %d", n)
			}
			if got := testenv.Must(st.Store.UserByName(st.Ctx, "alice"))(st.T); got.Role != authz.Operator {
				st.T.Fatalf("the conflict changed the user: %+v", got)
			}
		}},
		{Name: "user/list and pages are ordered case-insensitively", Run: func(st *StoreTest) {
			for _, n := range []string{"carol", "Bob", "alice", "Dave"} {
				user(st, n, authz.Viewer)
			}
			st.Restart()
			names := func(us []identity.User) []string {
				var out []string
				for _, u := range us {
					out = append(out, u.Username)
				}
				return out
			}
			want := func(what string, got []identity.User, w ...string) {
				if !slices.Equal(names(got), w) {
					st.T.Fatalf("%s: %v, want %v", what, names(got), w)
				}
			}
			want("list", testenv.Must(st.Store.ListUsers(st.Ctx))(st.T), "alice", "Bob", "carol", "Dave")
			want("first page", testenv.Must(st.Store.UsersAfter(st.Ctx, "", 2))(st.T), "alice", "Bob")
			want("after bob", testenv.Must(st.Store.UsersAfter(st.Ctx, "bob", 2))(st.T), "carol", "Dave")
			want("after dave", testenv.Must(st.Store.UsersAfter(st.Ctx, "dave", 2))(st.T))
		}},
		{Name: "user/a login checking the password while the user is disabled or given a new one gets no token", Run: func(st *StoreTest) {
			for _, change := range []struct {
				name   string
				update func(identity.UserState) (identity.UserChange, error)
			}{{"disabled", identity.ChangeDisabled(true)}, {"new password", identity.NewPassword("$reset")}} {
				u := user(st, "mallory-"+strings.ReplaceAll(change.name, " ", "-"), authz.Operator)
				checked := u.PasswordHash // read before the slow check, as Login reads it
				testenv.Must(st.Store.UpdateUser(st.Ctx, u.Username, change.update))(st.T)
				st.Restart()
				at := now()
				tok := identity.Token{ID: identity.TokenID("late-" + u.ID), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
				a := identity.Attempt{Username: u.Username, ClientAddress: "192.0.2.9", At: at}
				c := testenv.Must(st.Store.FinishLogin(st.Ctx, u.ID, a, identity.LoginSucceeded(identity.TokenQuota{}, a, tok, checked, "")))(st.T)
				if c.Refused != identity.ErrBadLogin || c.Token != nil {
					st.T.Fatalf("%s: a login checked against the old state ended with %+v", change.name, c)
				}
				st.Restart()
				if live(st, tok.ID) {
					st.T.Fatalf("%s: the late login's token is live", change.name)
				}
			}
		}},
		{Name: "user/a new password keeps or revokes the tokens", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			t1 := login(st, u, identity.TokenID("t1"), "192.0.2.1")
			// A login's rehash keeps the tokens; an admin's new password revokes them.
			at := now()
			t2 := identity.Token{ID: identity.TokenID("t2"), UserID: u.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			a := identity.Attempt{Username: "alice", ClientAddress: "192.0.2.1", At: at}
			testenv.Must(st.Store.FinishLogin(st.Ctx, u.ID, a, identity.LoginSucceeded(identity.TokenQuota{}, a, t2, u.PasswordHash, "$rehashed")))(st.T)
			st.Restart()
			if got := testenv.Must(st.Store.UserByID(st.Ctx, u.ID))(st.T); got.PasswordHash != "$rehashed" {
				st.T.Fatalf("hash after a rehash: %q", got.PasswordHash)
			}
			if !live(st, t1.ID) || !live(st, t2.ID) {
				st.T.Fatal("a rehash revoked a token")
			}
			testenv.Must(st.Store.UpdateUser(st.Ctx, "ALICE", identity.NewPassword("$changed")))(st.T)
			st.Restart()
			if live(st, t1.ID) || live(st, t2.ID) {
				st.T.Fatal("a changed password kept the token")
			}
			if got := testenv.Must(st.Store.UserByName(st.Ctx, "alice"))(st.T); got.PasswordHash != "$changed" {
				st.T.Fatalf("hash after a change: %q", got.PasswordHash)
			}
		}},
		{Name: "user/disabling revokes the tokens and re-enabling does not restore them", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			t1 := login(st, u, identity.TokenID("t1"), "192.0.2.1")
			if got := testenv.Must(st.Store.UpdateUser(st.Ctx, "ALICE", identity.ChangeDisabled(true)))(st.T); !got.Disabled || got.ID != u.ID {
				st.T.Fatalf("disabled: %+v", got)
			}
			st.Restart()
			if live(st, t1.ID) || !testenv.Must(st.Store.UserByID(st.Ctx, u.ID))(st.T).Disabled {
				st.T.Fatal("a disabled user's token is live")
			}
			if got := testenv.Must(st.Store.UpdateUser(st.Ctx, "alice", identity.ChangeDisabled(false)))(st.T); got.Disabled {
				st.T.Fatalf("enabled: %+v", got)
			}
			st.Restart()
			if live(st, t1.ID) {
				st.T.Fatal("re-enabling brought a revoked token back")
			}
			if t2 := login(st, u, identity.TokenID("t2"), "192.0.2.1"); !live(st, t2.ID) {
				st.T.Fatal("a re-enabled user's new token is not live")
			}
		}},
		{Name: "user/a role change revokes the tokens and the last admin keeps the role", Run: func(st *StoreTest) {
			root := user(st, "root", authz.Admin)
			op := user(st, "op", authz.Operator)
			t1 := login(st, op, identity.TokenID("t1"), "192.0.2.1")
			if got := testenv.Must(st.Store.UpdateUser(st.Ctx, "OP", identity.ChangeRole(authz.Operator)))(st.T); got.Role != authz.Operator {
				st.T.Fatalf("same role: %+v", got)
			}
			if !live(st, t1.ID) {
				st.T.Fatal("setting the same role revoked the token")
			}
			if got := testenv.Must(st.Store.UpdateUser(st.Ctx, "op", identity.ChangeRole(authz.Viewer)))(st.T); got.Role != authz.Viewer || got.ID != op.ID {
				st.T.Fatalf("new role: %+v", got)
			}
			st.Restart()
			if live(st, t1.ID) {
				st.T.Fatal("a role change kept the token")
			}
			_, err := st.Store.UpdateUser(st.Ctx, "root", identity.ChangeRole(authz.Operator))
			is(st.T, "demote the last admin", err, identity.ErrLastAdmin)
			if got := testenv.Must(st.Store.UserByID(st.Ctx, root.ID))(st.T); got.Role != authz.Admin || !got.Admin {
				st.T.Fatalf("the refused demotion changed root: %+v", got)
			}
			testenv.Must(st.Store.UpdateUser(st.Ctx, "op", identity.ChangeRole(authz.Admin)))(st.T)
			st.Restart()
			if got := testenv.Must(st.Store.UpdateUser(st.Ctx, "root", identity.ChangeRole(authz.Operator)))(st.T); got.Role != authz.Operator || got.Admin {
				st.T.Fatalf("demoted with another admin left: %+v", got)
			}
			// A disabled admin administers nothing: it does not count as the one left.
			testenv.Must(st.Store.UpdateUser(st.Ctx, "root", identity.ChangeRole(authz.Admin)))(st.T)
			testenv.Must(st.Store.UpdateUser(st.Ctx, "root", identity.ChangeDisabled(true)))(st.T)
			_, err = st.Store.UpdateUser(st.Ctx, "op", identity.ChangeRole(authz.Viewer))
			is(st.T, "demote the last enabled admin", err, identity.ErrLastAdmin)
		}},
		{Name: "user/revoking a user's tokens counts the live ones", Run: func(st *StoreTest) {
			u := user(st, "alice", authz.Operator)
			other := user(st, "bob", authz.Operator)
			login(st, u, identity.TokenID("t1"), "192.0.2.1")
			login(st, u, identity.TokenID("t2"), "192.0.2.2")
			t3 := login(st, other, identity.TokenID("t3"), "192.0.2.1")
			st.Restart()
			revoked := func() int {
				var n int
				testenv.Must(st.Store.UpdateUser(st.Ctx, u.Username, func(before identity.UserState) (identity.UserChange, error) {
					c, err := identity.RevokeAllTokens(before)
					n = len(c.Revoked)
					return c, err
				}))(st.T)
				return n
			}
			if n := revoked(); n != 2 {
				st.T.Fatalf("revoked %d, want 2", n)
			}
			if n := revoked(); n != 0 {
				st.T.Fatalf("revoked again %d, want 0", n)
			}
			if live(st, identity.TokenID("t1")) || live(st, identity.TokenID("t2")) || !live(st, t3.ID) {
				st.T.Fatal("revoked the wrong tokens")
			}
		}},
	}
}
