package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

// SnapshotRequest is a thin snapshot of a thin volume (TopoLVM's CreateLVSnapshot).
type SnapshotRequest struct {
	Name, DeviceClass, Source string
	Tags                      []string
	// Size in bytes, at least the source's (0: the source's); the snapshot is made at the
	// source's size and grown to it.
	Size uint64
	// ReadOnly activates the snapshot read-only (access type "ro"); else read-write.
	ReadOnly bool
}

// Snapshot makes a thin snapshot. A snapshot that exists, of the same source and size,
// is returned as it is (created false), so a retried request after a lost answer succeeds;
// any other volume of that name is an *ExistsError. Snapshots are of thin volumes only: a
// thick class is a *ThickSnapshotError. The space check, lvcreate, the grow and the
// activation run under the group's lock; a snapshot that cannot be activated is removed.
func (s *Service) Snapshot(ctx context.Context, req SnapshotRequest) (v Volume, created bool, err error) {
	dc, err := s.class(req.DeviceClass)
	if err != nil {
		return Volume{}, false, err
	}
	if !dc.IsThin() {
		return Volume{}, false, &ThickSnapshotError{DeviceClass: dc.Name}
	}
	if err := checkPathLen(dc.VolumeGroup, req.Name); err != nil {
		return Volume{}, false, err
	}
	vg, lvs, unlock, err := s.lockState(ctx, dc)
	if err != nil {
		return Volume{}, false, err
	}
	defer unlock()
	avail, err := available(dc, vg, lvs) // first: a missing pool explains everything else
	if err != nil {
		return Volume{}, false, err
	}
	source, ok := named(lvs, req.Source)
	if !ok || !belongs(dc, source) {
		return Volume{}, false, fmt.Errorf("%w: source volume %s", ErrVolumeNotFound, req.Source)
	}
	size := extentBytes(req.Size, vg.ExtentSize)
	if req.Size == 0 {
		size = source.Size
	}
	if size < source.Size {
		return Volume{}, false, &SnapshotSizeError{Source: source.Size, Requested: req.Size}
	}
	if lv, ok := named(lvs, req.Name); ok {
		if lv.Origin != req.Source || lv.Size != size || !belongs(dc, lv) {
			return Volume{}, false, &ExistsError{Name: req.Name, Size: lv.Size, Request: size}
		}
		return toVolume(dc, lv), false, nil
	}
	if size > avail {
		return Volume{}, false, &NoSpaceError{Free: avail, Requested: size}
	}
	if err := s.lvm.ThinSnapshot(ctx, dc.VolumeGroup, req.Source, req.Name, req.Tags); err != nil {
		return Volume{}, false, lvError(err, "snapshot")
	}
	if err := s.finishSnapshot(ctx, dc.VolumeGroup, req.Name, source.Size, size, req.ReadOnly); err != nil {
		// Not half made: a snapshot the caller cannot use is not left behind.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		if rmErr := s.lvm.Remove(cleanup, dc.VolumeGroup, req.Name); rmErr != nil && !errors.Is(rmErr, lvm.ErrLVNotFound) {
			s.log.ErrorContext(ctx, "could not remove a snapshot that failed", "device_class", dc.Name, "name", req.Name, "error", rmErr)
		}
		s.recordChangeAndList(cleanup, dc)
		return Volume{}, false, err
	}
	return s.made(ctx, dc, req.Name, "created a thin snapshot")
}

// finishSnapshot grows a new snapshot from the source's size to size and activates it.
func (s *Service) finishSnapshot(ctx context.Context, vg, name string, from, size uint64, readOnly bool) error {
	if size > from {
		if err := s.lvm.Resize(ctx, vg, name, size); err != nil {
			return lvError(err, "grow the snapshot")
		}
	}
	if err := s.lvm.Activate(ctx, vg, name, readOnly); err != nil {
		return lvError(err, "activate the snapshot")
	}
	return nil
}
