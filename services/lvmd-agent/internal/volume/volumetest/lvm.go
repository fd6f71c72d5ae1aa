// Package volumetest gives the volume rules' tests in-memory stand-ins for lvm2 (LVM) and
// for the store's record (Record), and the conformance suites (LVMConformance,
// RecorderConformance) that the stand-ins and the real implementations both pass, so a
// stand-in cannot drift from what it stands for.
package volumetest

import (
	"context"
	"slices"
	"sort"
	"sync"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

var _ volume.LVM = (*LVM)(nil)

// ExtentSize is the extent size of the fake's volume groups (lvm's default, 4 MiB).
const ExtentSize = 4 << 20

// LVM is an in-memory lvm2: volume groups of whole extents, logical volumes allocated from
// them, lvm's rounding, its refusal of sizes in part sectors and its classified failures (*lvm.Error of lvm.ErrNoSpace, ...). It
// does not model physical volume placement (striped space comes from one pool), lvcreate
// options, activation or snapshots. It is safe for concurrent use.
type LVM struct {
	mu    sync.Mutex
	vgs   map[string]*fakeVG
	locks map[string]chan struct{}
}

type fakeVG struct {
	extents uint64 // total
	pvs     int
	lvs     map[string]*fakeLV
}

type fakeLV struct {
	extents uint64
	tags    []string
}

// NewLVM returns an LVM with no volume groups.
func NewLVM() *LVM { return &LVM{vgs: map[string]*fakeVG{}, locks: map[string]chan struct{}{}} }

// AddVG adds a volume group of pvs physical volumes of pvSize bytes each, less the 1 MiB
// lvm keeps for metadata on each, in whole extents.
func (f *LVM) AddVG(name string, pvSize uint64, pvs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	per := uint64(0)
	if pvSize > 1<<20 {
		per = (pvSize - 1<<20) / ExtentSize
	}
	f.vgs[name] = &fakeVG{extents: per * uint64(pvs), pvs: pvs, lvs: map[string]*fakeLV{}}
}

// Lock serialises work on one volume group, as lvm.Runner.Lock does.
func (f *LVM) Lock(ctx context.Context, vg string) (func(), error) {
	f.mu.Lock()
	ch, ok := f.locks[vg]
	if !ok {
		ch = make(chan struct{}, 1)
		f.locks[vg] = ch
	}
	f.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func fail(kind error, command string) error {
	return &lvm.Error{Kind: kind, Command: command, ExitCode: 5, Detail: "volumetest.LVM"}
}

func (v *fakeVG) used() uint64 {
	var n uint64
	for _, lv := range v.lvs {
		n += lv.extents
	}
	return n
}

func (v *fakeVG) info(name string) lvm.VGInfo {
	free := v.extents - v.used()
	return lvm.VGInfo{Name: name, Size: v.extents * ExtentSize, Free: free * ExtentSize, ExtentSize: ExtentSize,
		ExtentCount: v.extents, FreeExtents: free}
}

// VG reports one volume group.
func (f *LVM) VG(ctx context.Context, name string) (lvm.VGInfo, error) {
	vgs, err := f.VGs(ctx, name)
	if err != nil {
		return lvm.VGInfo{}, err
	}
	return vgs[0], nil
}

// VGs reports the named volume groups (all of them when none is named), by name.
func (f *LVM) VGs(ctx context.Context, names ...string) ([]lvm.VGInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(names) == 0 {
		for n := range f.vgs {
			names = append(names, n)
		}
	}
	names = slices.Clone(names)
	sort.Strings(names)
	names = slices.Compact(names)
	out := make([]lvm.VGInfo, 0, len(names))
	for _, n := range names {
		v, ok := f.vgs[n]
		if !ok {
			return nil, fail(lvm.ErrVGNotFound, "vgs")
		}
		out = append(out, v.info(n))
	}
	return out, nil
}

// LVs lists a volume group's logical volumes by name; they are inactive (no device
// numbers), as in lvm's metadata-only mode.
func (f *LVM) LVs(ctx context.Context, vg string) ([]lvm.LV, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vgs[vg]
	if !ok {
		return nil, fail(lvm.ErrVGNotFound, "lvs")
	}
	out := make([]lvm.LV, 0, len(v.lvs))
	for name, lv := range v.lvs {
		out = append(out, lvm.LV{Name: name, Size: lv.extents * ExtentSize, Tags: slices.Clone(lv.tags),
			Attr: "-wi-------", Path: "/dev/" + vg + "/" + name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// extentsFor is size in whole extents, rounded up to a multiple of the stripes as lvm does.
func extentsFor(size uint64, stripes uint) uint64 {
	n := (size + ExtentSize - 1) / ExtentSize
	if s := uint64(stripes); s > 1 {
		n = (n + s - 1) / s * s
	}
	return n
}

// Create makes a logical volume.
func (f *LVM) Create(ctx context.Context, vg string, s lvm.CreateSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vgs[vg]
	switch {
	case !ok:
		return fail(lvm.ErrVGNotFound, "lvcreate")
	case len(s.Options) > 0 || s.Name == "" || s.Size == 0 || s.Size%512 != 0 || int(s.Stripes) > v.pvs:
		return fail(lvm.ErrInvalid, "lvcreate")
	case v.lvs[s.Name] != nil:
		return fail(lvm.ErrExists, "lvcreate")
	}
	n := extentsFor(s.Size, s.Stripes)
	if n > v.extents-v.used() {
		return fail(lvm.ErrNoSpace, "lvcreate")
	}
	var tags []string
	for _, t := range s.Tags {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	v.lvs[s.Name] = &fakeLV{extents: n, tags: tags}
	return nil
}

// Resize sets a logical volume's size (rounded up to whole extents).
func (f *LVM) Resize(ctx context.Context, vg, name string, size uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vgs[vg]
	if !ok {
		return fail(lvm.ErrVGNotFound, "lvresize")
	}
	lv, ok := v.lvs[name]
	switch {
	case size%512 != 0:
		return fail(lvm.ErrInvalid, "lvresize") // lvm parses the size before it looks
	case !ok:
		return fail(lvm.ErrLVNotFound, "lvresize")
	}
	n := extentsFor(size, 1)
	switch {
	case n == lv.extents || n == 0:
		return fail(lvm.ErrFailed, "lvresize") // lvm: "New size matches existing size"
	case n > lv.extents && n-lv.extents > v.extents-v.used():
		return fail(lvm.ErrNoSpace, "lvresize")
	}
	lv.extents = n
	return nil
}

// Remove deletes a logical volume.
func (f *LVM) Remove(ctx context.Context, vg, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.vgs[vg]
	if !ok {
		return fail(lvm.ErrVGNotFound, "lvremove")
	}
	if _, ok := v.lvs[name]; !ok {
		return fail(lvm.ErrLVNotFound, "lvremove")
	}
	delete(v.lvs, name)
	return nil
}
