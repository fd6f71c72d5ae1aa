package clustertest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/stats/internal/cluster"
)

// MemoryHistory is a cluster.HistoryStore in memory, for the Recorder's tests; it passes Run
// like the Postgres store. Its zero value is an empty history.
type MemoryHistory struct {
	mu      sync.Mutex
	samples []cluster.Sample // in the order added (the cap keeps the newest added)
}

var _ cluster.HistoryStore = (*MemoryHistory)(nil)

// AddSamples appends samples.
func (m *MemoryHistory) AddSamples(_ context.Context, s []cluster.Sample) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples = append(m.samples, s...)
	return nil
}

// sorted returns the samples oldest first, those of one time in the order added.
func (m *MemoryHistory) sorted() []cluster.Sample {
	out := slices.Clone(m.samples)
	slices.SortStableFunc(out, func(a, b cluster.Sample) int { return a.At.Compare(b.At) })
	return out
}

// SamplesSince returns the samples taken at or after t, oldest first, preceded by the newest
// one taken before t.
func (m *MemoryHistory) SamplesSince(_ context.Context, t time.Time) ([]cluster.Sample, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := m.sorted()
	i, _ := slices.BinarySearchFunc(all, t, func(s cluster.Sample, t time.Time) int { return s.At.Compare(t) })
	// all[i] is the first sample taken at or after t: binary search finds the first of equals.
	return all[max(i-1, 0):], nil
}

// SamplesBetween returns the samples taken from from to to, both included, oldest first.
func (m *MemoryHistory) SamplesBetween(_ context.Context, from, to time.Time) ([]cluster.Sample, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []cluster.Sample
	for _, s := range m.sorted() {
		if !s.At.Before(from) && !s.At.After(to) {
			out = append(out, s)
		}
	}
	return out, nil
}

// PruneSamples deletes samples taken before `before` and all but the newest keep added.
func (m *MemoryHistory) PruneSamples(_ context.Context, before time.Time, keep int) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.samples)
	if len(m.samples) > keep {
		m.samples = m.samples[len(m.samples)-keep:]
	}
	m.samples = slices.DeleteFunc(m.samples, func(s cluster.Sample) bool { return s.At.Before(before) })
	return int64(n - len(m.samples)), nil
}
