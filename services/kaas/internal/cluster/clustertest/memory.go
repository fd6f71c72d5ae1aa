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

// Create records c's cluster and pools and its events.
func (m *Memory) Create(_ context.Context, c cluster.Change, secrets []byte) (cluster.View, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
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

// Update passes the cluster to update and keeps the change it returns, as the Postgres
// store does: new machines get ids, nothing is kept when update fails.
func (m *Memory) Update(_ context.Context, name string, update func(cluster.View) (cluster.Change, error)) (cluster.View, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before, ok := m.views[name]
	if !ok {
		return cluster.View{}, cluster.NotFound(name)
	}
	c, err := update(before.Clone())
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
