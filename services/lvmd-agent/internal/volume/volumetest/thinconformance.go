package volumetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// NewThinVG gives a test a fresh volume group of 1 GiB with an empty thin pool of poolSize
// bytes, and the LVM that manages it.
type NewThinVG func(t *testing.T, poolSize uint64) (l volume.LVM, vg, pool string)

// ThinConformance checks an LVM's thin volumes against what the volume rules rely on: thin
// volumes list with their pool and take no extents from the group, their sizes may add up
// past the pool's, thin snapshots carry their origin, activation read-only shows in lv_attr,
// and each failure's classified kind. *lvm.Runner runs it on device-mapper (in a VM where
// the host kernel has none), LVM in memory.
func ThinConformance(t *testing.T, newVG NewThinVG) {
	runBehaviours(t, thinBehaviours, newVG, 15*time.Minute) // device-mapper in a VM is slow
}

var thinBehaviours = []behaviour[NewThinVG]{
	{"thin volumes, sizes and snapshots", func(ctx context.Context, t *testing.T, newVG NewThinVG) {
		l, vg, pool := newVG(t, 256<<20)
		fresh := testenv.Must(l.VG(ctx, vg))(t)
		ext := fresh.ExtentSize
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 100<<20 + 512, ThinPool: pool, Tags: []string{"t"}}))
		// Past the pool's size: lvm warns and makes it.
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "b", Size: 512 << 20, ThinPool: pool}))
		lvs := testenv.Must(l.LVs(ctx, vg))(t)
		byName := map[string]lvm.LV{}
		for _, lv := range lvs {
			byName[lv.Name] = lv
		}
		a, b, p := byName["a"], byName["b"], byName[pool]
		if !a.IsThin() || a.Pool != pool || a.Size != 100<<20+ext || !slices.Equal(a.Tags, []string{"t"}) || a.Attr[0] != 'V' || a.Origin != "" {
			t.Fatalf("thin volume %+v", a)
		}
		if !b.IsThin() || b.Size != 512<<20 {
			t.Fatalf("overprovisioned thin volume %+v", b)
		}
		if !p.IsThinPool() || p.IsThin() || p.Size != 256<<20 || p.DataPercent < 0 || p.DataPercent > 1 {
			t.Fatalf("pool %+v", p)
		}
		if info := testenv.Must(l.VG(ctx, vg))(t); info.Free != fresh.Free {
			t.Fatalf("thin volumes took extents from the group: free %d, was %d", info.Free, fresh.Free)
		}
		testenv.OK(t, l.Resize(ctx, vg, "a", 200<<20))
		testenv.OK(t, l.ThinSnapshot(ctx, vg, "a", "s", []string{"snap", "of=a"}))
		testenv.OK(t, l.Activate(ctx, vg, "s", true))
		testenv.OK(t, l.Activate(ctx, vg, "a", false))
		for _, lv := range testenv.Must(l.LVs(ctx, vg))(t) {
			switch lv.Name {
			case "a":
				if lv.Size != 200<<20 || lv.Attr[1] != 'w' {
					t.Fatalf("grown thin volume %+v", lv)
				}
			case "s":
				if !lv.IsThin() || lv.Origin != "a" || lv.Pool != pool || lv.Size != 200<<20 || lv.Attr[1] != 'r' ||
					!slices.Equal(lv.Tags, []string{"of=a", "snap"}) {
					t.Fatalf("read-only thin snapshot %+v", lv)
				}
			}
		}
		for _, name := range []string{"s", "a", "b"} {
			testenv.OK(t, l.Remove(ctx, vg, name))
		}
		if lvs := testenv.Must(l.LVs(ctx, vg))(t); len(lvs) != 1 || lvs[0].Name != pool {
			t.Fatalf("after removes %+v", lvs)
		}
	}},
	{"thin failures are classified", func(ctx context.Context, t *testing.T, newVG NewThinVG) {
		l, vg, pool := newVG(t, 64<<20)
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 8 << 20, ThinPool: pool}))
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "thick", Size: 8 << 20}))
		kind(t, "a thin volume in a missing pool", l.Create(ctx, vg, lvm.CreateSpec{Name: "x", Size: 8 << 20, ThinPool: "nopool"}), lvm.ErrLVNotFound, "lvcreate")
		kind(t, "a duplicate thin volume", l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 8 << 20, ThinPool: pool}), lvm.ErrExists, "lvcreate")
		kind(t, "a snapshot of a missing volume", l.ThinSnapshot(ctx, vg, "nope", "s", nil), lvm.ErrLVNotFound, "lvcreate")
		kind(t, "a snapshot under a taken name", l.ThinSnapshot(ctx, vg, "a", "thick", nil), lvm.ErrExists, "lvcreate")
		kind(t, "a thin snapshot of a thick volume", l.ThinSnapshot(ctx, vg, "thick", "s", nil), lvm.ErrInvalid, "lvcreate")
		kind(t, "activating a missing volume", l.Activate(ctx, vg, "nope", true), lvm.ErrLVNotFound, "lvchange")
		if lvs := testenv.Must(l.LVs(ctx, vg))(t); len(lvs) != 3 {
			t.Fatalf("refused calls made volumes: %+v", lvs)
		}
	}},
}
