package volume

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// Reconcile records a class's state as lvm shows it now, catching changes made outside the
// agent; it returns the state.
func (s *Service) Reconcile(ctx context.Context, class string) (Capacity, error) {
	dc, err := s.class(class)
	if err != nil {
		return Capacity{}, err
	}
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return Capacity{}, err
	}
	defer unlock()
	c, _, err := s.recordLocked(ctx, dc)
	return c, err
}

// recordChangeAndList tells the watchers of a change the agent made (the caller holds the
// group's lock), records the class's new state with the Recorder, and returns the volumes
// as lvm now lists them (nil if it could not tell). A failed record is retried by the next
// Reconcile.
func (s *Service) recordChangeAndList(ctx context.Context, dc *deviceclass.DeviceClass) []lvm.LV {
	s.watchers.notify()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	_, lvs, err := s.recordLocked(ctx, dc)
	if err != nil {
		s.log.WarnContext(ctx, "could not record a change; the next poll will", "device_class", dc.Name, "error", err)
	}
	return lvs
}

// recordLocked reads a class's state and records it: the Recorder passes the class's record
// to Sync, which decides the rows and events it writes. The caller holds the group's lock.
func (s *Service) recordLocked(ctx context.Context, dc *deviceclass.DeviceClass) (Capacity, []lvm.LV, error) {
	vg, lvs, err := s.state(ctx, dc)
	if err != nil {
		return Capacity{}, nil, err
	}
	c, vols, err := capacityOf(dc, vg, lvs)
	if err != nil {
		return Capacity{}, nil, err
	}
	s.observe(c)
	ch, err := s.recorder.Update(ctx, dc.Name, func(before Record) (RecordChange, error) { return Sync(before, c, vols), nil })
	if ch.Capacity != nil {
		s.watchers.notify()
	}
	return c, lvs, err
}

// Recorder keeps the record of each device class's volumes and capacity that the agent's
// events are derived from. Update reads one class's record under a lock that makes updates
// of that class take turns, passes it to change, and writes exactly the RecordChange change
// returns — its rows, its capacity and its events, in one transaction; an error from change
// writes nothing. store.VolumeRecord is the Postgres one; volumetest.Record an in-memory one;
// both pass volumetest.RecorderConformance.
type Recorder interface {
	Update(ctx context.Context, class string, change func(before Record) (RecordChange, error)) (RecordChange, error)
}

// Record is what a Recorder holds of one node's device class, as read under its lock.
type Record struct {
	// Node is the node whose record this is; the events name it.
	Node string
	// Capacity is the class's last recorded capacity; nil before its first record.
	Capacity *Capacity
	// Volumes are the class's recorded volumes (name, class, size and tags), by name.
	Volumes []Volume
	// RestoredFrom is, by volume name, the backup a restore job of that volume on this node's
	// class reads (its location); a new volume's event names it.
	RestoredFrom map[string]string
}

// RecordChange is what one Update writes over a class's record: volumes to insert, to update
// (size and tags) and to delete (by name), the capacity to record (nil: as recorded), and the
// events, in the order they are published. A Recorder writes exactly this and decides nothing.
type RecordChange struct {
	Insert, Update []Volume
	Delete         []string
	Capacity       *Capacity
	Events         []Event
}

// Event is something a RecordChange publishes: a VolumeCreated, VolumeResized, VolumeRemoved
// or CapacityChanged. internal/events turns each into its message.
type Event interface{ isEvent() }

// VolumeCreated: Volume appeared on Node; RestoredFrom names the backup a restore of it reads.
type VolumeCreated struct {
	Node         string
	Volume       Volume
	RestoredFrom string
}

// VolumeResized: Volume's size on Node went from Previous to Volume.Size.
type VolumeResized struct {
	Node     string
	Volume   Volume
	Previous uint64
}

// VolumeRemoved: volume Name of DeviceClass is gone from Node.
type VolumeRemoved struct {
	Node, DeviceClass, Name string
}

// CapacityChanged: the class's size, free space or volume count on Node is not what was
// recorded (or nothing was).
type CapacityChanged struct {
	Node     string
	Capacity Capacity
}

func (VolumeCreated) isEvent()   {}
func (VolumeResized) isEvent()   {}
func (VolumeRemoved) isEvent()   {}
func (CapacityChanged) isEvent() {}

// Sync works out what recording a class's capacity c and volumes vols, as lvm lists them
// now, over before means: a volume not recorded is inserted (VolumeCreated), one whose size
// or tags differ is updated (VolumeResized when its size does), a recorded volume lvm no
// longer lists is deleted (VolumeRemoved, in name order), and the capacity is recorded
// (CapacityChanged) unless its size, free space and volume count are the recorded ones.
// Events follow vols' order, then the removals, then the capacity. The same state again is
// no change at all.
func Sync(before Record, c Capacity, vols []Volume) RecordChange {
	var ch RecordChange
	known := make(map[string]Volume, len(before.Volumes))
	for _, v := range before.Volumes {
		known[v.Name] = v
	}
	for _, v := range vols {
		old, ok := known[v.Name]
		delete(known, v.Name)
		switch {
		case !ok:
			ch.Insert = append(ch.Insert, v)
			ch.Events = append(ch.Events, VolumeCreated{Node: before.Node, Volume: v, RestoredFrom: before.RestoredFrom[v.Name]})
		case old.Size != v.Size || !slices.Equal(old.Tags, v.Tags):
			if old.Size != v.Size {
				ch.Events = append(ch.Events, VolumeResized{Node: before.Node, Volume: v, Previous: old.Size})
			}
			ch.Update = append(ch.Update, v)
		}
	}
	gone := make([]string, 0, len(known))
	for name := range known {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	for _, name := range gone {
		ch.Delete = append(ch.Delete, name)
		ch.Events = append(ch.Events, VolumeRemoved{Node: before.Node, DeviceClass: c.DeviceClass, Name: name})
	}
	if old := before.Capacity; old == nil || old.Size != c.Size || old.Free != c.Free || old.Volumes != c.Volumes {
		ch.Capacity = &c
		ch.Events = append(ch.Events, CapacityChanged{Node: before.Node, Capacity: c})
	}
	return ch
}

// noRecord is the Recorder of a Service that keeps no record.
type noRecord struct{}

func (noRecord) Update(context.Context, string, func(Record) (RecordChange, error)) (RecordChange, error) {
	return RecordChange{}, nil
}

// recordTimeout bounds recording a change: the change is made, so recording it must not
// depend on the caller still waiting.
const recordTimeout = 30 * time.Second
