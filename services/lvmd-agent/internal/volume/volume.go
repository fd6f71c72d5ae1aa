// Package volume holds the agent's rules for logical volumes: device class lookup, space
// checks that respect each class's spare, no shrinking, idempotent create/resize/remove,
// one change at a time per volume group, and the notifications Watch and the events follow.
package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
}

// Capacity is a device class's volume group and its space.
type Capacity struct {
	DeviceClass string
	VolumeGroup string
	Default     bool
	Size        uint64
	// Free is what may be allocated: the group's free space minus the class's spare.
	Free uint64
	// Volumes is the number of logical volumes (only filled by State).
	Volumes int
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
	c, vols := capacityOf(dc, vg, lvs)
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
func capacityOf(dc *deviceclass.DeviceClass, vg lvm.VGInfo, lvs []lvm.LV) (Capacity, []Volume) {
	vols := make([]Volume, 0, len(lvs))
	for _, lv := range lvs {
		if !lv.IsThinPool() && !IsSnapshotName(lv.Name) {
			vols = append(vols, toVolume(dc, lv))
		}
	}
	return Capacity{DeviceClass: dc.Name, VolumeGroup: dc.VolumeGroup, Default: dc.Default, Size: vg.Size,
		Free: free(vg, dc), Volumes: len(vols)}, vols
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
	return Volume{Name: lv.Name, DeviceClass: dc.Name, Size: lv.Size, Tags: lv.Tags, Major: lv.Major, Minor: lv.Minor}
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
