// Package volume holds the agent's rules for logical volumes: device class lookup, space
// checks that respect each class's spare, no shrinking, idempotent create/resize/remove,
// one change at a time per volume group, and the notifications Watch and the events follow.
package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// Volume is a logical volume of a device class.
type Volume struct {
	Name        string
	DeviceClass string
	Size        uint64 // bytes
	Tags        []string
	// Major and Minor are the kernel device numbers (0 while inactive).
	Major, Minor uint32
	// Path is the block device lvm reports, /dev/<group>/<name>.
	Path string
	// Attr is lvm's lv_attr ("-wi-a-----").
	Attr string
}

// Capacity is a device class's volume group and its space.
type Capacity struct {
	DeviceClass string
	VolumeGroup string
	Default     bool
	// Size is what the class's volumes may add up to: the group's size, or for a thin
	// class its pool's size times the overprovision ratio.
	Size uint64
	// Free is what may be allocated, less the class's spare: the group's free space, or for
	// a thin class Size less the sizes of the pool's volumes.
	Free uint64
	// Volumes is the number of logical volumes (only filled by State).
	Volumes int
	// GroupSize and GroupFree are the volume group's, as lvm reports them.
	GroupSize, GroupFree uint64
	// Pool is a thin class's pool; nil for a thick class.
	Pool *Pool
}

// Pool is a thin pool's use.
type Pool struct {
	Name string
	// Size is the pool's data size.
	Size uint64
	// Virtual is what its volumes' sizes add up to.
	Virtual uint64
	// DataPercent and MetadataPercent are how full its data and metadata are.
	DataPercent, MetadataPercent float64
}

// LVM is what the rules ask of lvm2. *lvm.Runner runs the real commands; volumetest.LVM is
// an in-memory one for the rules' tests. Both pass volumetest.LVMConformance, so the fake
// cannot drift from lvm. Failures carry lvm's classified kinds (lvm.ErrNoSpace, ...).
type LVM interface {
	// Lock serialises work on one volume group until unlock is called or ctx ends.
	Lock(ctx context.Context, vg string) (unlock func(), err error)
	// VG reports one volume group.
	VG(ctx context.Context, name string) (lvm.VGInfo, error)
	// VGs reports the named volume groups.
	VGs(ctx context.Context, names ...string) ([]lvm.VGInfo, error)
	// LVs lists a volume group's visible logical volumes, by name.
	LVs(ctx context.Context, vg string) ([]lvm.LV, error)
	// Create makes a logical volume, its size rounded up to whole extents (of every stripe).
	Create(ctx context.Context, vg string, s lvm.CreateSpec) error
	// Resize sets a logical volume's size.
	Resize(ctx context.Context, vg, lv string, size uint64) error
	// Remove deletes a logical volume.
	Remove(ctx context.Context, vg, lv string) error
	// ThinSnapshot makes a thin snapshot of a thin volume, of the origin's size.
	ThinSnapshot(ctx context.Context, vg, origin, name string, tags []string) error
	// Activate activates a volume read-write, or makes it read-only.
	Activate(ctx context.Context, vg, lv string, readOnly bool) error
}

var _ LVM = (*lvm.Runner)(nil)

// Recorder keeps the record of each device class's volumes and capacity that the agent's
// events are derived from: given a class's state, it writes an event for every difference
// from the last record. store.VolumeRecord is the Postgres one; volumetest.Record an
// in-memory one; both pass volumetest.RecorderConformance.
type Recorder interface {
	// RecordClass records a class's capacity and volumes as lvm lists them now; it reports
	// whether the capacity (size, free space or volume count) differs from the last record.
	RecordClass(ctx context.Context, c Capacity, vols []Volume) (capacityChanged bool, err error)
}

// Options configure a Service.
type Options struct {
	Classes *deviceclass.Classes
	LVM     LVM
	Logger  *slog.Logger
	// Recorder, when set, is given a class's state after each change the agent makes, and
	// on every Reconcile, while the class's volume group is locked. Holding the lock keeps
	// records in the order of the changes, so no event is lost or reversed when the agent's
	// own changes and the poll meet.
	Recorder Recorder
	// Observe, when set, is told each class's state just before it is recorded (the
	// capacity gauges).
	Observe func(Capacity)
}

// Service applies the rules; it is safe for concurrent use.
type Service struct {
	classes  *deviceclass.Classes
	lvm      LVM
	log      *slog.Logger
	recorder Recorder
	observe  func(Capacity)
	watchers watchers

	mu   sync.Mutex
	busy map[string]*hold // "vg/lv" → what holds it
}

// New returns a Service.
func New(o Options) *Service {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Recorder == nil {
		o.Recorder = noRecord{}
	}
	if o.Observe == nil {
		o.Observe = func(Capacity) {}
	}
	return &Service{classes: o.Classes, lvm: o.LVM, log: o.Logger, recorder: o.Recorder, observe: o.Observe, busy: map[string]*hold{}}
}

// noRecord is the Recorder of a Service that keeps no record.
type noRecord struct{}

func (noRecord) RecordClass(context.Context, Capacity, []Volume) (bool, error) { return false, nil }

// Classes are the configured device classes.
func (s *Service) Classes() *deviceclass.Classes { return s.classes }

// class resolves a request's device class ("" is the default).
func (s *Service) class(name string) (*deviceclass.DeviceClass, error) {
	dc, err := s.classes.Get(name)
	if err != nil {
		return nil, &ClassNotFoundError{Name: name}
	}
	return dc, nil
}

// recordTimeout bounds recording a change: the change is made, so recording it must not
// depend on the caller still waiting.
const recordTimeout = 30 * time.Second

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

// recordLocked reads a class's state and gives it to the Recorder; the caller holds the
// group's lock.
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
	changed, err := s.recorder.RecordClass(ctx, c, vols)
	if changed {
		s.watchers.notify()
	}
	return c, lvs, err
}

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

// lockState takes the lock of a class's group and reads its state under it; the caller
// calls unlock.
func (s *Service) lockState(ctx context.Context, dc *deviceclass.DeviceClass) (lvm.VGInfo, []lvm.LV, func(), error) {
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return lvm.VGInfo{}, nil, nil, err
	}
	vg, lvs, err := s.state(ctx, dc)
	if err != nil {
		unlock()
		return lvm.VGInfo{}, nil, nil, err
	}
	return vg, lvs, unlock, nil
}

// state reads a class's volume group and volumes, the two lvm commands side by side.
func (s *Service) state(ctx context.Context, dc *deviceclass.DeviceClass) (lvm.VGInfo, []lvm.LV, error) {
	var vg lvm.VGInfo
	var vgErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		vg, vgErr = s.lvm.VG(ctx, dc.VolumeGroup)
	}()
	lvs, lvErr := s.lvm.LVs(ctx, dc.VolumeGroup)
	<-done
	if err := errors.Join(vgErr, lvErr); err != nil {
		return lvm.VGInfo{}, nil, lvError(err, "read "+dc.VolumeGroup)
	}
	return vg, lvs, nil
}

// capacityOf is a class's capacity and volumes from its group's state.
func capacityOf(dc *deviceclass.DeviceClass, vg lvm.VGInfo, lvs []lvm.LV) (Capacity, []Volume, error) {
	size, avail, pool, err := space(dc, vg, lvs)
	if err != nil {
		return Capacity{}, nil, err
	}
	vols := volumesOf(dc, lvs)
	return Capacity{DeviceClass: dc.Name, VolumeGroup: dc.VolumeGroup, Default: dc.Default, Size: size, Free: avail,
		Volumes: len(vols), GroupSize: vg.Size, GroupFree: vg.Free, Pool: pool}, vols, nil
}

// space is a class's size and what it may still allocate, less its spare: its group's, or a
// thin class's pool's (with the pool, nil for a thick class).
func space(dc *deviceclass.DeviceClass, vg lvm.VGInfo, lvs []lvm.LV) (size, avail uint64, pool *Pool, err error) {
	if !dc.IsThin() {
		return vg.Size, free(vg, dc), nil, nil
	}
	p, err := poolOf(dc, lvs)
	if err != nil {
		return 0, 0, nil, err
	}
	size, avail = thinSpace(dc, p)
	return size, avail, &p, nil
}

// belongs says whether lv is a volume of class dc: a thin class's are the thin volumes of
// its pool; a thick class's every other visible volume but thin pools and the agent's
// backup snapshots (a group may hold one thick class and thin classes beside it).
func belongs(dc *deviceclass.DeviceClass, lv lvm.LV) bool {
	if dc.IsThin() {
		return lv.IsThin() && lv.Pool == dc.Pool()
	}
	return !lv.IsThin() && !lv.IsThinPool() && !IsSnapshotName(lv.Name)
}

// volumesOf is the class's volumes among its group's.
func volumesOf(dc *deviceclass.DeviceClass, lvs []lvm.LV) []Volume {
	vols := make([]Volume, 0, len(lvs))
	for _, lv := range lvs {
		if belongs(dc, lv) {
			vols = append(vols, toVolume(dc, lv))
		}
	}
	return vols
}

// poolOf is a thin class's pool and what its volumes add up to.
func poolOf(dc *deviceclass.DeviceClass, lvs []lvm.LV) (Pool, error) {
	lv, ok := named(lvs, dc.Pool())
	if !ok || !lv.IsThinPool() {
		return Pool{}, &PoolMissingError{Pool: dc.Pool(), VolumeGroup: dc.VolumeGroup}
	}
	p := Pool{Name: lv.Name, Size: lv.Size, DataPercent: lv.DataPercent, MetadataPercent: lv.MetadataPercent}
	for _, v := range lvs {
		if v.IsThin() && v.Pool == p.Name {
			p.Virtual += v.Size
		}
	}
	return p, nil
}

// thinSpace is a thin class's size (the pool's times the overprovision ratio) and what may
// still be allocated in it, less the class's spare (TopoLVM's FreeBytes and GetFreeBytes).
func thinSpace(dc *deviceclass.DeviceClass, p Pool) (size, free uint64) {
	size = uint64(math.Floor(dc.ThinPool.OverprovisionRatio * float64(p.Size)))
	if size > p.Virtual {
		free = size - p.Virtual
	}
	if spare := dc.Spare(); free > spare {
		return size, free - spare
	}
	return size, 0
}

// Subscribe registers a watcher: its channel receives a value after changes (several
// changes between two reads coalesce into one). cancel unregisters it.
func (s *Service) Subscribe() (ch <-chan struct{}, cancel func()) { return s.watchers.add() }

// Notify wakes every watcher (the capacity poll calls it when lvm shows a change made
// outside the agent).
func (s *Service) Notify() { s.watchers.notify() }

// Hold marks a volume as in use by a backup (shared: several backups may read it) or a
// restore (exclusive: nothing may read a volume being written). Remove refuses a held
// volume; a conflicting Hold fails with *BusyError. The hold is taken under the volume
// group's lock after checking the volume exists, so it cannot slip between a Remove's
// check and its lvremove. release ends the hold.
func (s *Service) Hold(ctx context.Context, dc *deviceclass.DeviceClass, lv, by string, exclusive bool) (release func(), err error) {
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, ok, err := s.find(ctx, dc, lv); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: %s", ErrVolumeNotFound, lv)
	}
	key := dc.VolumeGroup + "/" + lv
	s.mu.Lock()
	defer s.mu.Unlock()
	h, held := s.busy[key]
	if held && (exclusive || h.exclusive) {
		return nil, &BusyError{Volume: lv, By: h.by}
	}
	if !held {
		h = &hold{by: by, exclusive: exclusive}
		s.busy[key] = h
	}
	h.count++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if h.count--; h.count == 0 {
				delete(s.busy, key)
			}
		})
	}, nil
}

// hold is what keeps a volume busy.
type hold struct {
	by        string
	exclusive bool
	count     int
}

func (s *Service) holder(dc *deviceclass.DeviceClass, lv string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.busy[dc.VolumeGroup+"/"+lv]
	if !ok {
		return "", false
	}
	return h.by, true
}

// free is what a class may allocate: the group's free extents above the spare.
func free(vg lvm.VGInfo, dc *deviceclass.DeviceClass) uint64 {
	spare := dc.Spare()
	if vg.Free <= spare {
		return 0
	}
	return vg.Free - spare
}

// extentBytes is size rounded up to whole extents of extent bytes (lvm allocates extents).
func extentBytes(size, extent uint64) uint64 {
	if extent == 0 {
		return size
	}
	return (size + extent - 1) / extent * extent
}

func toVolume(dc *deviceclass.DeviceClass, lv lvm.LV) Volume {
	path := lv.Path
	if path == "" {
		path = "/dev/" + dc.VolumeGroup + "/" + lv.Name
	}
	return Volume{Name: lv.Name, DeviceClass: dc.Name, Size: lv.Size, Tags: lv.Tags, Major: lv.Major, Minor: lv.Minor,
		Path: path, Attr: lv.Attr}
}

// lvError turns lvm's classified failures into the domain's.
func lvError(err error, op string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lvm.ErrVGNotFound):
		return fmt.Errorf("%s: %w: %w", op, ErrVolumeGroupMissing, err)
	case errors.Is(err, lvm.ErrInvalid):
		return fmt.Errorf("%s: %w: %w", op, ErrRefused, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
