// Package clustertest is the conformance suite every cluster.HistoryStore implementation must
// pass (after Waypoint's statetest), and MemoryHistory, the in-memory one the Recorder's tests
// use: both the Postgres store and the fake run the same table, plain and reopening the store
// mid-test, so that the fake cannot drift from what the Recorder really gets.
package clustertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// Factory returns an empty store for one test; it cleans up after itself via t.Cleanup.
type Factory = func(t *testing.T) cluster.HistoryStore

// Reopen returns a fresh store on the same data as s, as a restarted stats would have.
type Reopen = func(t *testing.T, s cluster.HistoryStore) cluster.HistoryStore

// StoreTest is one behaviour's run against one store: the test, its context, the store under
// test, and Restart, which swaps the store for one reopened on the same data.
type StoreTest = testenv.StoreRun[cluster.HistoryStore]

// Run runs every behaviour against stores from factory, plain and with a restart.
func Run(t *testing.T, factory Factory, reopen Reopen) {
	testenv.RunStoreCases(t, historyBehaviours(), factory, reopen)
}

// behaviour is one row of the conformance table.
type behaviour = testenv.Case[*StoreTest]

// t0 is the suite's epoch, in whole seconds (what every store keeps exactly).
var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// minutes returns samples taken at t0 + i minutes for each i, Used = i.
func minutes(is ...int) []cluster.Sample {
	out := make([]cluster.Sample, len(is))
	for k, i := range is {
		out[k] = cluster.Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: cluster.HealthOK, Used: int64(i), Total: 100, Available: 100 - int64(i)}
	}
	return out
}

// used is the Used of each sample: the suite's samples say which they are with it.
func used(samples []cluster.Sample) string {
	out := make([]int64, len(samples))
	for i, s := range samples {
		out[i] = s.Used
	}
	return fmt.Sprint(out)
}

// want fails the test unless samples are, in order, the ones whose Used is listed.
func want(st *StoreTest, what string, samples []cluster.Sample, err error, w string) {
	st.T.Helper()
	if err != nil {
		st.T.Fatalf("%s: %v", what, err)
	}
	if got := used(samples); got != w {
		st.T.Fatalf("%s: samples %s, want %s", what, got, w)
	}
}

// add stores samples.
func add(st *StoreTest, samples []cluster.Sample) {
	st.T.Helper()
	if err := st.Store.AddSamples(st.Ctx, samples); err != nil {
		st.T.Fatal(err)
	}
}
