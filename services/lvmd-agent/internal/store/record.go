package store

import (
	"context"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

var _ volume.Recorder = VolumeRecord{}

// VolumeRecord is one node's record of its volumes and capacity in Postgres: the
// volume.Recorder the agent's volume service writes through (Sync, with its events).
type VolumeRecord struct {
	store *Store
	node  string
}

// VolumeRecord returns the record of node's volumes.
func (s *Store) VolumeRecord(node string) VolumeRecord { return VolumeRecord{store: s, node: node} }

// RecordClass syncs a class's state and its events (see Sync); it reports whether the
// capacity changed.
func (r VolumeRecord) RecordClass(ctx context.Context, c volume.Capacity, vols []volume.Volume) (bool, error) {
	ch, err := r.store.Sync(ctx, r.node, c, vols)
	return ch.CapacityChanged, err
}
