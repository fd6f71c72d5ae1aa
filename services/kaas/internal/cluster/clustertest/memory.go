package clustertest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/kaas/internal/cluster"
)

// Memory is a cluster.Store in memory, for the domain's tests. It passes the same suite as
// the Postgres store (Run), so what the tests learn from it holds for the real one.
type Memory struct {
	mu      sync.Mutex
	views   map[string]cluster.View
	secrets map[string][]byte
	events  []cluster.Event
	lastID  int64
}

// NewMemory returns an empty store.
func NewMemory() *Memory {
	return &Memory{views: map[string]cluster.View{}, secrets: map[string][]byte{}}
}

// Create records c's cluster and pools and its events, once admit (unless nil) admits what
// the owner's clusters hold; the store's one lock serialises every owner's writes.
func (m *Memory) Create(_ context.Context, c cluster.Change, secrets []byte, admit func(cluster.Usage) error) (cluster.View, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if admit != nil {
		if err := admit(m.usage(c.View.Owner.ID, "")); err != nil {
			return cluster.View{}, err
		}
	}
	v := c.View.Clone()
	if _, ok := m.views[v.Name]; ok {
		return cluster.View{}, cluster.ClusterExists(v.Name)
	}
	m.lastID++
	v.ID = m.lastID
	v.CreatedAt = time.Now()
	v.UpdatedAt = v.CreatedAt
	m.views[v.Name] = v
	m.secrets[v.Name] = slices.Clone(secrets)
	m.events = append(m.events, c.Events...)
	return v.Clone(), nil
}

// Get returns the cluster called name.
func (m *Memory) Get(_ context.Context, name string) (cluster.View, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.views[name]
	if !ok {
		return cluster.View{}, cluster.NotFound(name)
	}
	return v.Clone(), nil
}

// Secrets returns the sealed key material of the cluster called name.
func (m *Memory) Secrets(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.views[name]; !ok {
		return nil, cluster.NotFound(name)
	}
	return slices.Clone(m.secrets[name]), nil
}

// Detail returns the cluster called name and its sealed key material.
func (m *Memory) Detail(_ context.Context, name string) (cluster.Cluster, []byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.views[name]
	if !ok {
		return cluster.Cluster{}, nil, cluster.NotFound(name)
	}
	return v.Cluster, slices.Clone(m.secrets[name]), nil
}

// List returns every cluster, by name.
func (m *Memory) List(context.Context) ([]cluster.Cluster, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]cluster.Cluster, 0, len(m.views))
	for _, v := range m.views {
		out = append(out, v.Cluster)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// usage is what ownerID's clusters but the one called except hold, as the Postgres store
// counts it (cluster.Machines).
func (m *Memory) usage(ownerID, except string) cluster.Usage {
	var u cluster.Usage
	for name, v := range m.views {
		if v.Owner.ID != ownerID || name == except || v.Deleting {
			continue
		}
		u.Clusters++
		u.Machines += cluster.Machines(v)
	}
	return u
}

// Update passes the cluster to update and keeps the change it returns, as the Postgres
// store does: new machines get ids, nothing is kept when update fails.
func (m *Memory) Update(ctx context.Context, name string, update func(cluster.View) (cluster.Change, error)) (cluster.View, error) {
	return m.UpdateOwned(ctx, name, func(v cluster.View, _ cluster.Usage) (cluster.Change, error) { return update(v) })
}

// UpdateOwned is Update that also passes update what the owner's other clusters hold.
func (m *Memory) UpdateOwned(_ context.Context, name string, update func(cluster.View, cluster.Usage) (cluster.Change, error)) (cluster.View, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, ok := m.views[name]
	if !ok {
		return cluster.View{}, cluster.NotFound(name)
	}
	c, err := update(before.Clone(), m.usage(before.Owner.ID, name))
	if err != nil {
		return cluster.View{}, err
	}
	after := c.View.Clone()
	if after.ID != before.ID {
		return cluster.View{}, errors.New("clustertest: a change of one cluster saved over another")
	}
	now := time.Now()
	for i := range after.Machines {
		mc := &after.Machines[i]
		if mc.ID == 0 {
			m.lastID++
			mc.ID, mc.CreatedAt = m.lastID, now
			continue
		}
		if !slices.ContainsFunc(before.Machines, func(o cluster.Machine) bool { return o.ID == mc.ID }) {
			return cluster.View{}, errors.New("clustertest: a machine of another cluster")
		}
	}
	after.UpdatedAt = now
	m.views[name] = after
	m.events = append(m.events, c.Events...)
	return after.Clone(), nil
}

// Events returns every event the store recorded, oldest first.
func (m *Memory) Events() []cluster.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}
