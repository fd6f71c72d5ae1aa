// Package sessionstest is the conformance suite every session token store (sessions.Store
// with sessions.RevocationWriter) must pass, after Waypoint's statetest: recording and reading
// tokens, revocation with their Plinth token and before it, the quota's count and expiry —
// each behaviour run twice, once on one store and once reopening it mid-test, so that nothing
// a behaviour relies on lives only in a process.
package sessionstest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/authz"
	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/vagrant-server/internal/sessions"
)

// Store is what the suite tests: the session tokens and the revocations auth publishes.
type Store interface {
	sessions.Store
	sessions.RevocationWriter
}

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) Store

// Reopen returns a fresh store on the same data as s, as a restarted (or another) replica
// would have.
type Reopen = func(t *testing.T, s Store) Store

// StoreTest is one behaviour's run against one store.
type StoreTest = testenv.StoreRun[Store]

type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, behaviours(), factory, reopen)
}

// now is the present at the precision every store keeps (Postgres: microseconds).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// token is a session token id of user, bound to Plinth token plinth, expiring at exp.
func token(id, plinth, user string, exp time.Time) sessions.Token {
	return sessions.Token{ID: []byte(id), PlinthTokenID: plinth, UserID: user, Username: "name of " + user, Role: authz.Operator, ExpiresAt: exp}
}

// errFull is the refusal of the suite's admit functions.
var errFull = errors.New("full")

// counting admits while fewer than limit tokens are live, recording the counts it saw.
func counting(limit int, seen *[]int) func(int) error {
	return func(live int) error {
		*seen = append(*seen, live)
		if live >= limit {
			return errFull
		}
		return nil
	}
}

func add(st *StoreTest, t sessions.Token) {
	st.T.Helper()
	testenv.OK(st.T, st.Store.AddSessionToken(st.Ctx, t, nil))
}

func unknown(st *StoreTest, id string) {
	st.T.Helper()
	if _, err := st.Store.SessionToken(st.Ctx, []byte(id)); !errors.Is(err, sessions.ErrUnknown) {
		st.T.Fatalf("SessionToken(%s): %v, want ErrUnknown", id, err)
	}
}

func behaviours() []behaviour {
	return []behaviour{
		{Name: "tokens/are read back as recorded; unknown ids are unknown", Run: func(st *StoreTest) {
			exp := now().Add(time.Hour)
			want := token("id-1", "p1", "u1", exp)
			want.Role = authz.Viewer
			add(st, want)
			st.Restart()
			got := testenv.Must(st.Store.SessionToken(st.Ctx, want.ID))(st.T)
			if string(got.ID) != "id-1" || got.PlinthTokenID != "p1" || got.UserID != "u1" || got.Username != want.Username ||
				got.Role != authz.Viewer || !got.ExpiresAt.Equal(exp) || !got.RevokedAt.IsZero() {
				st.T.Fatalf("read back %+v, want %+v", got, want)
			}
			unknown(st, "id-2")
		}},
		{Name: "revocation/ends the tokens of its Plinth token only, once", Run: func(st *StoreTest) {
			exp := now().Add(time.Hour)
			add(st, token("a", "p1", "u1", exp))
			add(st, token("b", "p1", "u1", exp))
			add(st, token("c", "p2", "u1", exp))
			before := now()
			for i, want := range []int64{2, 0} { // a second revocation changes nothing
				if n := testenv.Must(st.Store.RevokePlinthToken(st.Ctx, "p1", "TOKEN_REVOCATION_REASON_LOGOUT"))(st.T); n != want {
					st.T.Fatalf("revocation %d revoked %d tokens, want %d", i+1, n, want)
				}
			}
			st.Restart()
			for _, id := range []string{"a", "b"} {
				if got := testenv.Must(st.Store.SessionToken(st.Ctx, []byte(id)))(st.T); got.RevokedAt.Before(before.Add(-time.Minute)) {
					st.T.Fatalf("token %s outlived its Plinth token's revocation: %+v", id, got)
				}
			}
			if got := testenv.Must(st.Store.SessionToken(st.Ctx, []byte("c")))(st.T); !got.RevokedAt.IsZero() {
				st.T.Fatalf("another Plinth token's session was revoked: %+v", got)
			}
		}},
		{Name: "revocation/refuses tokens issued after it, even one that arrived first", Run: func(st *StoreTest) {
			testenv.Must(st.Store.RevokePlinthToken(st.Ctx, "p1", "TOKEN_REVOCATION_REASON_LOGOUT"))(st.T)
			st.Restart()
			err := st.Store.AddSessionToken(st.Ctx, token("late", "p1", "u1", now().Add(time.Hour)), nil)
			if !errors.Is(err, sessions.ErrSessionEnded) {
				st.T.Fatalf("a token of a revoked Plinth token: %v, want ErrSessionEnded", err)
			}
			unknown(st, "late")
			add(st, token("other", "p2", "u1", now().Add(time.Hour))) // another sign-in of the user
		}},
		{Name: "quota/admit counts the user's live tokens; a refused one is not recorded", Run: func(st *StoreTest) {
			exp := now().Add(time.Hour)
			add(st, token("live-1", "p1", "u1", exp))
			add(st, token("live-2", "p2", "u1", exp))
			add(st, token("revoked", "p3", "u1", exp))
			testenv.Must(st.Store.RevokePlinthToken(st.Ctx, "p3", "TOKEN_REVOCATION_REASON_LOGOUT"))(st.T)
			add(st, token("expired", "p4", "u1", now().Add(-time.Minute)))
			add(st, token("bob's", "p5", "u2", exp))
			st.Restart()
			var seen []int
			err := st.Store.AddSessionToken(st.Ctx, token("third", "p6", "u1", exp), counting(2, &seen))
			if !errors.Is(err, errFull) || fmt.Sprint(seen) != "[2]" {
				st.T.Fatalf("AddSessionToken at the limit: %v, admit saw %v; want errFull after counting 2 (one more revoked, one expired, one another user's)", err, seen)
			}
			unknown(st, "third")
			testenv.OK(st.T, st.Store.AddSessionToken(st.Ctx, token("third", "p6", "u1", exp), counting(3, &seen)))
			if seen[1] != 2 {
				st.T.Fatalf("admit saw %d live tokens after a refusal, want 2: the refused token must not count", seen[1])
			}
		}},
		{Name: "purge/forgets what expired and old revocations, keeps what is live", Run: func(st *StoreTest) {
			add(st, token("old", "p1", "u1", now().Add(-2*time.Hour)))
			add(st, token("live", "p2", "u1", now().Add(time.Hour)))
			testenv.Must(st.Store.RevokePlinthToken(st.Ctx, "p3", "TOKEN_REVOCATION_REASON_LOGOUT"))(st.T)
			if n := testenv.Must(st.Store.PurgeSessionTokens(st.Ctx, now().Add(-time.Hour)))(st.T); n != 1 {
				st.T.Fatalf("purged %d rows an hour back, want the one expired token", n)
			}
			st.Restart()
			unknown(st, "old")
			testenv.Must(st.Store.SessionToken(st.Ctx, []byte("live")))(st.T)
			if err := st.Store.AddSessionToken(st.Ctx, token("x", "p3", "u1", now().Add(time.Hour)), nil); !errors.Is(err, sessions.ErrSessionEnded) {
				st.T.Fatalf("a recent revocation was purged: %v", err)
			}
			if n := testenv.Must(st.Store.PurgeSessionTokens(st.Ctx, now().Add(time.Minute)))(st.T); n != 1 {
				st.T.Fatalf("purged %d rows up to now, want the one revocation (the live token expires later)", n)
			}
			add(st, token("x", "p3", "u1", now().Add(time.Hour))) // the revocation is forgotten
		}},
	}
}
