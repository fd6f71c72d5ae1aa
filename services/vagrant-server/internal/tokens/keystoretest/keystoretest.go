// Package keystoretest is the conformance suite every tokens.KeyStore passes (after
// Waypoint's statetest): the Postgres store and the in-memory one the token rules are tested
// with run the same table, plain and reopening the store mid-test, so the fake cannot drift
// from what the issuer really gets. It names the interface itself, so tokens' own tests can
// run it without an import cycle.
package keystoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
)

// KeyStore is tokens.KeyStore.
type KeyStore interface {
	CreateFirstKey(ctx context.Context, id string, key []byte) (bool, error)
	Key(ctx context.Context, id string) ([]byte, error)
}

// StoreTest is one behaviour's run against one store.
type StoreTest = testenv.StoreRun[KeyStore]

// Run runs every behaviour against stores from factory, plain and with a restart; unknown is
// the error (tokens.ErrUnknownKey) Key must answer, wrapped or not, for an id it does not hold.
func Run(t *testing.T, factory func(*testing.T) KeyStore, reopen func(*testing.T, KeyStore) KeyStore, unknown error) {
	testenv.RunStoreCases(t, behaviours(unknown), factory, reopen)
}

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func behaviours(unknown error) []testenv.Case[*StoreTest] {
	return []testenv.Case[*StoreTest]{
		{Name: "the first key is stored once and kept", Run: func(st *StoreTest) {
			if created := testenv.Must(st.Store.CreateFirstKey(st.Ctx, "k1", key(1)))(st.T); !created {
				st.T.Fatal("the first key of an empty store was not created")
			}
			st.Restart()
			for _, id := range []string{"k1", "k2"} {
				if created := testenv.Must(st.Store.CreateFirstKey(st.Ctx, id, key(2)))(st.T); created {
					st.T.Fatalf("a second first key (%s) was created", id)
				}
			}
			if got := testenv.Must(st.Store.Key(st.Ctx, "k1"))(st.T); !bytes.Equal(got, key(1)) {
				st.T.Fatalf("key k1 is %x, want the first one stored", got)
			}
			if _, err := st.Store.Key(st.Ctx, "k2"); !errors.Is(err, unknown) {
				st.T.Fatalf("the refused key k2: %v, want %v", err, unknown)
			}
		}},
		{Name: "an unknown id is the unknown-key error", Run: func(st *StoreTest) {
			if _, err := st.Store.Key(st.Ctx, "nope"); !errors.Is(err, unknown) {
				st.T.Fatalf("Key of an empty store: %v, want %v", err, unknown)
			}
			testenv.Must(st.Store.CreateFirstKey(st.Ctx, "k1", key(1)))(st.T)
			st.Restart()
			if _, err := st.Store.Key(st.Ctx, "K1"); !errors.Is(err, unknown) {
				st.T.Fatalf("Key of another id: %v, want %v", err, unknown)
			}
		}},
		{Name: "of concurrent first keys exactly one is created", Run: func(st *StoreTest) {
			const callers = 8
			var wg sync.WaitGroup
			created := make([]bool, callers)
			errs := make([]error, callers)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					created[i], errs[i] = st.Store.CreateFirstKey(st.Ctx, fmt.Sprintf("k%d", i), key(byte(i)))
				}()
			}
			wg.Wait()
			winner := -1
			for i := range callers {
				testenv.OK(st.T, errs[i])
				if created[i] {
					if winner >= 0 {
						st.T.Fatalf("callers %d and %d both created the first key", winner, i)
					}
					winner = i
				}
			}
			if winner < 0 {
				st.T.Fatal("no caller created the first key")
			}
			st.Restart()
			if got := testenv.Must(st.Store.Key(st.Ctx, fmt.Sprintf("k%d", winner)))(st.T); !bytes.Equal(got, key(byte(winner))) {
				st.T.Fatalf("the winner's key is %x", got)
			}
		}},
	}
}
