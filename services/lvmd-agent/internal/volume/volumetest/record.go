package volumetest

import (
	"context"
	"slices"
	"sync"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

var _ volume.Recorder = (*Record)(nil)

// Record is an in-memory volume.Recorder for one node: each class's last recorded
// capacity and volumes. It is safe for concurrent use.
type Record struct {
	mu      sync.Mutex
	classes map[string]classRecord
	records int
}

type classRecord struct {
	capacity volume.Capacity
	volumes  []volume.Volume
}

// NewRecord returns an empty Record.
func NewRecord() *Record { return &Record{classes: map[string]classRecord{}} }

// RecordClass keeps a class's state; the capacity changed unless its size, free space and
// volume count are those of the last record (what the Postgres record compares).
func (r *Record) RecordClass(ctx context.Context, c volume.Capacity, vols []volume.Volume) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records++
	old, ok := r.classes[c.DeviceClass]
	r.classes[c.DeviceClass] = classRecord{capacity: c, volumes: slices.Clone(vols)}
	return !ok || old.capacity.Size != c.Size || old.capacity.Free != c.Free || old.capacity.Volumes != c.Volumes, nil
}

// Class returns a class's last recorded capacity and volumes (ok false before the first).
func (r *Record) Class(class string) (c volume.Capacity, vols []volume.Volume, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cr, ok := r.classes[class]
	return cr.capacity, slices.Clone(cr.volumes), ok
}

// Records counts the RecordClass calls so far.
func (r *Record) Records() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records
}
