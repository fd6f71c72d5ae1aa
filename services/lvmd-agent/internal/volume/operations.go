package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// CreateRequest is a new volume.
type CreateRequest struct {
	Name string
	// Size in bytes; the volume gets it rounded up to whole extents (of every stripe), as
	// lvcreate would.
	Size        uint64
	Tags        []string
	DeviceClass string
	// OptionClass, when set, names the lvcreate option class whose options lvcreate gets
	// instead of the device class's stripe, stripe-size and lvcreate-options (TopoLVM's
	// rule); an unknown one is an *OptionClassNotFoundError.
	OptionClass string
}

// Create makes a volume. Creating a volume that exists with the same size (the request's,
// rounded up to whole extents) returns it (created false), so a retried request after a
// lost answer succeeds; another size is an *ExistsError. The free-space check and lvcreate
// run under the volume group's lock, so racing creates never allocate more than the class
// has.
func (s *Service) Create(ctx context.Context, req CreateRequest) (v Volume, created bool, err error) {
	dc, err := s.class(req.DeviceClass)
	if err != nil {
		return Volume{}, false, err
	}
	if err := checkPathLen(dc.VolumeGroup, req.Name); err != nil {
		return Volume{}, false, err
	}
	spec := lvm.CreateSpec{Name: req.Name, Tags: req.Tags, StripeSize: dc.StripeSize, Options: dc.LVCreateOptions}
	if dc.Stripe != nil && !dc.IsThin() {
		spec.Stripes = *dc.Stripe
	}
	unit := stripes(dc)
	if req.OptionClass != "" {
		oc, ok := s.classes.OptionClass(req.OptionClass)
		if !ok {
			return Volume{}, false, &OptionClassNotFoundError{Name: req.OptionClass}
		}
		// Its options may stripe too, which the agent does not parse: whole extents are
		// what it can promise, and lvcreate rounds further itself.
		spec = lvm.CreateSpec{Name: req.Name, Tags: req.Tags, Options: oc.Options}
		unit = 1
	}
	if dc.IsThin() {
		spec.ThinPool, spec.StripeSize = dc.Pool(), ""
	}
	vg, lvs, unlock, err := s.lockState(ctx, dc)
	if err != nil {
		return Volume{}, false, err
	}
	defer unlock()
	spec.Size = extentBytes(req.Size, vg.ExtentSize*unit)
	if lv, ok := named(lvs, req.Name); ok {
		if lv.Size != spec.Size || !belongs(dc, lv) {
			return Volume{}, false, &ExistsError{Name: req.Name, Size: lv.Size, Request: spec.Size}
		}
		return toVolume(dc, lv), false, nil
	}
	avail, err := available(dc, vg, lvs)
	if err != nil {
		return Volume{}, false, err
	}
	if spec.Size > avail {
		return Volume{}, false, &NoSpaceError{Free: avail, Requested: req.Size}
	}
	if err := s.lvm.Create(ctx, dc.VolumeGroup, spec); err != nil {
		if errors.Is(err, lvm.ErrNoSpace) {
			// Another tool allocated extents between our check and lvcreate.
			return Volume{}, false, &NoSpaceError{Free: avail, Requested: req.Size}
		}
		return Volume{}, false, lvError(err, "create")
	}
	return s.made(ctx, dc, req.Name, "created a logical volume")
}

// made returns a volume the agent has just made, after recording the change.
func (s *Service) made(ctx context.Context, dc *deviceclass.DeviceClass, name, msg string) (Volume, bool, error) {
	lv, ok := named(s.recordChangeAndList(ctx, dc), name)
	if !ok { // the record could not read lvm: ask again
		var err error
		if lv, ok, err = s.find(ctx, dc, name); err != nil {
			return Volume{}, true, err
		}
	}
	if !ok {
		return Volume{}, true, fmt.Errorf("create: lvcreate succeeded but lvs does not list %s", name)
	}
	s.log.InfoContext(ctx, msg, "device_class", dc.Name, "name", name, "size", lv.Size)
	return toVolume(dc, lv), true, nil
}

// available is what a class may still allocate, from its group's state.
func available(dc *deviceclass.DeviceClass, vg lvm.VGInfo, lvs []lvm.LV) (uint64, error) {
	_, avail, _, err := space(dc, vg, lvs)
	return avail, err
}

func named(lvs []lvm.LV, name string) (lvm.LV, bool) {
	for _, lv := range lvs {
		if lv.Name == name {
			return lv, true
		}
	}
	return lvm.LV{}, false
}

// stripes is how many stripes a class's volumes are spread over: its stripe setting, or 1 for
// a thin class (a thin volume's blocks come from the pool as they are written, striped as the
// pool was made).
func stripes(dc *deviceclass.DeviceClass) uint64 {
	if dc.Stripe != nil && *dc.Stripe > 1 && !dc.IsThin() {
		return uint64(*dc.Stripe)
	}
	return 1
}

// ResizeRequest is a new size for a volume.
type ResizeRequest struct {
	DeviceClass, Name string
	// Size in bytes, rounded up to whole extents (of every stripe) as lvresize would.
	Size uint64
	// AtLeast asks for a volume of at least Size: one already that large or larger is left
	// as it is (TopoLVM v0.36.5's rule for size_bytes). Otherwise the size is exact and
	// less than the volume has is a *ShrinkError (lvmd's rule for size_gb).
	AtLeast bool
}

// Resize grows a volume. The same size is a no-op. It returns the volume's size before and
// after.
func (s *Service) Resize(ctx context.Context, req ResizeRequest) (previous, size uint64, err error) {
	dc, err := s.class(req.DeviceClass)
	if err != nil {
		return 0, 0, err
	}
	vg, lvs, unlock, err := s.lockState(ctx, dc)
	if err != nil {
		return 0, 0, err
	}
	defer unlock()
	lv, ok := named(lvs, req.Name)
	if !ok || !belongs(dc, lv) {
		return 0, 0, fmt.Errorf("%w: %s", ErrVolumeNotFound, req.Name)
	}
	size = extentBytes(req.Size, vg.ExtentSize*stripes(dc))
	switch {
	case size < lv.Size && req.AtLeast:
		return lv.Size, lv.Size, nil
	case size < lv.Size:
		return lv.Size, lv.Size, &ShrinkError{Current: lv.Size, Requested: size}
	case size == lv.Size:
		return lv.Size, lv.Size, nil
	}
	grow := size - lv.Size
	avail, err := available(dc, vg, lvs)
	if err != nil {
		return lv.Size, lv.Size, err
	}
	if grow > avail {
		return lv.Size, lv.Size, &NoSpaceError{Free: avail, Requested: grow}
	}
	if err := s.lvm.Resize(ctx, dc.VolumeGroup, req.Name, size); err != nil {
		if errors.Is(err, lvm.ErrNoSpace) {
			return lv.Size, lv.Size, &NoSpaceError{Free: avail, Requested: grow}
		}
		return lv.Size, lv.Size, lvError(err, "resize")
	}
	s.log.InfoContext(ctx, "resized a logical volume", "device_class", dc.Name, "name", req.Name, "size", size, "previous", lv.Size)
	if now, ok := named(s.recordChangeAndList(ctx, dc), req.Name); ok {
		size = now.Size
	}
	return lv.Size, size, nil
}

// Remove deletes a volume; a volume that does not exist is already removed (lvmd's rule).
// A volume a backup or restore holds is a *BusyError.
func (s *Service) Remove(ctx context.Context, class, name string) error {
	dc, err := s.class(class)
	if err != nil {
		return err
	}
	return s.remove(ctx, dc, name, false)
}

// remove deletes a volume; force skips the hold check (a failed restore removing its own
// half-written volume).
func (s *Service) remove(ctx context.Context, dc *deviceclass.DeviceClass, name string, force bool) error {
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return err
	}
	defer unlock()
	if by, held := s.holder(dc, name); held && !force {
		return &BusyError{Volume: name, By: by}
	}
	_, ok, err := s.find(ctx, dc, name)
	if err != nil || !ok {
		return err
	}
	if err := s.lvm.Remove(ctx, dc.VolumeGroup, name); err != nil && !errors.Is(err, lvm.ErrLVNotFound) {
		return lvError(err, "remove")
	}
	s.log.InfoContext(ctx, "removed a logical volume", "device_class", dc.Name, "name", name)
	s.recordChangeAndList(ctx, dc)
	return nil
}

// RemoveOwn deletes a volume that the caller itself holds (see Hold).
func (s *Service) RemoveOwn(ctx context.Context, dc *deviceclass.DeviceClass, name string) error {
	return s.remove(ctx, dc, name, true)
}

// find looks a volume of a class up by name in its group.
func (s *Service) find(ctx context.Context, dc *deviceclass.DeviceClass, name string) (lvm.LV, bool, error) {
	lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
	if err != nil {
		return lvm.LV{}, false, lvError(err, "list volumes")
	}
	for _, lv := range lvs {
		if lv.Name == name && belongs(dc, lv) {
			return lv, true, nil
		}
	}
	return lvm.LV{}, false, nil
}

// Get returns one volume of a class.
func (s *Service) Get(ctx context.Context, class, name string) (*deviceclass.DeviceClass, Volume, error) {
	dc, err := s.class(class)
	if err != nil {
		return nil, Volume{}, err
	}
	_, lv, err := s.locate(ctx, []*deviceclass.DeviceClass{dc}, name)
	if err != nil {
		return nil, Volume{}, err
	}
	return dc, toVolume(dc, lv), nil
}

// Find looks a volume up by name in every class (a backup names only the volume).
func (s *Service) Find(ctx context.Context, name string) (*deviceclass.DeviceClass, Volume, error) {
	dc, lv, err := s.locate(ctx, s.classes.All(), name)
	if err != nil {
		return nil, Volume{}, err
	}
	return dc, toVolume(dc, lv), nil
}

// locate finds a volume by name in the first of classes that holds it.
func (s *Service) locate(ctx context.Context, classes []*deviceclass.DeviceClass, name string) (*deviceclass.DeviceClass, lvm.LV, error) {
	for _, dc := range classes {
		lv, ok, err := s.find(ctx, dc, name)
		if err != nil {
			return nil, lvm.LV{}, err
		}
		if ok {
			return dc, lv, nil
		}
	}
	return nil, lvm.LV{}, fmt.Errorf("%w: %s", ErrVolumeNotFound, name)
}

// List returns a class's volumes (thin pools excluded, as lvmd does).
func (s *Service) List(ctx context.Context, class string) ([]Volume, error) {
	dc, err := s.class(class)
	if err != nil {
		return nil, err
	}
	return s.list(ctx, dc)
}

func (s *Service) list(ctx context.Context, dc *deviceclass.DeviceClass) ([]Volume, error) {
	lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
	if err != nil {
		return nil, lvError(err, "list volumes")
	}
	return volumesOf(dc, lvs), nil
}

// FreeBytes is what a class may still allocate (free space minus spare).
func (s *Service) FreeBytes(ctx context.Context, class string) (uint64, error) {
	dc, err := s.class(class)
	if err != nil {
		return 0, err
	}
	if dc.IsThin() {
		vg, lvs, err := s.state(ctx, dc)
		if err != nil {
			return 0, err
		}
		return available(dc, vg, lvs)
	}
	vg, err := s.lvm.VG(ctx, dc.VolumeGroup)
	if err != nil {
		return 0, lvError(err, "free space")
	}
	return free(vg, dc), nil
}

// Capacities reports every class's space with one lvm call (what Watch sends).
func (s *Service) Capacities(ctx context.Context) ([]Capacity, error) {
	classes := s.classes.All()
	names := make([]string, len(classes))
	for i, dc := range classes {
		names[i] = dc.VolumeGroup
	}
	vgs, err := s.lvm.VGs(ctx, names...)
	if err != nil {
		return nil, lvError(err, "capacity")
	}
	byName := map[string]lvm.VGInfo{}
	for _, v := range vgs {
		byName[v.Name] = v
	}
	// Thin classes need their pools: one lvs per group that has any.
	lvsOf := map[string][]lvm.LV{}
	for _, dc := range classes {
		if _, done := lvsOf[dc.VolumeGroup]; dc.IsThin() && !done {
			lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
			if err != nil {
				return nil, lvError(err, "capacity")
			}
			lvsOf[dc.VolumeGroup] = lvs
		}
	}
	out := make([]Capacity, 0, len(classes))
	for _, dc := range classes {
		vg, ok := byName[dc.VolumeGroup]
		if !ok {
			return nil, fmt.Errorf("capacity: %w: %s", ErrVolumeGroupMissing, dc.VolumeGroup)
		}
		c, _, err := capacityOf(dc, vg, lvsOf[dc.VolumeGroup])
		var noPool *PoolMissingError
		if errors.As(err, &noPool) {
			// One class's missing pool must not blind TopoLVM to the others: nothing to
			// allocate there (creates say why), the rest as they are.
			s.log.WarnContext(ctx, "a thin class's pool is missing", "device_class", dc.Name, "error", err)
			c, err = Capacity{DeviceClass: dc.Name, VolumeGroup: dc.VolumeGroup, Default: dc.Default,
				GroupSize: vg.Size, GroupFree: vg.Free, Pool: &Pool{Name: dc.Pool()}}, nil
		}
		if err != nil {
			return nil, err
		}
		c.Volumes = 0 // only State counts them
		out = append(out, c)
	}
	return out, nil
}

// State is one class's capacity and volumes, for the heartbeat.
func (s *Service) State(ctx context.Context, class string) (Capacity, []Volume, error) {
	dc, err := s.class(class)
	if err != nil {
		return Capacity{}, nil, err
	}
	vg, lvs, err := s.state(ctx, dc)
	if err != nil {
		return Capacity{}, nil, err
	}
	return capacityOf(dc, vg, lvs)
}

// CheckVolumeGroups fails unless every class's volume group, and every thin class's pool,
// exists (at start, naming the class's field in the configuration).
func (s *Service) CheckVolumeGroups(ctx context.Context) error {
	var errs []error
	for i, dc := range s.classes.All() {
		if _, err := s.lvm.VG(ctx, dc.VolumeGroup); err != nil {
			if errors.Is(err, lvm.ErrVGNotFound) {
				errs = append(errs, fmt.Errorf("device-classes[%d].volume-group: volume group %q does not exist on this node", i, dc.VolumeGroup))
			} else {
				errs = append(errs, fmt.Errorf("device-classes[%d].volume-group: %w", i, err))
			}
			continue
		}
		if !dc.IsThin() {
			continue
		}
		lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
		if err == nil {
			_, err = poolOf(dc, lvs)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("device-classes[%d].thin-pool.name: %w (make it with lvcreate -T %s/%s -L SIZE)", i, err, dc.VolumeGroup, dc.Pool()))
		}
	}
	return errors.Join(errs...)
}

// Detail is a volume with what lvmd's messages leave out: its group and holder.
type Detail struct {
	Volume
	VolumeGroup string
	// InUseBy names the backup or restore holding the volume; empty when none does.
	InUseBy string
}

// Describe returns one volume in detail; class "" looks in every class (as Find does).
func (s *Service) Describe(ctx context.Context, class, name string) (Detail, error) {
	classes := s.classes.All()
	if class != "" {
		dc, err := s.class(class)
		if err != nil {
			return Detail{}, err
		}
		classes = []*deviceclass.DeviceClass{dc}
	}
	dc, lv, err := s.locate(ctx, classes, name)
	if err != nil {
		return Detail{}, err
	}
	return s.detail(dc, lv), nil
}

// DescribeAll returns a class's volumes in detail, by name (thin pools and the agent's
// snapshots excluded, as List does).
func (s *Service) DescribeAll(ctx context.Context, class string) ([]Detail, error) {
	dc, err := s.class(class)
	if err != nil {
		return nil, err
	}
	lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
	if err != nil {
		return nil, lvError(err, "list volumes")
	}
	out := make([]Detail, 0, len(lvs))
	for _, lv := range lvs {
		if belongs(dc, lv) {
			out = append(out, s.detail(dc, lv))
		}
	}
	return out, nil
}

func (s *Service) detail(dc *deviceclass.DeviceClass, lv lvm.LV) Detail {
	by, _ := s.holder(dc, lv.Name)
	return Detail{Volume: toVolume(dc, lv), VolumeGroup: dc.VolumeGroup, InUseBy: by}
}
