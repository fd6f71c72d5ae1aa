package identitytest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/auth/internal/identity"
)

// errFull is the refusal of the admit functions these behaviours pass to createToken.
var errFull = errors.New("full")

// upTo admits while the user holds fewer than limit live tokens and records each count seen.
func upTo(limit int, seen *[]int) func(int) error {
	var mu sync.Mutex
	return func(live int) error {
		mu.Lock()
		defer mu.Unlock()
		*seen = append(*seen, live)
		if live >= limit {
			return errFull
		}
		return nil
	}
}

func quotaBehaviours() []behaviour {
	return []behaviour{
		{Name: "quota/admit sees the user's live tokens only", Run: func(st *StoreTest) {
			alice, bob := user(st, "alice", authz.Viewer), user(st, "bob", authz.Viewer)
			at := now()
			login(st, alice, identity.TokenID("live-1"), "192.0.2.1")
			login(st, alice, identity.TokenID("live-2"), "192.0.2.1")
			revoked := login(st, alice, identity.TokenID("revoked"), "192.0.2.1")
			testenv.OK(st.T, st.Store.RevokeToken(st.Ctx, revoked.ID, identity.SignOut))
			expired := identity.Token{ID: identity.TokenID("expired"), UserID: alice.ID, CreatedAt: at.Add(-2 * time.Hour), ExpiresAt: at.Add(-time.Hour)}
			testenv.OK(st.T, createToken(st, expired, identity.Attempt{Username: "alice", At: at}, nil))
			login(st, bob, identity.TokenID("bob's"), "192.0.2.1")
			st.Restart()
			var seen []int
			tok := identity.Token{ID: identity.TokenID("live-3"), UserID: alice.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			testenv.OK(st.T, createToken(st, tok, identity.Attempt{Username: "alice", At: at}, upTo(3, &seen)))
			if len(seen) != 1 || seen[0] != 2 {
				st.T.Fatalf("admit saw %v; alice holds 2 live tokens (one more revoked, one expired; bob's are his)", seen)
			}
			// A token counts until its expiry: an hour on, only those issued since are live.
			later := identity.Token{ID: identity.TokenID("later"), UserID: alice.ID, CreatedAt: at.Add(time.Hour + time.Minute), ExpiresAt: at.Add(2 * time.Hour)}
			testenv.OK(st.T, createToken(st, later, identity.Attempt{Username: "alice", At: later.CreatedAt}, upTo(1, &seen)))
			if seen[1] != 0 {
				st.T.Fatalf("admit saw %d live tokens an hour on, want 0 (all expired)", seen[1])
			}
		}},
		{Name: "quota/a refused token is not stored, and the attempt is taken back", Run: func(st *StoreTest) {
			alice := user(st, "alice", authz.Operator)
			login(st, alice, identity.TokenID("held"), "192.0.2.1")
			at := now()
			a := identity.Attempt{Username: "alice", ClientAddress: "192.0.2.7", At: at}
			testenv.OK(st.T, begin(st, a, policy(5, 5)))
			var seen []int
			tok := identity.Token{ID: identity.TokenID("refused"), UserID: alice.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
			is(st.T, "a token over the limit", createToken(st, tok, a, upTo(1, &seen)), errFull)
			st.Restart()
			if live(st, tok.ID) {
				st.T.Fatal("a refused token is live")
			}
			if n := testenv.Must(st.Store.ClearUserThrottles(st.Ctx, "alice"))(st.T); n != 0 {
				st.T.Fatalf("%d pair counters left: a refusal at the quota must not count as a failed login", n)
			}
		}},
		{Name: "quota/creates racing for the last places never take more", Run: func(st *StoreTest) {
			alice := user(st, "alice", authz.Viewer)
			for i := range 7 {
				login(st, alice, identity.TokenID(fmt.Sprint("held-", i)), "192.0.2.1")
			}
			var seen []int
			admit := upTo(10, &seen)
			var wg sync.WaitGroup
			errs := make(chan error, 12)
			for i := range 12 {
				wg.Go(func() {
					at := now()
					tok := identity.Token{ID: identity.TokenID(fmt.Sprint("racing-", i)), UserID: alice.ID, CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
					errs <- createToken(st, tok, identity.Attempt{Username: "alice", At: at}, admit)
				})
			}
			wg.Wait()
			close(errs)
			ok := 0
			for err := range errs {
				switch {
				case err == nil:
					ok++
				case !errors.Is(err, errFull):
					st.T.Fatalf("a racing create: %v", err)
				}
			}
			if ok != 3 {
				st.T.Fatalf("%d racing creates stored a token; 3 places were free (counts seen: %v)", ok, seen)
			}
		}},
	}
}
