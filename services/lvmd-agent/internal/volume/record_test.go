package volume_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// TestSync is the record's rule without a database: which rows and capacity a class's state
// writes over its record, and which events that raises, in order.
func TestSync(t *testing.T) {
	vol := func(name string, size uint64, tags ...string) volume.Volume {
		v := volume.Volume{Name: name, DeviceClass: "ssd", Size: size * gib}
		if len(tags) > 0 {
			v.Tags = tags
		}
		return v
	}
	capacity := func(free uint64, n int) volume.Capacity {
		return volume.Capacity{DeviceClass: "ssd", VolumeGroup: "vg", Default: true, Size: 10 * gib, Free: free * gib, Volumes: n}
	}
	recorded := func(c volume.Capacity, vols ...volume.Volume) volume.Record {
		return volume.Record{Node: "n1", Capacity: &c, Volumes: vols}
	}
	for _, tt := range []struct {
		name   string
		before volume.Record
		c      volume.Capacity
		vols   []volume.Volume
		// rows: "+name" inserted, "~name" updated, "-name" deleted, "capacity" recorded.
		rows, events string
	}{
		{name: "a class's first record", before: volume.Record{Node: "n1"}, c: capacity(7, 2), vols: []volume.Volume{vol("b", 2), vol("a", 1, "x")},
			rows: "+b +a capacity", events: "n1 created ssd/b 2G; n1 created ssd/a 1G [x]; n1 capacity ssd free 7G of 10G, 2 volumes"},
		{name: "the same state is no change", before: recorded(capacity(7, 2), vol("a", 1, "x"), vol("b", 2)), c: capacity(7, 2),
			vols: []volume.Volume{vol("b", 2), vol("a", 1, "x")}},
		{name: "a grown volume", before: recorded(capacity(7, 2), vol("a", 1), vol("b", 2)), c: capacity(6, 2), vols: []volume.Volume{vol("a", 2), vol("b", 2)},
			rows: "~a capacity", events: "n1 resized ssd/a 2G from 1G; n1 capacity ssd free 6G of 10G, 2 volumes"},
		{name: "new tags alone change the row, raise nothing", before: recorded(capacity(7, 1), vol("a", 1, "x")), c: capacity(7, 1),
			vols: []volume.Volume{vol("a", 1, "y")}, rows: "~a"},
		{name: "tags dropped", before: recorded(capacity(7, 1), vol("a", 1, "x")), c: capacity(7, 1), vols: []volume.Volume{vol("a", 1)}, rows: "~a"},
		{name: "removed volumes in name order, after the others, before the capacity",
			before: recorded(capacity(4, 3), vol("c", 1), vol("a", 1), vol("b", 2)), c: capacity(6, 2),
			vols:   []volume.Volume{vol("d", 1), vol("b", 3)},
			rows:   "+d ~b -a -c capacity",
			events: "n1 created ssd/d 1G; n1 resized ssd/b 3G from 2G; n1 removed ssd/a; n1 removed ssd/c; n1 capacity ssd free 6G of 10G, 2 volumes"},
		{name: "a restored volume names its backup", before: volume.Record{Node: "n2", Capacity: ptr(capacity(7, 0)),
			RestoredFrom: map[string]string{"r": "https://s3/b/p", "gone": "https://s3/b/q"}}, c: capacity(6, 1), vols: []volume.Volume{vol("r", 1)},
			rows: "+r capacity", events: "n2 created ssd/r 1G from https://s3/b/p; n2 capacity ssd free 6G of 10G, 1 volumes"},
		{name: "only size, free space and count make a capacity change", before: recorded(capacity(7, 0)),
			c: volume.Capacity{DeviceClass: "ssd", VolumeGroup: "other", Size: 10 * gib, Free: 7 * gib, GroupSize: 1, GroupFree: 1, Pool: &volume.Pool{Name: "p"}}},
		{name: "a volume count alone is a capacity change", before: recorded(capacity(7, 0)), c: capacity(7, 1),
			rows: "capacity", events: "n1 capacity ssd free 7G of 10G, 1 volumes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ch := volume.Sync(tt.before, tt.c, tt.vols)
			if got := rows(ch); got != tt.rows {
				t.Errorf("rows\n got %q\nwant %q", got, tt.rows)
			}
			if got := describe(ch.Events); got != tt.events {
				t.Errorf("events\n got %q\nwant %q", got, tt.events)
			}
			if ch.Capacity != nil && !reflect.DeepEqual(*ch.Capacity, tt.c) {
				t.Errorf("recorded capacity %+v, want the state's %+v", *ch.Capacity, tt.c)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func rows(ch volume.RecordChange) string {
	var out []string
	for _, v := range ch.Insert {
		out = append(out, "+"+v.Name)
	}
	for _, v := range ch.Update {
		out = append(out, "~"+v.Name)
	}
	for _, name := range ch.Delete {
		out = append(out, "-"+name)
	}
	if ch.Capacity != nil {
		out = append(out, "capacity")
	}
	return strings.Join(out, " ")
}

func describe(evs []volume.Event) string {
	var out []string
	for _, e := range evs {
		switch e := e.(type) {
		case volume.VolumeCreated:
			s := fmt.Sprintf("%s created %s/%s %dG", e.Node, e.Volume.DeviceClass, e.Volume.Name, e.Volume.Size/gib)
			if e.Volume.Tags != nil {
				s += fmt.Sprintf(" %v", e.Volume.Tags)
			}
			if e.RestoredFrom != "" {
				s += " from " + e.RestoredFrom
			}
			out = append(out, s)
		case volume.VolumeResized:
			out = append(out, fmt.Sprintf("%s resized %s/%s %dG from %dG", e.Node, e.Volume.DeviceClass, e.Volume.Name, e.Volume.Size/gib, e.Previous/gib))
		case volume.VolumeRemoved:
			out = append(out, fmt.Sprintf("%s removed %s/%s", e.Node, e.DeviceClass, e.Name))
		case volume.CapacityChanged:
			c := e.Capacity
			out = append(out, fmt.Sprintf("%s capacity %s free %dG of %dG, %d volumes", e.Node, c.DeviceClass, c.Free/gib, c.Size/gib, c.Volumes))
		default:
			out = append(out, fmt.Sprintf("%T", e))
		}
	}
	return strings.Join(out, "; ")
}
