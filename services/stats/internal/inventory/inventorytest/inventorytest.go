// Package inventorytest is the conformance suite every inventory.Store implementation must
// pass (after Waypoint's statetest): a table of behaviours, each run twice — once on one store,
// once reopening the store mid-test, so that nothing a behaviour relies on lives only in a
// process.
package inventorytest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/inventory"
)

// Store is what the suite drives: inventory.Store, and the read of the activity it keeps (the
// history API's ActivityLog), without which RecordActivity could not be checked.
type Store interface {
	inventory.Store
	// Activity returns at most limit entries after cursor, newest first.
	Activity(ctx context.Context, after inventory.ActivityCursor, limit int) ([]inventory.Activity, error)
}

// Opened is a store and the transactions its Record methods run in: the event consumer opens
// one per event, in the store's database.
type Opened struct {
	Store Store
	// InTx runs fn in a transaction, committed when fn returns nil and rolled back otherwise.
	InTx func(ctx context.Context, fn func(tx pgx.Tx) error) error
}

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) Opened

// Reopen returns a fresh store on the same data as o, as a restarted stats would have.
type Reopen = func(t *testing.T, o Opened) Opened

// StoreTest is one behaviour's run against one store: the test, its context, the store (and
// its transactions) under test as Opened, and Restart, which swaps them for ones reopened on
// the same data.
type StoreTest struct {
	run *testenv.StoreRun[Opened]
	T   *testing.T
	Ctx context.Context
}

// Restart reopens the store (a no-op in the plain variant).
func (st *StoreTest) Restart() { st.run.Restart() }

// Opened is the store under test and its transactions.
func (st *StoreTest) Opened() Opened { return st.run.Store }

// Store is the store under test.
func (st *StoreTest) Store() Store { return st.run.Store.Store }

// Record runs fn in a transaction as the consumer does, failing the test on its error.
func (st *StoreTest) Record(fn func(s Store, tx pgx.Tx) error) {
	st.T.Helper()
	if err := st.Opened().InTx(st.Ctx, func(tx pgx.Tx) error { return fn(st.Store(), tx) }); err != nil {
		st.T.Fatal(err)
	}
}

// behaviour is one row of the conformance table.
type behaviour = testenv.Case[*StoreTest]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	var all []behaviour
	for _, group := range [][]behaviour{nodeBehaviours(), machineBehaviours(), activityBehaviours()} {
		all = append(all, group...)
	}
	testenv.RunCases(t, all, func(t *testing.T, ctx context.Context, restarts bool) *StoreTest {
		return &StoreTest{run: testenv.NewStoreRun(t, ctx, restarts, factory(t), reopen), T: t, Ctx: ctx}
	})
}

// t0 is the suite's epoch, in whole seconds (what every store keeps exactly).
var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// sec is t0 + n seconds.
func sec(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

// errRollBack makes Record's transaction roll back.
var errRollBack = errors.New("roll back")

// describe is a compact, comparable form of what the suite asserts on.
func describe(v any) string { return fmt.Sprintf("%+v", v) }
