package volume_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

func TestReadsLeaveOutSnapshotsAndSubtractTheSpare(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.create(t, "vg1", "v", gib)
	r.create(t, "vg1", volume.SnapshotPrefix+"7", gib/8) // a backup's snapshot
	r.create(t, "vg2", "s", gib)

	vols, err := r.svc.List(ctx, "")
	if err != nil || len(vols) != 1 || vols[0].Name != "v" || vols[0].DeviceClass != "ssd" || vols[0].Size != gib {
		t.Fatalf("List = %+v, %v; want only v (the snapshot is the agent's own)", vols, err)
	}
	free, err := r.svc.FreeBytes(ctx, "ssd")
	if want := uint64(8*gib - gib - gib/8 - gib); err != nil || free != want {
		t.Fatalf("FreeBytes = %d, %v; want %d (free less the spare)", free, err, want)
	}
	caps, err := r.svc.Capacities(ctx)
	if err == nil {
		t.Fatalf("Capacities with a class whose volume group is gone: %+v", caps)
	}
	if !errors.Is(err, volume.ErrVolumeGroupMissing) {
		t.Fatalf("Capacities: %v", err)
	}
	c, vols, err := r.svc.State(ctx, "striped")
	if err != nil || c.Size != 8*gib || c.Free != 7*gib || c.Volumes != 1 || c.Default || c.VolumeGroup != "vg2" || len(vols) != 1 {
		t.Fatalf("State(striped) = %+v %+v %v", c, vols, err)
	}
	dc, v, err := r.svc.Find(ctx, "s")
	if err != nil || dc.Name != "striped" || v.Size != gib {
		t.Fatalf("Find looks in every class: %v %+v %v", dc, v, err)
	}
	if _, _, err := r.svc.Find(ctx, "nothing"); !errors.Is(err, volume.ErrVolumeGroupMissing) {
		t.Fatalf("Find of a missing volume while a class's volume group is gone: %v", err)
	}
	err = r.svc.CheckVolumeGroups(ctx)
	if err == nil || err.Error() != `device-classes[2].volume-group: volume group "vg3" does not exist on this node` {
		t.Fatalf("CheckVolumeGroups: %v", err)
	}
}

func TestCapacitiesOfEveryClass(t *testing.T) {
	r := newRig(t)
	r.lvm.AddVG("vg3", 2*gib+1<<20, 1)
	r.create(t, "vg1", "v", 3*gib)
	caps, err := r.svc.Capacities(context.Background())
	if err != nil || len(caps) != 3 {
		t.Fatalf("Capacities = %+v, %v", caps, err)
	}
	want := []volume.Capacity{
		{DeviceClass: "ssd", VolumeGroup: "vg1", Default: true, Size: 8 * gib, Free: 4 * gib, GroupSize: 8 * gib, GroupFree: 5 * gib},
		{DeviceClass: "striped", VolumeGroup: "vg2", Size: 8 * gib, Free: 8 * gib, GroupSize: 8 * gib, GroupFree: 8 * gib},
		{DeviceClass: "gone", VolumeGroup: "vg3", Size: 2 * gib, Free: 2 * gib, GroupSize: 2 * gib, GroupFree: 2 * gib},
	}
	for i := range want {
		if caps[i] != want[i] {
			t.Fatalf("capacity %d = %+v, want %+v", i, caps[i], want[i])
		}
	}
	if err := r.svc.CheckVolumeGroups(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.svc.Find(context.Background(), "nothing"); !errors.Is(err, volume.ErrVolumeNotFound) {
		t.Fatalf("Find of a missing volume: %v", err)
	}
}

// TestChangesAreRecordedAndWakeWatchers: the agent's own change and, by Reconcile, one
// made by hand.
func TestChangesAreRecordedAndWakeWatchers(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	ch, cancel := r.svc.Subscribe()
	defer cancel()
	woken := func(what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not wake the watcher", what)
		}
		select { // drain a second wake-up of the same change
		case <-ch:
		default:
		}
	}
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "v", Size: gib}); err != nil {
		t.Fatal(err)
	}
	woken("a create")

	r.create(t, "vg1", "by-hand", gib)
	c, err := r.svc.Reconcile(ctx, "ssd")
	if err != nil || c.Volumes != 2 || c.Free != 5*gib {
		t.Fatalf("Reconcile = %+v, %v", c, err)
	}
	woken("a change found by Reconcile")
	if _, vols := r.recorded(t, "ssd"); vols["by-hand"] != gib || vols["v"] != gib {
		t.Fatalf("recorded %v", vols)
	}
	if _, err := r.svc.Reconcile(ctx, "ssd"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("a Reconcile that finds nothing new must not wake watchers")
	default:
	}
	var cnf *volume.ClassNotFoundError
	if _, err := r.svc.Reconcile(ctx, "nvme"); !errors.As(err, &cnf) {
		t.Fatalf("Reconcile of an unknown class: %v", err)
	}
}

func TestDescribeGivesGroupDeviceAndHolder(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.create(t, "vg1", "v", gib)
	r.create(t, "vg1", volume.SnapshotPrefix+"7", gib/8)
	r.create(t, "vg2", "s", 2*gib)

	d, err := r.svc.Describe(ctx, "", "s")
	if err != nil || d.DeviceClass != "striped" || d.VolumeGroup != "vg2" || d.Path != "/dev/vg2/s" || d.Size != 2*gib || d.InUseBy != "" {
		t.Fatalf("Describe without a class looks in every class: %+v, %v", d, err)
	}
	if _, err := r.svc.Describe(ctx, "ssd", "s"); !errors.Is(err, volume.ErrVolumeNotFound) {
		t.Fatalf("Describe in a class that does not hold it: %v", err)
	}
	var classErr *volume.ClassNotFoundError
	if _, err := r.svc.Describe(ctx, "nosuch", "s"); !errors.As(err, &classErr) {
		t.Fatalf("Describe in an unknown class: %v", err)
	}
	ssd, _ := r.svc.Classes().Get("ssd")
	release, err := r.svc.Hold(ctx, ssd, "v", "backup b1", false)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := r.svc.Describe(ctx, "ssd", "v"); err != nil || d.InUseBy != "backup b1" {
		t.Fatalf("a held volume names its holder: %+v, %v", d, err)
	}
	all, err := r.svc.DescribeAll(ctx, "")
	if err != nil || len(all) != 1 || all[0].Name != "v" || all[0].InUseBy != "backup b1" || all[0].Path != "/dev/vg1/v" {
		t.Fatalf("DescribeAll of the default class (the snapshot is the agent's own): %+v, %v", all, err)
	}
	release()
	if d, _ := r.svc.Describe(ctx, "", "v"); d.InUseBy != "" {
		t.Fatalf("released, still held by %q", d.InUseBy)
	}
}
