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
// them, thin pools (AddThinPool) with thin volumes and thin snapshots in them, lvm's
// rounding, its refusal of sizes in part sectors and its classified failures (*lvm.Error of
// lvm.ErrNoSpace, ...). It does not model physical volume placement (striped space comes
// from one pool), lvcreate options, a thin pool's metadata or data use, or thick snapshots.
// It is safe for concurrent use.
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
	extents uint64 // a thin volume's are virtual: they take nothing from the group
	tags    []string
	// pool is a thin volume's pool; isPool marks a pool.
	pool     string
	isPool   bool
	origin   string
	readOnly bool
}

// attr is lv_attr as lvm reports an active volume of this kind.
func (lv *fakeLV) attr() string {
	switch {
	case lv.isPool:
		return "twi-a-tz--"
	case lv.pool != "" && lv.readOnly:
		return "Vri-a-tz--"
	case lv.pool != "":
		return "Vwi-a-tz--"
	}
	return "-wi-a-----"
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

// AddThinPool makes a thin pool of size bytes (whole extents) from a group's free extents,
// as `lvcreate -T vg/name -L size` would (less the pool's metadata, which the fake does not
// model).
func (f *LVM) AddThinPool(vg, name string, size uint64) error {
	v, unlock, err := f.group(context.Background(), vg, "lvcreate")
	if err != nil {
		return err
	}
	defer unlock()
	if v.lvs[name] != nil {
		return fail(lvm.ErrExists, "lvcreate")
	}
	n := extentsFor(size, 1)
	if n > v.extents-v.used() {
		return fail(lvm.ErrNoSpace, "lvcreate")
	}
	v.lvs[name] = &fakeLV{extents: n, isPool: true}
	return nil
}

// group holds the fake's lock and returns a volume group, or command's failure when it is
// missing (or ctx has ended); unlock releases the lock.
func (f *LVM) group(ctx context.Context, vg, command string) (v *fakeVG, unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	v, ok := f.vgs[vg]
	if !ok {
		f.mu.Unlock()
		return nil, nil, fail(lvm.ErrVGNotFound, command)
	}
	return v, f.mu.Unlock, nil
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
		if lv.pool == "" {
			n += lv.extents
		}
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

// LVs lists a volume group's logical volumes by name, active but without device numbers.
func (f *LVM) LVs(ctx context.Context, vg string) ([]lvm.LV, error) {
	v, unlock, err := f.group(ctx, vg, "lvs")
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := make([]lvm.LV, 0, len(v.lvs))
	for name, lv := range v.lvs {
		out = append(out, lvm.LV{Name: name, Size: lv.extents * ExtentSize, Tags: slices.Clone(lv.tags),
			Attr: lv.attr(), Path: "/dev/" + vg + "/" + name, Pool: lv.pool, Origin: lv.origin})
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
	v, unlock, err := f.group(ctx, vg, "lvcreate")
	if err != nil {
		return err
	}
	defer unlock()
	switch {
	case len(s.Options) > 0 || s.Name == "" || s.Size == 0 || s.Size%512 != 0 || int(s.Stripes) > v.pvs:
		return fail(lvm.ErrInvalid, "lvcreate")
	case v.lvs[s.Name] != nil:
		return fail(lvm.ErrExists, "lvcreate")
	}
	if s.ThinPool != "" {
		// Thin volumes take nothing from the group, and lvm lets their sizes add up past the
		// pool's (it warns).
		if p := v.lvs[s.ThinPool]; p == nil || !p.isPool {
			return fail(lvm.ErrLVNotFound, "lvcreate")
		}
		v.lvs[s.Name] = &fakeLV{extents: extentsFor(s.Size, 1), tags: tagSet(s.Tags), pool: s.ThinPool}
		return nil
	}
	n := extentsFor(s.Size, s.Stripes)
	if n > v.extents-v.used() {
		return fail(lvm.ErrNoSpace, "lvcreate")
	}
	v.lvs[s.Name] = &fakeLV{extents: n, tags: tagSet(s.Tags)}
	return nil
}

// tagSet is tags as lvm keeps them: each once, sorted.
func tagSet(in []string) []string {
	var tags []string
	for _, t := range in {
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	sort.Strings(tags)
	return tags
}

// ThinSnapshot makes a thin snapshot of a thin volume: the origin's size, pool and no data
// of its own.
func (f *LVM) ThinSnapshot(ctx context.Context, vg, origin, name string, tags []string) error {
	v, unlock, err := f.group(ctx, vg, "lvcreate")
	if err != nil {
		return err
	}
	defer unlock()
	o := v.lvs[origin]
	switch {
	case o == nil:
		return fail(lvm.ErrLVNotFound, "lvcreate")
	case o.pool == "":
		return fail(lvm.ErrInvalid, "lvcreate") // a snapshot without a size must be of a thin volume
	case v.lvs[name] != nil:
		return fail(lvm.ErrExists, "lvcreate")
	}
	v.lvs[name] = &fakeLV{extents: o.extents, tags: tagSet(tags), pool: o.pool, origin: origin}
	return nil
}

// Activate activates a volume, or makes it read-only.
func (f *LVM) Activate(ctx context.Context, vg, name string, readOnly bool) error {
	v, unlock, err := f.group(ctx, vg, "lvchange")
	if err != nil {
		return err
	}
	defer unlock()
	lv, ok := v.lvs[name]
	if !ok {
		return fail(lvm.ErrLVNotFound, "lvchange")
	}
	if readOnly {
		lv.readOnly = true
	}
	return nil
}

// Resize sets a logical volume's size (rounded up to whole extents).
func (f *LVM) Resize(ctx context.Context, vg, name string, size uint64) error {
	v, unlock, err := f.group(ctx, vg, "lvresize")
	if err != nil {
		return err
	}
	defer unlock()
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
	case n > lv.extents && lv.pool == "" && n-lv.extents > v.extents-v.used():
		return fail(lvm.ErrNoSpace, "lvresize")
	}
	lv.extents = n
	return nil
}

// Remove deletes a logical volume.
func (f *LVM) Remove(ctx context.Context, vg, name string) error {
	v, unlock, err := f.group(ctx, vg, "lvremove")
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := v.lvs[name]; !ok {
		return fail(lvm.ErrLVNotFound, "lvremove")
	}
	delete(v.lvs, name)
	return nil
}
