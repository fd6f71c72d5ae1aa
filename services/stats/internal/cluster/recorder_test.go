package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
	"github.com/plinth-dev/plinth/services/stats/internal/cluster/clustertest"
)

// The Recorder's rules, on the in-memory history that passes clustertest like the Postgres
// store.

// t0 is now: Flush prunes what is older than the retention by the wall clock, as a real store
// does (the fake once did not, and hid that samples at a fixed date would be dropped).
var t0 = time.Now().UTC().Truncate(time.Second)

func TestRecorderCountsChangesWithinTheWindowAndSurvivesARestart(t *testing.T) {
	store := &clustertest.MemoryHistory{}
	r := cluster.NewRecorder(store, cluster.RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	ok := cluster.Sample{Health: cluster.HealthOK, OSDsUp: 1, OSDsIn: 1}
	warn := ok
	warn.Health = cluster.HealthWarn
	at := func(s cluster.Sample, d time.Duration) cluster.Sample { s.At = t0.Add(d); return s }

	if n := r.Observe(at(ok, 0)); n != 0 {
		t.Fatalf("the first sample is no change: %d", n)
	}
	if n := r.Observe(at(ok, 10*time.Second)); n != 0 {
		t.Fatalf("same state: %d", n)
	}
	if n := r.Observe(at(warn, 20*time.Second)); n != 1 {
		t.Fatalf("OK→WARN: %d changes, want 1", n)
	}
	if n := r.Observe(at(ok, 30*time.Second)); n != 2 {
		t.Fatalf("WARN→OK: %d changes, want 2", n)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stored(t, store) != 3 {
		t.Fatalf("stored %d samples; want 3 (an unchanged state 10 s later is not sampled)", stored(t, store))
	}
	// A restart: a new recorder over the same store remembers the changes.
	r2 := cluster.NewRecorder(store, cluster.RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	if err := r2.Load(context.Background(), t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := r2.Observe(at(ok, time.Minute)); n != 2 {
		t.Fatalf("after a restart: %d changes, want 2", n)
	}
	// The changes leave the window.
	if n := r2.Observe(at(ok, 11*time.Minute)); n != 0 {
		t.Fatalf("11 minutes later: %d changes, want 0", n)
	}
	if n := r2.Observe(at(warn, 12*time.Minute)); n != 1 {
		t.Fatalf("a change at the window's start must count against the state before: %d", n)
	}
}

func TestRecorderGrowth(t *testing.T) {
	r := cluster.NewRecorder(&clustertest.MemoryHistory{}, cluster.RecorderOptions{Window: time.Hour, Every: time.Minute})
	r.Observe(cluster.Sample{At: t0, Health: cluster.HealthOK, Used: 1000})
	if _, ok := r.Growth(); ok {
		t.Fatal("one sample makes no trend")
	}
	r.Observe(cluster.Sample{At: t0.Add(2 * time.Minute), Health: cluster.HealthOK, Used: 13000})
	if g, ok := r.Growth(); !ok || g != 100 {
		t.Fatalf("growth %v %v, want 100 B/s", g, ok)
	}
}

func TestRecorderBetweenHasTheSamplesNotWrittenYet(t *testing.T) {
	store := &clustertest.MemoryHistory{}
	r := cluster.NewRecorder(store, cluster.RecorderOptions{Window: 10 * time.Minute, Every: time.Minute})
	for i := range 5 {
		r.Observe(cluster.Sample{At: t0.Add(time.Duration(i) * time.Minute), Health: cluster.HealthOK, Used: int64(i)})
		if i == 2 {
			if err := r.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stored(t, store) != 3 {
		t.Fatalf("stored %d, want 3 (two still pending)", stored(t, store))
	}
	got, err := r.Between(context.Background(), t0.Add(time.Minute), t0.Add(4*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var used []int64
	for _, s := range got {
		used = append(used, s.Used)
	}
	if fmt.Sprint(used) != "[1 2 3 4]" {
		t.Fatalf("between 1m and 4m: used %v, want [1 2 3 4] once each, oldest first", used)
	}
}

// stored is how many samples the history holds.
func stored(t *testing.T, h *clustertest.MemoryHistory) int {
	t.Helper()
	all, err := h.SamplesSince(context.Background(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return len(all)
}
