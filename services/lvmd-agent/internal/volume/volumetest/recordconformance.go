package volumetest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// OpenRecord gives a test an empty record and returns how to open node's Recorder on it;
// every call opens it anew on the same data, as a restarted agent would.
type OpenRecord func(t *testing.T) (open func(node string) volume.Recorder)

// RecorderConformance checks a volume.Recorder: an update is given the class's record as the
// last change wrote it (node, capacity, volumes with their sizes and tags), a failed change
// writes nothing, and — with volume.Sync deciding — the first record of a class is a change,
// the same state again is not (after a restart too), each difference in size, free space or
// volume count is, and nodes and classes are recorded apart. Every behaviour runs plain and
// with the recorder reopened before every call. store.VolumeRecord runs it on Postgres (each
// reopen a new pool), Record in memory.
func RecorderConformance(t *testing.T, openRecord OpenRecord) {
	testenv.RunCases(t, recorderBehaviours, func(t *testing.T, ctx context.Context, restarts bool) recorderRun {
		open := openRecord(t)
		opened := map[string]volume.Recorder{}
		return recorderRun{ctx: ctx, t: t, node: func(node string) volume.Recorder {
			if restarts || opened[node] == nil {
				opened[node] = open(node)
			}
			return opened[node]
		}}
	})
}

// recorderRun is one behaviour's run: node gives node's Recorder, opened anew before every
// call in the restart variant.
type recorderRun struct {
	ctx  context.Context
	t    *testing.T
	node func(string) volume.Recorder
}

var recorderBehaviours = []testenv.Case[recorderRun]{
	{Name: "an update is given what the last one wrote", Run: func(r recorderRun) {
		ctx, t, node := r.ctx, r.t, r.node
		c, vols := testClass()
		if b := before(ctx, t, node("n1"), "ssd"); b.Node != "n1" || b.Capacity != nil || len(b.Volumes) != 0 {
			t.Fatalf("an empty record: %+v", b)
		}
		write(ctx, t, node("n1"), volume.RecordChange{Insert: vols, Capacity: &c})
		b := before(ctx, t, node("n1"), "ssd")
		if b.Node != "n1" || b.Capacity == nil || *b.Capacity != row(c) || !reflect.DeepEqual(b.Volumes, vols) {
			t.Fatalf("after inserting:\n got %+v %+v\nwant %+v %+v", b.Capacity, b.Volumes, row(c), vols)
		}
		grown := volume.Volume{Name: "a", DeviceClass: "ssd", Size: 3 << 30, Tags: []string{"y", "z"}}
		c.Free, c.Volumes = 5<<30, 1
		write(ctx, t, node("n1"), volume.RecordChange{Update: []volume.Volume{grown}, Delete: []string{"b"}, Capacity: &c})
		b = before(ctx, t, node("n1"), "ssd")
		if *b.Capacity != row(c) || !reflect.DeepEqual(b.Volumes, []volume.Volume{grown}) {
			t.Fatalf("after updating and deleting: %+v %+v", b.Capacity, b.Volumes)
		}
		write(ctx, t, node("n1"), volume.RecordChange{}) // nothing: the capacity stays recorded
		if b := before(ctx, t, node("n1"), "ssd"); b.Capacity == nil || *b.Capacity != row(c) {
			t.Fatalf("an empty change lost the capacity: %+v", b.Capacity)
		}
	}},
	{Name: "a failed change writes nothing", Run: func(r recorderRun) {
		ctx, t, node := r.ctx, r.t, r.node
		c, vols := testClass()
		refused := errors.New("refused")
		_, err := node("n1").Update(ctx, "ssd", func(volume.Record) (volume.RecordChange, error) {
			return volume.RecordChange{Insert: vols, Capacity: &c}, refused
		})
		if !errors.Is(err, refused) {
			t.Fatalf("the change's error: %v", err)
		}
		if b := before(ctx, t, node("n1"), "ssd"); b.Capacity != nil || len(b.Volumes) != 0 {
			t.Fatalf("a failed change was written: %+v", b)
		}
	}},
	{Name: "a class's first record is a change, the same state again is not", Run: func(r recorderRun) {
		ctx, t, node := r.ctx, r.t, r.node
		c, vols := testClass()
		changed(ctx, t, "first record", node("n1"), c, vols, true)
		changed(ctx, t, "the same state", node("n1"), c, vols, false)
		changed(ctx, t, "the same state once more", node("n1"), c, vols, false)
	}},
	{Name: "each capacity difference is a change", Run: func(r recorderRun) {
		ctx, t, node := r.ctx, r.t, r.node
		c, vols := testClass()
		changed(ctx, t, "first record", node("n1"), c, vols, true)
		c.Free -= 1 << 30
		changed(ctx, t, "less free space", node("n1"), c, vols, true)
		c.Size += 4 << 30
		changed(ctx, t, "a grown volume group", node("n1"), c, vols, true)
		vols = append(vols, volume.Volume{Name: "c", DeviceClass: c.DeviceClass, Size: 1 << 30})
		c.Volumes = len(vols)
		changed(ctx, t, "another volume", node("n1"), c, vols, true)
		vols[0].Tags = []string{"retagged"}
		changed(ctx, t, "a volume's tags alone", node("n1"), c, vols, false)
		vols = vols[1:]
		c.Volumes, c.Free = len(vols), c.Free+1<<30
		changed(ctx, t, "a removed volume", node("n1"), c, vols, true)
		changed(ctx, t, "the same state", node("n1"), c, vols, false)
	}},
	{Name: "nodes and classes are recorded apart", Run: func(r recorderRun) {
		ctx, t, node := r.ctx, r.t, r.node
		c, vols := testClass()
		changed(ctx, t, "n1", node("n1"), c, vols, true)
		changed(ctx, t, "another node's identical class", node("n2"), c, vols, true)
		other := c
		other.DeviceClass, other.VolumeGroup, other.Default = "hdd", "vg2", false
		changed(ctx, t, "another class of the node", node("n1"), other, nil, true)
		c.Free -= 1 << 30
		changed(ctx, t, "n2's class changed", node("n2"), c, vols, true)
		c.Free += 1 << 30
		changed(ctx, t, "n1's class as it was", node("n1"), c, vols, false)
	}},
}

func testClass() (volume.Capacity, []volume.Volume) {
	vols := []volume.Volume{{Name: "a", DeviceClass: "ssd", Size: 1 << 30, Tags: []string{"x"}}, {Name: "b", DeviceClass: "ssd", Size: 2 << 30}}
	return volume.Capacity{DeviceClass: "ssd", VolumeGroup: "vg", Default: true, Size: 10 << 30, Free: 7 << 30, Volumes: len(vols)}, vols
}

// row is what a record keeps of a capacity: the class, its group, whether it is the default,
// size, free space and volume count.
func row(c volume.Capacity) volume.Capacity {
	return volume.Capacity{DeviceClass: c.DeviceClass, VolumeGroup: c.VolumeGroup, Default: c.Default, Size: c.Size, Free: c.Free, Volumes: c.Volumes}
}

// before is the record an update of class is given now (the update writes nothing).
func before(ctx context.Context, t *testing.T, r volume.Recorder, class string) volume.Record {
	t.Helper()
	var got volume.Record
	if _, err := r.Update(ctx, class, func(b volume.Record) (volume.RecordChange, error) {
		got = b
		return volume.RecordChange{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// write has r write ch over class ssd's record.
func write(ctx context.Context, t *testing.T, r volume.Recorder, ch volume.RecordChange) {
	t.Helper()
	if _, err := r.Update(ctx, "ssd", func(volume.Record) (volume.RecordChange, error) { return ch, nil }); err != nil {
		t.Fatal(err)
	}
}

// changed records c and vols as the volume service does (volume.Sync deciding) and checks
// whether that recorded a new capacity.
func changed(ctx context.Context, t *testing.T, what string, r volume.Recorder, c volume.Capacity, vols []volume.Volume, want bool) {
	t.Helper()
	ch, err := r.Update(ctx, c.DeviceClass, func(before volume.Record) (volume.RecordChange, error) { return volume.Sync(before, c, vols), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if got := ch.Capacity != nil; got != want {
		t.Fatalf("%s: capacity changed = %v, want %v", what, got, want)
	}
}
