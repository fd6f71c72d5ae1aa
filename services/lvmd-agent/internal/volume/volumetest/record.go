package volumetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

var _ volume.Recorder = (*Record)(nil)

// Record is an in-memory volume.Recorder for one node: each class's last recorded capacity
// and volumes, and the events written with them. It is safe for concurrent use.
type Record struct {
	node    string
	mu      sync.Mutex
	classes map[string]classRecord
	events  []volume.Event
	records int
}

type classRecord struct {
	capacity *volume.Capacity
	volumes  map[string]volume.Volume
}

// NewRecord returns node's empty Record.
func NewRecord(node string) *Record { return &Record{node: node, classes: map[string]classRecord{}} }

// Update passes a class's record to change and keeps what it returns, as the Postgres record
// writes it: rows inserted (a name already recorded is an error, as its primary key is),
// updated, deleted, the capacity replaced, the events appended. An error writes nothing.
func (r *Record) Update(ctx context.Context, class string, change func(before volume.Record) (volume.RecordChange, error)) (volume.RecordChange, error) {
	if err := ctx.Err(); err != nil {
		return volume.RecordChange{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records++
	old := r.classes[class]
	before := volume.Record{Node: r.node, RestoredFrom: map[string]string{}}
	if old.capacity != nil {
		c := *old.capacity
		before.Capacity = &c
	}
	before.Volumes = byName(old.volumes)
	ch, err := change(before)
	if err != nil {
		return volume.RecordChange{}, err
	}
	next := classRecord{capacity: old.capacity, volumes: map[string]volume.Volume{}}
	for name, v := range old.volumes {
		next.volumes[name] = v
	}
	for _, v := range ch.Insert {
		if _, ok := next.volumes[v.Name]; ok {
			return volume.RecordChange{}, fmt.Errorf("volume %s of class %s is already recorded", v.Name, class)
		}
		next.volumes[v.Name] = record(class, v)
	}
	for _, v := range ch.Update {
		next.volumes[v.Name] = record(class, v)
	}
	for _, name := range ch.Delete {
		delete(next.volumes, name)
	}
	if ch.Capacity != nil {
		c := *ch.Capacity
		next.capacity = &c
	}
	r.classes[class] = next
	r.events = append(r.events, ch.Events...)
	return ch, nil
}

// record is what a row keeps of a volume: its name, class, size and tags (none is nil, as
// Postgres reads them back).
func record(class string, v volume.Volume) volume.Volume {
	r := volume.Volume{Name: v.Name, DeviceClass: class, Size: v.Size}
	if len(v.Tags) > 0 {
		r.Tags = slices.Clone(v.Tags)
	}
	return r
}

// byName is a class's recorded volumes in name order.
func byName(vols map[string]volume.Volume) []volume.Volume {
	out := make([]volume.Volume, 0, len(vols))
	for _, v := range vols {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b volume.Volume) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Class returns a class's last recorded capacity and volumes, by name (ok false before the
// first record).
func (r *Record) Class(class string) (c volume.Capacity, vols []volume.Volume, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cr, ok := r.classes[class]
	if !ok || cr.capacity == nil {
		return volume.Capacity{}, nil, false
	}
	return *cr.capacity, byName(cr.volumes), true
}

// Events returns the events written so far, in order.
func (r *Record) Events() []volume.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Records counts the Update calls so far.
func (r *Record) Records() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records
}
