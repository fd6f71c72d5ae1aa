package volume_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume/volumetest"
)

// thinRig is a Service on one volume group "vg" of 16 GiB holding a thick class "thick"
// (default, no spare) and a thin class "thin" on pool0 of 4 GiB, overprovisioned 2.5 times
// with a 1 GiB spare: 10 GiB of thin volumes, 9 to allocate.
type thinRig struct {
	svc    *volume.Service
	lvm    *volumetest.LVM
	record *volumetest.Record
}

func newThinRig(t *testing.T) thinRig {
	t.Helper()
	zero, one := uint64(0), uint64(1)
	classes, err := deviceclass.New(&deviceclass.File{DeviceClasses: []*deviceclass.DeviceClass{
		{Name: "thick", VolumeGroup: "vg", Default: true, SpareGB: &zero},
		{Name: "thin", VolumeGroup: "vg", SpareGB: &one, Type: deviceclass.TypeThin,
			ThinPool: &deviceclass.ThinPool{Name: "pool0", OverprovisionRatio: 2.5}},
		{Name: "nopool", VolumeGroup: "vg", SpareGB: &zero, Type: deviceclass.TypeThin,
			ThinPool: &deviceclass.ThinPool{Name: "pool1", OverprovisionRatio: 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	l := volumetest.NewLVM()
	l.AddVG("vg", 16*gib+1<<20, 1)
	if err := l.AddThinPool("vg", "pool0", 4*gib); err != nil {
		t.Fatal(err)
	}
	rec := volumetest.NewRecord("n1")
	return thinRig{svc: volume.New(volume.Options{Classes: classes, LVM: l, Recorder: rec}), lvm: l, record: rec}
}

func TestThinVolumesComeFromTheirPool(t *testing.T) {
	r := newThinRig(t)
	ctx := context.Background()
	v, created, err := r.svc.Create(ctx, volume.CreateRequest{Name: "t1", Size: 6*gib + 1, DeviceClass: "thin", Tags: []string{"x"}})
	if err != nil || !created || v.Size != 6*gib+volumetest.ExtentSize || v.DeviceClass != "thin" {
		t.Fatalf("thin create: %+v %v %v", v, created, err)
	}
	// The pool's space, not the group's: the group keeps its 12 GiB, the pool 10 less 6.
	if free, err := r.svc.FreeBytes(ctx, "thin"); err != nil || free != 3*gib-volumetest.ExtentSize {
		t.Fatalf("thin free %d %v, want 3 GiB less an extent (10 GiB × less 6 GiB + an extent, less the 1 GiB spare)", free, err)
	}
	if free, err := r.svc.FreeBytes(ctx, "thick"); err != nil || free != 12*gib {
		t.Fatalf("thick free %d %v: thin volumes take nothing from the group", free, err)
	}
	// Past the overprovisioned space: refused, nothing made.
	var noSpace *volume.NoSpaceError
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "t2", Size: 3 * gib, DeviceClass: "thin"}); !errors.As(err, &noSpace) {
		t.Fatalf("create past the overprovisioned space: %v", err)
	}
	if _, _, err := r.svc.Resize(ctx, volume.ResizeRequest{DeviceClass: "thin", Name: "t1", Size: 10 * gib}); !errors.As(err, &noSpace) {
		t.Fatalf("grow past it: %v", err)
	}
	if _, size, err := r.svc.Resize(ctx, volume.ResizeRequest{DeviceClass: "thin", Name: "t1", Size: 8 * gib}); err != nil || size != 8*gib {
		t.Fatalf("grow within it: %d %v", size, err)
	}
	// Each class lists its own volumes of the shared group.
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "k1", Size: gib, DeviceClass: "thick"}); err != nil {
		t.Fatal(err)
	}
	names := func(class string) []string {
		vols, err := r.svc.List(ctx, class)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range vols {
			out = append(out, v.Name)
		}
		return out
	}
	if thin, thick := names("thin"), names("thick"); !slices.Equal(thin, []string{"t1"}) || !slices.Equal(thick, []string{"k1"}) {
		t.Fatalf("thin lists %v, thick %v", thin, thick)
	}
	// A name is the group's: the same name in the other class exists already.
	var exists *volume.ExistsError
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "k1", Size: gib, DeviceClass: "thin"}); !errors.As(err, &exists) {
		t.Fatalf("a thick volume's name in the thin class: %v", err)
	}
	if _, _, err := r.svc.Resize(ctx, volume.ResizeRequest{DeviceClass: "thick", Name: "t1", Size: 9 * gib}); !errors.Is(err, volume.ErrVolumeNotFound) {
		t.Fatalf("a thin volume through the thick class: %v", err)
	}
	c, vols, err := r.svc.State(ctx, "thin")
	if err != nil || c.Pool == nil || c.Pool.Size != 4*gib || c.Pool.Virtual != 8*gib || c.Size != 10*gib || c.Free != gib ||
		c.GroupSize != 16*gib || c.GroupFree != 11*gib || len(vols) != 1 {
		t.Fatalf("thin state %+v %+v %v", c, c.Pool, err)
	}
	// Watch's capacities: a class whose pool is missing has nothing to allocate; the others
	// are still reported.
	caps, err := r.svc.Capacities(ctx)
	if err != nil || len(caps) != 3 || caps[1].Free != gib || caps[1].Pool.Size != 4*gib || caps[2].DeviceClass != "nopool" ||
		caps[2].Free != 0 || caps[2].Size != 0 || caps[2].Pool.Name != "pool1" || caps[0].Free != 11*gib {
		t.Fatalf("Capacities %+v %v", caps, err)
	}
	rec, _, ok := r.record.Class("thin")
	if !ok || rec.Free != gib || rec.Volumes != 1 {
		t.Fatalf("thin record %+v", rec)
	}
}

func TestThinSnapshots(t *testing.T) {
	r := newThinRig(t)
	ctx := context.Background()
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "src", Size: 2 * gib, DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	snap, created, err := r.svc.Snapshot(ctx, volume.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "src", ReadOnly: true, Tags: []string{"a"}})
	if err != nil || !created || snap.Size != 2*gib || snap.Attr[1] != 'r' {
		t.Fatalf("snapshot %+v %v %v", snap, created, err)
	}
	lvs, _ := r.lvm.LVs(ctx, "vg")
	if i := slices.IndexFunc(lvs, func(lv lvm.LV) bool { return lv.Name == "snap" }); i < 0 || lvs[i].Origin != "src" || lvs[i].Pool != "pool0" {
		t.Fatalf("lvs %+v", lvs)
	}
	// Retried: the same answer, nothing new.
	if again, created, err := r.svc.Snapshot(ctx, volume.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "src", ReadOnly: true}); err != nil || created || again.Name != "snap" {
		t.Fatalf("retry %+v %v %v", again, created, err)
	}
	// Larger than its source: made at the source's size, then grown.
	big, _, err := r.svc.Snapshot(ctx, volume.SnapshotRequest{Name: "big", DeviceClass: "thin", Source: "src", Size: 3 * gib})
	if err != nil || big.Size != 3*gib || big.Attr[1] != 'w' {
		t.Fatalf("grown snapshot %+v %v", big, err)
	}
	var (
		exists   *volume.ExistsError
		small    *volume.SnapshotSizeError
		thick    *volume.ThickSnapshotError
		noSpace  *volume.NoSpaceError
		noPool   *volume.PoolMissingError
		notFound = volume.ErrVolumeNotFound
	)
	for _, tt := range []struct {
		what string
		req  volume.SnapshotRequest
		ok   func(error) bool
	}{
		{"another source under the name", volume.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "big"}, func(err error) bool { return errors.As(err, &exists) }},
		{"smaller than the source", volume.SnapshotRequest{Name: "s2", DeviceClass: "thin", Source: "src", Size: gib}, func(err error) bool { return errors.As(err, &small) }},
		{"a thick class", volume.SnapshotRequest{Name: "s2", DeviceClass: "thick", Source: "src"}, func(err error) bool { return errors.As(err, &thick) }},
		{"a missing source", volume.SnapshotRequest{Name: "s2", DeviceClass: "thin", Source: "nope"}, func(err error) bool { return errors.Is(err, notFound) }},
		{"past the pool's space", volume.SnapshotRequest{Name: "s2", DeviceClass: "thin", Source: "src", Size: 5 * gib}, func(err error) bool { return errors.As(err, &noSpace) }},
		{"a class whose pool is missing", volume.SnapshotRequest{Name: "s2", DeviceClass: "nopool", Source: "src"}, func(err error) bool { return errors.As(err, &noPool) }},
	} {
		if _, _, err := r.svc.Snapshot(ctx, tt.req); !tt.ok(err) {
			t.Errorf("%s: %v", tt.what, err)
		}
	}
	if _, _, err := r.svc.Create(ctx, volume.CreateRequest{Name: "x", Size: gib, DeviceClass: "nopool"}); !errors.As(err, &noPool) {
		t.Errorf("create in a class whose pool is missing: %v", err)
	}
	if err := r.svc.CheckVolumeGroups(ctx); err == nil || err.Error() !=
		`device-classes[2].thin-pool.name: thin pool pool1 does not exist in volume group vg (make it with lvcreate -T vg/pool1 -L SIZE)` {
		t.Errorf("CheckVolumeGroups: %v", err)
	}
	// Nothing the refusals asked for was made.
	if vols, _ := r.svc.List(ctx, "thin"); len(vols) != 3 {
		t.Fatalf("thin volumes after the refusals: %+v", vols)
	}
}

// failingActivate is an LVM whose activation fails.
type failingActivate struct{ *volumetest.LVM }

func (failingActivate) Activate(context.Context, string, string, bool) error {
	return &lvm.Error{Kind: lvm.ErrFailed, Command: "lvchange", Detail: "device-mapper: reload ioctl failed"}
}

// TestSnapshotThatCannotBeActivatedIsRemoved: no half-made snapshot stays (lvmd removes it too).
func TestSnapshotThatCannotBeActivatedIsRemoved(t *testing.T) {
	r := newThinRig(t)
	ctx := context.Background()
	svc := volume.New(volume.Options{Classes: r.svc.Classes(), LVM: failingActivate{r.lvm}})
	if _, _, err := svc.Create(ctx, volume.CreateRequest{Name: "src", Size: gib, DeviceClass: "thin"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Snapshot(ctx, volume.SnapshotRequest{Name: "snap", DeviceClass: "thin", Source: "src", ReadOnly: true}); err == nil {
		t.Fatal("a snapshot that cannot be activated was reported made")
	}
	if vols, _ := svc.List(ctx, "thin"); len(vols) != 1 || vols[0].Name != "src" {
		t.Fatalf("volumes after the failed snapshot: %+v", vols)
	}
}
