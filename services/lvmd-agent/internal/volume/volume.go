// Package volume holds the agent's rules for logical volumes: device class lookup, space
// checks that respect each class's spare, no shrinking, idempotent create/resize/remove,
// one change at a time per volume group, and the notifications Watch and the events follow.
package volume

import (
	"context"
	"log/slog"
	"sync"

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

// Options configure a Service.
type Options struct {
	Classes *deviceclass.Classes
	LVM     LVM
	Logger  *slog.Logger
	// Recorder, when set, records a class's state after each change the agent makes, and
	// on every Reconcile, while the class's volume group is locked (Sync decides the rows
	// and events it writes). Holding the lock keeps records in the order of the changes, so
	// no event is lost or reversed when the agent's own changes and the poll meet.
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

// Classes are the configured device classes.
func (s *Service) Classes() *deviceclass.Classes { return s.classes }
