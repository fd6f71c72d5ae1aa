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

// These tests run the rules on volumetest.LVM (which passes the conformance suite real lvm
// passes), so they need neither root nor lvm2.

const gib = 1 << 30

// rig is a Service on two classes: "ssd" (default, volume group vg1 of 8 GiB, spare 1 GiB:
// 7 GiB to allocate) and "striped" (vg2, two physical volumes of 4 GiB, two stripes, no
// spare), and a class "gone" whose volume group does not exist.
type rig struct {
	svc    *volume.Service
	lvm    *volumetest.LVM
	record *volumetest.Record
}

func newRig(t *testing.T) rig {
	t.Helper()
	one, zero, two := uint64(1), uint64(0), uint(2)
	classes, err := deviceclass.New(&deviceclass.File{DeviceClasses: []*deviceclass.DeviceClass{
		{Name: "ssd", VolumeGroup: "vg1", Default: true, SpareGB: &one},
		{Name: "striped", VolumeGroup: "vg2", SpareGB: &zero, Stripe: &two},
		{Name: "gone", VolumeGroup: "vg3", SpareGB: &zero},
	}, OptionClasses: []*deviceclass.OptionClass{{Name: "raid1", Options: []string{"--type=raid1", "--mirrors=1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := volumetest.NewLVM()
	l.AddVG("vg1", 8*gib+1<<20, 1)
	l.AddVG("vg2", 4*gib+1<<20, 2)
	rec := volumetest.NewRecord("n1")
	return rig{svc: volume.New(volume.Options{Classes: classes, LVM: l, Recorder: rec}), lvm: l, record: rec}
}

// create makes a volume straight in lvm, as someone at the node's shell would.
func (r rig) create(t *testing.T, vg, name string, size uint64) {
	t.Helper()
	if err := r.lvm.Create(context.Background(), vg, lvm.CreateSpec{Name: name, Size: size}); err != nil {
		t.Fatal(err)
	}
}

// recorded is the names and sizes of a class's last record.
func (r rig) recorded(t *testing.T, class string) (volume.Capacity, map[string]uint64) {
	t.Helper()
	c, vols, ok := r.record.Class(class)
	if !ok {
		t.Fatalf("class %s was never recorded", class)
	}
	out := map[string]uint64{}
	for _, v := range vols {
		out[v.Name] = v.Size
	}
	return c, out
}

func TestCreate(t *testing.T) {
	for _, tt := range []struct {
		name    string
		before  func(t *testing.T, r rig)
		req     volume.CreateRequest
		created bool
		size    uint64
		err     string // the exact message a client sees through errors.go, when it fails
		is      func(error) bool
	}{
		{name: "new volume in the default class", req: volume.CreateRequest{Name: "v", Size: gib, Tags: []string{"a", "b"}},
			created: true, size: gib},
		{name: "same name and size again returns it", before: func(t *testing.T, r rig) { r.create(t, "vg1", "v", gib) },
			req: volume.CreateRequest{Name: "v", Size: gib}, size: gib},
		{name: "same name, another size", before: func(t *testing.T, r rig) { r.create(t, "vg1", "v", gib) },
			req: volume.CreateRequest{Name: "v", Size: 2 * gib}, err: "logical volume v already exists with 1073741824 bytes (requested 2147483648)",
			is: func(err error) bool { var e *volume.ExistsError; return errors.As(err, &e) }},
		{name: "all the space above the spare", req: volume.CreateRequest{Name: "v", Size: 7 * gib}, created: true, size: 7 * gib},
		{name: "the spare is not allocated (lvmd checked the raw free space)", req: volume.CreateRequest{Name: "v", Size: 7*gib + 512},
			err: "not enough space left on VG: free=7516192768, requested=7516193280", is: isNoSpace},
		{name: "free space counts other volumes", before: func(t *testing.T, r rig) { r.create(t, "vg1", "other", 3*gib) },
			req: volume.CreateRequest{Name: "v", Size: 5 * gib}, err: "not enough space left on VG: free=4294967296, requested=5368709120", is: isNoSpace},
		{name: "striped sizes round to extents of every stripe", before: func(t *testing.T, r rig) { r.create(t, "vg2", "other", 4<<20) },
			// 2047 extents are free and asked for, but two stripes need an even count: 2048.
			req: volume.CreateRequest{Name: "v", DeviceClass: "striped", Size: 8*gib - 8<<20 + 512},
			err: "not enough space left on VG: free=8585740288, requested=8581546496", is: isNoSpace},
		{name: "striped, fitting", req: volume.CreateRequest{Name: "v", DeviceClass: "striped", Size: 8*gib - 8<<20}, created: true, size: 8*gib - 8<<20},
		{name: "sub-GiB sizes are whole extents", req: volume.CreateRequest{Name: "v", Size: 300 << 20}, created: true, size: 300 << 20},
		{name: "a size in bytes rounds up to whole extents, as lvcreate does", req: volume.CreateRequest{Name: "v", Size: 300<<20 + 1},
			created: true, size: 304 << 20},
		{name: "the same request in bytes again returns it", before: func(t *testing.T, r rig) { r.create(t, "vg1", "v", 304<<20) },
			req: volume.CreateRequest{Name: "v", Size: 300<<20 + 1}, size: 304 << 20},
		{name: "unknown option class", req: volume.CreateRequest{Name: "v", Size: gib, OptionClass: "raid5"},
			err: "no lvcreate option class raid5 in this node's lvmd.yaml",
			is:  func(err error) bool { var e *volume.OptionClassNotFoundError; return errors.As(err, &e) }},
		{name: "unknown class", req: volume.CreateRequest{Name: "v", DeviceClass: "nvme", Size: gib}, err: "device class not found: nvme",
			is: func(err error) bool { var e *volume.ClassNotFoundError; return errors.As(err, &e) }},
		{name: "the class's volume group is gone", req: volume.CreateRequest{Name: "v", DeviceClass: "gone", Size: gib},
			is: func(err error) bool { return errors.Is(err, volume.ErrVolumeGroupMissing) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if tt.before != nil {
				tt.before(t, r)
			}
			records := r.record.Records()
			v, created, err := r.svc.Create(context.Background(), tt.req)
			if tt.is != nil {
				if err == nil || !tt.is(err) || tt.err != "" && err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if r.record.Records() != records {
					t.Fatal("a refused create must record nothing")
				}
				return
			}
			if err != nil || created != tt.created || v.Size != tt.size || v.Name != tt.req.Name {
				t.Fatalf("Create = %+v, %v, %v; want created %v size %d", v, created, err, tt.created, tt.size)
			}
			if !created {
				if r.record.Records() != records {
					t.Fatal("returning an existing volume changes nothing, so records nothing")
				}
				return
			}
			class := tt.req.DeviceClass
			if class == "" {
				class = "ssd"
			}
			if v.DeviceClass != class || !slices.Equal(v.Tags, tt.req.Tags) {
				t.Fatalf("created %+v", v)
			}
			if c, vols := r.recorded(t, class); vols[tt.req.Name] != tt.size || c.Volumes != len(vols) {
				t.Fatalf("the change was not recorded as made: %+v %v", c, vols)
			}
		})
	}
}

func isNoSpace(err error) bool { var e *volume.NoSpaceError; return errors.As(err, &e) }

// raceLVM allocates the free space of a volume group just before a create: another tool
// at the node's shell, between the agent's check and its lvcreate.
type raceLVM struct{ *volumetest.LVM }

func (l raceLVM) Create(ctx context.Context, vg string, s lvm.CreateSpec) error {
	info, err := l.VG(ctx, vg)
	if err != nil {
		return err
	}
	if err := l.LVM.Create(ctx, vg, lvm.CreateSpec{Name: "by-hand", Size: info.Free}); err != nil {
		return err
	}
	return l.LVM.Create(ctx, vg, s)
}

func TestCreateLosingTheRaceToAnotherToolIsNoSpace(t *testing.T) {
	r := newRig(t)
	svc := volume.New(volume.Options{Classes: r.svc.Classes(), LVM: raceLVM{r.lvm}})
	_, _, err := svc.Create(context.Background(), volume.CreateRequest{Name: "v", Size: gib})
	if !isNoSpace(err) || err.Error() != "not enough space left on VG: free=7516192768, requested=1073741824" {
		t.Fatalf("err %v", err)
	}
}

func TestResize(t *testing.T) {
	for _, tt := range []struct {
		name, class, lv string
		size, previous  uint64
		atLeast         bool
		want            uint64 // the size after; 0: size
		err             string
		is              func(error) bool
	}{
		{name: "grow", lv: "v", size: 3 * gib, previous: gib},
		{name: "the same size is a no-op", lv: "v", size: gib, previous: gib},
		{name: "shrinking is refused", lv: "v", size: gib / 2, previous: gib,
			err: "shrinking volume size is not allowed: current=1073741824, requested=536870912",
			is:  func(err error) bool { var e *volume.ShrinkError; return errors.As(err, &e) }},
		{name: "at least a smaller size is the volume as it is", lv: "v", size: gib / 2, previous: gib, atLeast: true, want: gib},
		{name: "at least a larger size grows", lv: "v", size: 2 * gib, previous: gib, atLeast: true},
		{name: "bytes round up to whole extents", lv: "v", size: gib + 1, previous: gib, want: gib + 4<<20},
		{name: "a size within the last extent is the same size", lv: "v", size: gib - 1, previous: gib, want: gib},
		{name: "growth up to the spare", lv: "v", size: 7 * gib, previous: gib},
		{name: "growth into the spare is refused", lv: "v", size: 8 * gib, previous: gib,
			err: "not enough space left on VG: free=6442450944, requested=7516192768", is: isNoSpace},
		{name: "a missing volume", lv: "w", size: 2 * gib, is: func(err error) bool { return errors.Is(err, volume.ErrVolumeNotFound) }},
		{name: "unknown class", class: "nvme", lv: "v", size: 2 * gib,
			is: func(err error) bool { var e *volume.ClassNotFoundError; return errors.As(err, &e) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.create(t, "vg1", "v", gib)
			records := r.record.Records()
			previous, after, err := r.svc.Resize(context.Background(), volume.ResizeRequest{DeviceClass: tt.class, Name: tt.lv, Size: tt.size, AtLeast: tt.atLeast})
			if previous != tt.previous {
				t.Fatalf("previous %d, want %d", previous, tt.previous)
			}
			if tt.want == 0 {
				tt.want = tt.size
			}
			_, vol, _ := r.svc.Get(context.Background(), "ssd", "v")
			if tt.is != nil {
				if err == nil || !tt.is(err) || tt.err != "" && err.Error() != tt.err {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				if vol.Size != gib || r.record.Records() != records {
					t.Fatalf("a refused resize changed the volume (%d bytes) or recorded", vol.Size)
				}
				return
			}
			if err != nil || vol.Size != tt.want || after != tt.want {
				t.Fatalf("Resize: %v, answered %d; volume has %d bytes, want %d", err, after, vol.Size, tt.want)
			}
			if grew := tt.want != tt.previous; grew != (r.record.Records() > records) {
				t.Fatalf("grew %v, records %d → %d: only a change is recorded", grew, records, r.record.Records())
			}
			if tt.want != tt.previous {
				if _, vols := r.recorded(t, "ssd"); vols["v"] != tt.want {
					t.Fatalf("recorded %v", vols)
				}
			}
		})
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.create(t, "vg1", "v", gib)
	r.create(t, "vg1", "w", gib)
	if err := r.svc.Remove(ctx, "", "v"); err != nil {
		t.Fatal(err)
	}
	if _, vols := r.recorded(t, "ssd"); len(vols) != 1 || vols["w"] != gib {
		t.Fatalf("recorded after remove %v", vols)
	}
	if _, _, err := r.svc.Get(ctx, "ssd", "v"); !errors.Is(err, volume.ErrVolumeNotFound) {
		t.Fatalf("a removed volume is still found: %v", err)
	}
	records := r.record.Records()
	if err := r.svc.Remove(ctx, "ssd", "v"); err != nil || r.record.Records() != records {
		t.Fatalf("removing a missing volume must succeed and change nothing (lvmd's rule): %v", err)
	}
	var cnf *volume.ClassNotFoundError
	if err := r.svc.Remove(ctx, "nvme", "w"); !errors.As(err, &cnf) {
		t.Fatalf("unknown class: %v", err)
	}

	// A held volume is not removed, except by its holder.
	ssd, _ := r.svc.Classes().Get("ssd")
	release, err := r.svc.Hold(ctx, ssd, "w", "backup b1", false)
	if err != nil {
		t.Fatal(err)
	}
	var busy *volume.BusyError
	if err := r.svc.Remove(ctx, "ssd", "w"); !errors.As(err, &busy) || err.Error() != "logical volume w is in use by backup b1; retry when it has finished" {
		t.Fatalf("remove of a held volume: %v", err)
	}
	if err := r.svc.RemoveOwn(ctx, ssd, "w"); err != nil {
		t.Fatal(err)
	}
	release()
	if vols, _ := r.svc.List(ctx, "ssd"); len(vols) != 0 {
		t.Fatalf("left %+v", vols)
	}
}

func TestHold(t *testing.T) {
	ctx := context.Background()
	r := newRig(t)
	r.create(t, "vg1", "v", gib)
	ssd, _ := r.svc.Classes().Get("ssd")
	var busy *volume.BusyError
	if _, err := r.svc.Hold(ctx, ssd, "missing", "backup b0", false); !errors.Is(err, volume.ErrVolumeNotFound) {
		t.Fatalf("hold of a missing volume: %v", err)
	}
	first, err := r.svc.Hold(ctx, ssd, "v", "backup b1", false)
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.svc.Hold(ctx, ssd, "v", "backup b2", false)
	if err != nil {
		t.Fatalf("two backups may read a volume: %v", err)
	}
	if _, err := r.svc.Hold(ctx, ssd, "v", "restore r1", true); !errors.As(err, &busy) || busy.By != "backup b1" {
		t.Fatalf("a restore must not write a volume being read: %v", err)
	}
	first()
	first() // a second release is a no-op, not another backup's
	if err := r.svc.Remove(ctx, "ssd", "v"); !errors.As(err, &busy) {
		t.Fatalf("the second backup still holds it: %v", err)
	}
	second()
	exclusive, err := r.svc.Hold(ctx, ssd, "v", "restore r1", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Hold(ctx, ssd, "v", "backup b3", false); !errors.As(err, &busy) || busy.By != "restore r1" {
		t.Fatalf("nothing may read a volume being restored: %v", err)
	}
	exclusive()
	if err := r.svc.Remove(ctx, "ssd", "v"); err != nil {
		t.Fatalf("released: %v", err)
	}
}
