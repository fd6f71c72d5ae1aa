package testenv

import (
	"context"
	"testing"
	"time"
)

// Case is one row of a store conformance table (after Waypoint's statetest): a name and what
// the case does with ST, the suite's own per-run state (its store under test and helpers).
type Case[ST any] struct {
	Name string
	Run  func(st ST)
}

// RunCases runs every case twice, as parallel subtests "<name>/plain" and "<name>/restart",
// each with a context that ends after a minute. start makes the case's state for its test:
// a fresh store, whose Restart must reopen the store on the same data when restarts is true
// and keep it otherwise — so nothing a case relies on lives only in a process.
func RunCases[ST any](t *testing.T, cases []Case[ST], start func(t *testing.T, ctx context.Context, restarts bool) ST) {
	for _, c := range cases {
		for _, variant := range []string{"plain", "restart"} {
			t.Run(c.Name+"/"+variant, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t.Cleanup(cancel)
				c.Run(start(t, ctx, variant == "restart"))
			})
		}
	}
}

// StoreRun is one case's run against one store: the test, its context, the store under test,
// and Restart. A suite whose cases need only these uses it as its state (RunStoreCases); one
// with helpers of its own embeds it.
type StoreRun[S any] struct {
	T      *testing.T
	Ctx    context.Context
	Store  S
	reopen func(*testing.T, S) S
}

// NewStoreRun is the state of a run on store: Restart reopens it with reopen when restarts is
// true and is a no-op otherwise.
func NewStoreRun[S any](t *testing.T, ctx context.Context, restarts bool, store S, reopen func(*testing.T, S) S) *StoreRun[S] {
	r := &StoreRun[S]{T: t, Ctx: ctx, Store: store}
	if restarts {
		r.reopen = reopen
	}
	return r
}

// Restart swaps the store for one reopened on the same data, as a restarted (or another)
// replica would have (a no-op in the plain variant).
func (r *StoreRun[S]) Restart() {
	if r.reopen != nil {
		r.Store = r.reopen(r.T, r.Store)
	}
}

// RunStoreCases runs cases (see RunCases) on a fresh store from factory each, reopened with
// reopen on Restart in the restart variant.
func RunStoreCases[S any](t *testing.T, cases []Case[*StoreRun[S]], factory func(*testing.T) S, reopen func(*testing.T, S) S) {
	RunCases(t, cases, func(t *testing.T, ctx context.Context, restarts bool) *StoreRun[S] {
		return NewStoreRun(t, ctx, restarts, factory(t), reopen)
	})
}

// Must takes a call's (value, error) and returns a check that fails t on the error and
// otherwise gives the value: testenv.Must(s.Get(ctx, id))(t).
func Must[V any](v V, err error) func(t *testing.T) V {
	return func(t *testing.T) V {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// OK fails t on err.
func OK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
