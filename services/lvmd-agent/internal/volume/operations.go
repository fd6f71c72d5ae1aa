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
	Name        string
	Size        uint64 // bytes
	Tags        []string
	DeviceClass string
}

// Create makes a volume. Creating a volume that exists with the same size returns it
// (created false), so a retried request after a lost answer succeeds; another size is an
// *ExistsError. The free-space check and lvcreate run under the volume group's lock, so
// racing creates never allocate more than the class has.
func (s *Service) Create(ctx context.Context, req CreateRequest) (v Volume, created bool, err error) {
	dc, err := s.class(req.DeviceClass)
	if err != nil {
		return Volume{}, false, err
	}
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return Volume{}, false, err
	}
	defer unlock()
	vg, lvs, err := s.state(ctx, dc)
	if err != nil {
		return Volume{}, false, err
	}
	if lv, ok := named(lvs, req.Name); ok {
		if lv.Size != req.Size {
			return Volume{}, false, &ExistsError{Name: req.Name, Size: lv.Size, Request: req.Size}
		}
		return toVolume(dc, lv), false, nil
	}
	if avail := free(vg, dc); extentBytes(req.Size, vg.ExtentSize*stripes(dc)) > avail {
		return Volume{}, false, &NoSpaceError{Free: avail, Requested: req.Size}
	}
	spec := lvm.CreateSpec{Name: req.Name, Size: req.Size, Tags: req.Tags, StripeSize: dc.StripeSize, Options: dc.LVCreateOptions}
	if dc.Stripe != nil {
		spec.Stripes = *dc.Stripe
	}
	if err := s.lvm.Create(ctx, dc.VolumeGroup, spec); err != nil {
		if errors.Is(err, lvm.ErrNoSpace) {
			// Another tool allocated extents between our check and lvcreate.
			return Volume{}, false, &NoSpaceError{Free: free(vg, dc), Requested: req.Size}
		}
		return Volume{}, false, lvError(err, "create")
	}
	lv, ok := named(s.recordChangeAndList(ctx, dc), req.Name)
	if !ok { // the record could not read lvm: ask again
		var err error
		if lv, ok, err = s.find(ctx, dc, req.Name); err != nil {
			return Volume{}, true, err
		}
	}
	if !ok {
		return Volume{}, true, fmt.Errorf("create: lvcreate succeeded but lvs does not list %s", req.Name)
	}
	s.log.InfoContext(ctx, "created a logical volume", "device_class", dc.Name, "name", req.Name, "size", lv.Size)
	return toVolume(dc, lv), true, nil
}

func named(lvs []lvm.LV, name string) (lvm.LV, bool) {
	for _, lv := range lvs {
		if lv.Name == name {
			return lv, true
		}
	}
	return lvm.LV{}, false
}

func stripes(dc *deviceclass.DeviceClass) uint64 {
	if dc.Stripe != nil && *dc.Stripe > 1 {
		return uint64(*dc.Stripe)
	}
	return 1
}

// Resize grows a volume to size bytes. The same size is a no-op; less is a *ShrinkError.
func (s *Service) Resize(ctx context.Context, class, name string, size uint64) (previous uint64, err error) {
	dc, err := s.class(class)
	if err != nil {
		return 0, err
	}
	unlock, err := s.lvm.Lock(ctx, dc.VolumeGroup)
	if err != nil {
		return 0, err
	}
	defer unlock()
	vg, lvs, err := s.state(ctx, dc)
	if err != nil {
		return 0, err
	}
	lv, ok := named(lvs, name)
	if !ok {
		return 0, fmt.Errorf("%w: %s", ErrVolumeNotFound, name)
	}
	switch {
	case size < lv.Size:
		return lv.Size, &ShrinkError{Current: lv.Size, Requested: size}
	case size == lv.Size:
		return lv.Size, nil
	}
	grow := size - lv.Size
	if avail := free(vg, dc); extentBytes(grow, vg.ExtentSize*stripes(dc)) > avail {
		return lv.Size, &NoSpaceError{Free: avail, Requested: grow}
	}
	if err := s.lvm.Resize(ctx, dc.VolumeGroup, name, size); err != nil {
		if errors.Is(err, lvm.ErrNoSpace) {
			return lv.Size, &NoSpaceError{Free: free(vg, dc), Requested: grow}
		}
		return lv.Size, lvError(err, "resize")
	}
	s.log.InfoContext(ctx, "resized a logical volume", "device_class", dc.Name, "name", name, "size", size, "previous", lv.Size)
	s.recordChangeAndList(ctx, dc)
	return lv.Size, nil
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

// find looks a volume up by name in a class's group.
func (s *Service) find(ctx context.Context, dc *deviceclass.DeviceClass, name string) (lvm.LV, bool, error) {
	lvs, err := s.lvm.LVs(ctx, dc.VolumeGroup)
	if err != nil {
		return lvm.LV{}, false, lvError(err, "list volumes")
	}
	for _, lv := range lvs {
		if lv.Name == name {
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
	_, vols := capacityOf(dc, lvm.VGInfo{}, lvs)
	return vols, nil
}

// FreeBytes is what a class may still allocate (free space minus spare).
func (s *Service) FreeBytes(ctx context.Context, class string) (uint64, error) {
	dc, err := s.class(class)
	if err != nil {
		return 0, err
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
	out := make([]Capacity, 0, len(classes))
	for _, dc := range classes {
		vg, ok := byName[dc.VolumeGroup]
		if !ok {
			return nil, fmt.Errorf("capacity: %w: %s", ErrVolumeGroupMissing, dc.VolumeGroup)
		}
		out = append(out, Capacity{DeviceClass: dc.Name, VolumeGroup: dc.VolumeGroup, Default: dc.Default, Size: vg.Size, Free: free(vg, dc)})
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
	c, vols := capacityOf(dc, vg, lvs)
	return c, vols, nil
}

// CheckVolumeGroups fails unless every class's volume group exists (at start, naming the
// class's field in the configuration).
func (s *Service) CheckVolumeGroups(ctx context.Context) error {
	var errs []error
	for i, dc := range s.classes.All() {
		if _, err := s.lvm.VG(ctx, dc.VolumeGroup); err != nil {
			if errors.Is(err, lvm.ErrVGNotFound) {
				errs = append(errs, fmt.Errorf("device-classes[%d].volume-group: volume group %q does not exist on this node", i, dc.VolumeGroup))
			} else {
				errs = append(errs, fmt.Errorf("device-classes[%d].volume-group: %w", i, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Detail is a volume with what lvmd's messages leave out: its group, device and holder.
type Detail struct {
	Volume
	VolumeGroup string
	// Path is the block device, /dev/<group>/<name>.
	Path string
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
		if !lv.IsThinPool() && !IsSnapshotName(lv.Name) {
			out = append(out, s.detail(dc, lv))
		}
	}
	return out, nil
}

func (s *Service) detail(dc *deviceclass.DeviceClass, lv lvm.LV) Detail {
	by, _ := s.holder(dc, lv.Name)
	path := lv.Path
	if path == "" {
		path = "/dev/" + dc.VolumeGroup + "/" + lv.Name
	}
	return Detail{Volume: toVolume(dc, lv), VolumeGroup: dc.VolumeGroup, Path: path, InUseBy: by}
}
