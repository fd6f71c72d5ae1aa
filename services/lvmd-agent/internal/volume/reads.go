package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

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
