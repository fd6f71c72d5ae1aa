package identitytest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// signInExternal runs a provider's sign-in of ext with token id through the store, as
// identity.SignInExternal does (no quota).
func signInExternal(st *StoreTest, ext identity.ExternalIdentity, id string) (identity.User, identity.ExternalChange) {
	st.T.Helper()
	at := now()
	t := identity.Token{ID: id, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	u, c, err := st.Store.SignInExternal(st.Ctx, ext, identity.ExternalSignedIn(identity.TokenQuota{}, ext, t, ""))
	testenv.OK(st.T, err)
	return u, c
}

func externalBehaviours() []behaviour {
	return []behaviour{
		{Name: "external/a sign-in state is taken once, expired or not", Run: func(st *StoreTest) {
			at := now()
			s := identity.SignInState{ID: identity.TokenID("state"), Provider: "dex", Nonce: "n", CodeVerifier: "v",
				RedirectURI: "https://p.example/auth/oidc/callback", CreatedAt: at, ExpiresAt: at.Add(-time.Second)}
			testenv.OK(st.T, st.Store.SaveSignInState(st.Ctx, s))
			st.Restart()
			got, err := st.Store.TakeSignInState(st.Ctx, s.ID)
			testenv.OK(st.T, err)
			if got.Provider != s.Provider || got.Nonce != s.Nonce || got.CodeVerifier != s.CodeVerifier || got.RedirectURI != s.RedirectURI || !got.ExpiresAt.Equal(s.ExpiresAt) {
				st.T.Fatalf("taken %+v, stored %+v", got, s)
			}
			_, err = st.Store.TakeSignInState(st.Ctx, s.ID)
			is(st.T, "taken twice", err, identity.ErrNotFound)
			_, err = st.Store.TakeSignInState(st.Ctx, identity.TokenID("never"))
			is(st.T, "never stored", err, identity.ErrNotFound)
		}},
		{Name: "external/a provider's user is its (provider, subject), never a username", Run: func(st *StoreTest) {
			local := user(st, "bob", authz.Operator)
			ext := identity.ExternalIdentity{Provider: "dex", Subject: "s-bob", Username: "bob", Role: authz.Viewer}
			u, c := signInExternal(st, ext, identity.TokenID("t1"))
			if u.ID == local.ID || !strings.HasPrefix(u.Username, "bob-") || u.Provider != "dex" || u.Role != authz.Viewer || c.Token == nil {
				st.T.Fatalf("first sign-in: %+v (local bob %s)", u, local.ID)
			}
			st.Restart()
			again, _ := signInExternal(st, ext, identity.TokenID("t2"))
			if again.ID != u.ID || again.Username != u.Username {
				st.T.Fatalf("second sign-in made %+v, want %+v", again, u)
			}
			other, _ := signInExternal(st, identity.ExternalIdentity{Provider: "other", Subject: "s-bob", Username: "bob", Role: authz.Viewer}, identity.TokenID("t3"))
			if other.ID == u.ID || other.ID == local.ID {
				st.T.Fatal("the same subject at another provider is the same user")
			}
			if a, ok, err := st.Store.ValidToken(st.Ctx, identity.TokenID("t2"), now()); err != nil || !ok || a.ID != u.ID {
				st.T.Fatalf("the sign-in's token: %+v %v %v", a, ok, err)
			}
		}},
		{Name: "external/first sign-ins of one person racing make one user", Run: func(st *StoreTest) {
			ext := identity.ExternalIdentity{Provider: "dex", Subject: "s-race", Username: "racer", Role: authz.Viewer}
			ids := make(chan string, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					at := now()
					t := identity.Token{ID: identity.TokenID(fmt.Sprint("race", i)), CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
					u, _, err := st.Store.SignInExternal(st.Ctx, ext, identity.ExternalSignedIn(identity.TokenQuota{}, ext, t, ""))
					if err != nil {
						st.T.Error(err)
						return
					}
					ids <- u.ID
				}()
			}
			wg.Wait()
			close(ids)
			seen := map[string]bool{}
			for id := range ids {
				seen[id] = true
			}
			if len(seen) != 1 {
				st.T.Fatalf("8 racing first sign-ins made %d users", len(seen))
			}
		}},
		{Name: "external/a role change stores the role and revokes exactly the live tokens", Run: func(st *StoreTest) {
			ext := identity.ExternalIdentity{Provider: "dex", Subject: "s1", Username: "olga", Role: authz.Operator}
			signInExternal(st, ext, identity.TokenID("old"))
			ext.Role = authz.Viewer
			st.Restart()
			u, c := signInExternal(st, ext, identity.TokenID("new"))
			if u.Role != authz.Viewer || len(c.Revoked) != 1 || c.Revoked[0] != identity.TokenID("old") {
				st.T.Fatalf("role change: %+v %+v", u, c)
			}
			if _, ok, _ := st.Store.ValidToken(st.Ctx, identity.TokenID("old"), now()); ok {
				st.T.Fatal("the operator's token is still live")
			}
			if a, ok, _ := st.Store.ValidToken(st.Ctx, identity.TokenID("new"), now()); !ok || a.Role != authz.Viewer {
				st.T.Fatalf("the new token: %+v %v", a, ok)
			}
		}},
	}
}
