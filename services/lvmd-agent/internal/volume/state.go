package volume

// A device class's state as lvm shows it, read under its volume group's lock, and what the
// operations derive from it: capacity, space left, its volumes, sizes in whole extents.

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// class resolves a request's device class ("" is the default).
func (s *Service) class(name string) (*deviceclass.DeviceClass, error) {
	dc, err := s.classes.Get(name)
	if err != nil {
		return nil, &ClassNotFoundError{Name: name}
	}
	return dc, nil
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

// available is what a class may still allocate, from its group's state.
func available(dc *deviceclass.DeviceClass, vg lvm.VGInfo, lvs []lvm.LV) (uint64, error) {
	_, avail, _, err := space(dc, vg, lvs)
	return avail, err
}

// free is what a class may allocate: the group's free extents above the spare.
func free(vg lvm.VGInfo, dc *deviceclass.DeviceClass) uint64 {
	spare := dc.Spare()
	if vg.Free <= spare {
		return 0
	}
	return vg.Free - spare
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

func named(lvs []lvm.LV, name string) (lvm.LV, bool) {
	for _, lv := range lvs {
		if lv.Name == name {
			return lv, true
		}
	}
	return lvm.LV{}, false
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

func toVolume(dc *deviceclass.DeviceClass, lv lvm.LV) Volume {
	path := lv.Path
	if path == "" {
		path = "/dev/" + dc.VolumeGroup + "/" + lv.Name
	}
	return Volume{Name: lv.Name, DeviceClass: dc.Name, Size: lv.Size, Tags: lv.Tags, Major: lv.Major, Minor: lv.Minor,
		Path: path, Attr: lv.Attr}
}

// extentBytes is size rounded up to whole extents of extent bytes (lvm allocates extents).
func extentBytes(size, extent uint64) uint64 {
	if extent == 0 {
		return size
	}
	return (size + extent - 1) / extent * extent
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
