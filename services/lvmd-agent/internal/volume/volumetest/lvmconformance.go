package volumetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/libs/platform/testenv"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// NewVG gives a test a fresh, empty volume group of pvs physical volumes of pvSize bytes
// each, and the LVM that manages it.
type NewVG func(t *testing.T, pvSize uint64, pvs int) (l volume.LVM, vg string)

// LVMConformance checks an LVM against what the volume rules rely on: sizes in whole
// extents (of every stripe) and of 512-byte sectors, free space accounting, lvs ordered by name with their tags,
// and each failure's classified kind. *lvm.Runner runs it on a loop-backed volume group,
// LVM in memory.
func LVMConformance(t *testing.T, newVG NewVG) { runBehaviours(t, lvmBehaviours, newVG, 2*time.Minute) }

// behaviour is one case of a conformance suite, given the suite's way to make a volume group.
type behaviour[F any] struct {
	name string
	run  func(ctx context.Context, t *testing.T, newVG F)
}

// runBehaviours runs each case as a parallel subtest with its own deadline.
func runBehaviours[F any](t *testing.T, cases []behaviour[F], newVG F, timeout time.Duration) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			t.Cleanup(cancel)
			c.run(ctx, t, newVG)
		})
	}
}

var lvmBehaviours = []behaviour[NewVG]{
	{"create lists resize remove and account free space", func(ctx context.Context, t *testing.T, newVG NewVG) {
		l, vg := newVG(t, 1<<30, 1)
		fresh := testenv.Must(l.VG(ctx, vg))(t)
		if fresh.Name != vg || fresh.ExtentSize == 0 || fresh.Free != fresh.Size || fresh.Size != fresh.ExtentSize*fresh.ExtentCount ||
			fresh.FreeExtents != fresh.ExtentCount || fresh.Size > 1<<30 || fresh.Size < 900<<20 {
			t.Fatalf("fresh volume group %+v", fresh)
		}
		ext := fresh.ExtentSize
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "b", Size: 100 << 20, Tags: []string{"owner=x", "a"}}))
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 512})) // rounded up to one extent
		lvs := testenv.Must(l.LVs(ctx, vg))(t)
		if len(lvs) != 2 || lvs[0].Name != "a" || lvs[0].Size != ext || len(lvs[0].Tags) != 0 ||
			lvs[1].Name != "b" || lvs[1].Size != 100<<20 || !slices.Equal(lvs[1].Tags, []string{"a", "owner=x"}) {
			t.Fatalf("lvs %+v", lvs)
		}
		if lvs[1].Path != "/dev/"+vg+"/b" || lvs[1].IsThinPool() || lvs[1].Attr == "" {
			t.Fatalf("lv %+v", lvs[1])
		}
		info := testenv.Must(l.VG(ctx, vg))(t)
		if want := fresh.Free - ext - 100<<20; info.Free != want || info.FreeExtents*ext != want || info.Size != fresh.Size {
			t.Fatalf("after creates %+v, want free %d", info, want)
		}
		testenv.OK(t, l.Resize(ctx, vg, "b", 200<<20+512))
		if lvs := testenv.Must(l.LVs(ctx, vg))(t); lvs[1].Size != 200<<20+ext {
			t.Fatalf("resized to %d, want %d", lvs[1].Size, 200<<20+ext)
		}
		testenv.OK(t, l.Remove(ctx, vg, "b"))
		testenv.OK(t, l.Remove(ctx, vg, "a"))
		if lvs := testenv.Must(l.LVs(ctx, vg))(t); len(lvs) != 0 {
			t.Fatalf("after removes %+v", lvs)
		}
		if info := testenv.Must(l.VG(ctx, vg))(t); info.Free != fresh.Free {
			t.Fatalf("free after removes %d, want %d", info.Free, fresh.Free)
		}
	}},
	{"failures are classified", func(ctx context.Context, t *testing.T, newVG NewVG) {
		l, vg := newVG(t, 1<<30, 1)
		fresh := testenv.Must(l.VG(ctx, vg))(t)
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 100 << 20}))
		kind(t, "a size in part sectors", l.Create(ctx, vg, lvm.CreateSpec{Name: "odd", Size: 1<<20 + 1}), lvm.ErrInvalid, "lvcreate")
		kind(t, "a resize in part sectors", l.Resize(ctx, vg, "a", 200<<20+1), lvm.ErrInvalid, "lvresize")
		kind(t, "duplicate create", l.Create(ctx, vg, lvm.CreateSpec{Name: "a", Size: 100 << 20}), lvm.ErrExists, "lvcreate")
		kind(t, "create past the free space", l.Create(ctx, vg, lvm.CreateSpec{Name: "big", Size: fresh.Free}), lvm.ErrNoSpace, "lvcreate")
		kind(t, "grow past the free space", l.Resize(ctx, vg, "a", fresh.Free+fresh.ExtentSize), lvm.ErrNoSpace, "lvresize")
		kind(t, "resize a missing volume", l.Resize(ctx, vg, "missing", 1<<30), lvm.ErrLVNotFound, "lvresize")
		kind(t, "remove a missing volume", l.Remove(ctx, vg, "missing"), lvm.ErrLVNotFound, "lvremove")
		gone := vg + "x"
		_, err := l.VG(ctx, gone)
		kind(t, "missing volume group", err, lvm.ErrVGNotFound, "vgs")
		_, err = l.VGs(ctx, vg, gone)
		kind(t, "one of two volume groups missing", err, lvm.ErrVGNotFound, "vgs")
		_, err = l.LVs(ctx, gone)
		kind(t, "volumes of a missing volume group", err, lvm.ErrVGNotFound, "lvs")
		kind(t, "create in a missing volume group", l.Create(ctx, gone, lvm.CreateSpec{Name: "a", Size: 1 << 20}), lvm.ErrVGNotFound, "lvcreate")
		// Nothing a refused call asked for was allocated: the rest still fits exactly.
		rest := testenv.Must(l.VG(ctx, vg))(t).Free
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "rest", Size: rest}))
		if info := testenv.Must(l.VG(ctx, vg))(t); info.Free != 0 || info.FreeExtents != 0 {
			t.Fatalf("a full volume group reports %+v", info)
		}
		kind(t, "create in a full volume group", l.Create(ctx, vg, lvm.CreateSpec{Name: "one", Size: 512}), lvm.ErrNoSpace, "lvcreate")
	}},
	{"striped volumes round to whole extents of every stripe", func(ctx context.Context, t *testing.T, newVG NewVG) {
		l, vg := newVG(t, 1<<30, 2)
		ext := testenv.Must(l.VG(ctx, vg))(t).ExtentSize
		// 96 MiB and a sector is 25 extents: an odd count, rounded up to 26 for two stripes.
		testenv.OK(t, l.Create(ctx, vg, lvm.CreateSpec{Name: "s", Size: 96<<20 + 512, Stripes: 2}))
		if lvs := testenv.Must(l.LVs(ctx, vg))(t); len(lvs) != 1 || lvs[0].Size != 96<<20+2*ext {
			t.Fatalf("striped lvs %+v, want %d bytes", lvs, 96<<20+2*ext)
		}
		kind(t, "more stripes than physical volumes", l.Create(ctx, vg, lvm.CreateSpec{Name: "t", Size: 100 << 20, Stripes: 3}), lvm.ErrInvalid, "lvcreate")
		vgs := testenv.Must(l.VGs(ctx, vg))(t)
		if len(vgs) != 1 || vgs[0].Name != vg || vgs[0].Free != vgs[0].Size-96<<20-2*ext {
			t.Fatalf("vgs %+v", vgs)
		}
	}},
	{"lock serialises one volume group only", func(ctx context.Context, t *testing.T, newVG NewVG) {
		l, vg := newVG(t, 1<<30, 1)
		unlock := testenv.Must(l.Lock(ctx, vg))(t)
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		if _, err := l.Lock(short, vg); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a second lock of a held group: %v, want it to wait until its context ends", err)
		}
		other := testenv.Must(l.Lock(ctx, vg+"-other"))(t) // another group is independent
		other()
		unlock()
		testenv.Must(l.Lock(ctx, vg))(t)()
	}},
}

// kind requires an *lvm.Error of the given kind from command.
func kind(t *testing.T, what string, err, want error, command string) {
	t.Helper()
	var le *lvm.Error
	if !errors.Is(err, want) || !errors.As(err, &le) || le.Command != command {
		t.Fatalf("%s: %v, want an lvm %s error: %v", what, err, command, want)
	}
}
