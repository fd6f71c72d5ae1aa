package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/deviceclass"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/volume"
)

// Source kinds, as manifests record them.
const (
	sourceSnapshot  = "snapshot"
	sourcePhysical  = "physical-extents"
	snapshotMinimum = 64 << 20
)

// source is a consistent, read-only image of a volume.
type source struct {
	io.ReaderAt
	size       int64
	kind       string
	extentSize uint64
	extents    []lvm.ExtentRange
	close      func() error
}

// openSource gives a backup its consistent image. With device-mapper it is a snapshot (the
// volume may be in use); without, the volume is inactive and nothing but the agent could
// write it, so its extents are read in place, the caller's hold keeping it from being
// removed meanwhile.
func (r *Runner) openSource(ctx context.Context, dc *deviceclass.DeviceClass, vol volume.Volume, jobID int64) (*source, error) {
	if r.lvm.MetadataOnly() {
		layout, extentSize, err := r.layout(ctx, dc.VolumeGroup, vol.Name)
		if err != nil {
			return nil, err
		}
		raw, err := lvm.OpenRaw(layout, false)
		if err != nil {
			return nil, err
		}
		return &source{ReaderAt: raw, size: raw.Size(), kind: sourcePhysical, extentSize: extentSize, extents: layout.Extents(), close: raw.Close}, nil
	}
	snap := volume.SnapshotPrefix + strconv.FormatInt(jobID, 10)
	// The snapshot holds what changes on the volume while the backup runs: a tenth of it.
	if err := r.lvm.CreateSnapshot(ctx, dc.VolumeGroup, vol.Name, snap, max(vol.Size/10, snapshotMinimum)); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	drop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), lvmCleanupTimeout)
		defer cancel()
		return r.lvm.Remove(ctx, dc.VolumeGroup, snap)
	}
	f, err := os.Open(filepath.Join("/dev", dc.VolumeGroup, snap))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open snapshot: %w", err), drop())
	}
	return &source{ReaderAt: f, size: int64(vol.Size), kind: sourceSnapshot, close: func() error {
		return errors.Join(f.Close(), drop())
	}}, nil
}

// destination is where a restore writes.
type destination interface {
	io.WriterAt
	Sync() error
	Close() error
}

// openDestination opens a new volume for writing: its device node with device-mapper, its
// extents on the physical volumes without.
func (r *Runner) openDestination(ctx context.Context, dc *deviceclass.DeviceClass, vol volume.Volume) (destination, error) {
	if r.lvm.MetadataOnly() {
		layout, _, err := r.layout(ctx, dc.VolumeGroup, vol.Name)
		if err != nil {
			return nil, err
		}
		return lvm.OpenRaw(layout, true)
	}
	f, err := os.OpenFile(filepath.Join("/dev", dc.VolumeGroup, vol.Name), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open volume: %w", err)
	}
	return f, nil
}

func (r *Runner) layout(ctx context.Context, vg, lv string) (*lvm.Layout, uint64, error) {
	info, err := r.lvm.VG(ctx, vg)
	if err != nil {
		return nil, 0, err
	}
	segs, err := r.lvm.Segments(ctx, vg, lv)
	if err != nil {
		return nil, 0, err
	}
	pvs, err := r.lvm.PVs(ctx, vg)
	if err != nil {
		return nil, 0, err
	}
	l, err := lvm.NewLayout(segs, pvs, info.ExtentSize)
	return l, info.ExtentSize, err
}

// removeStaleSnapshots drops backup snapshots a crash left behind: they would fill up and
// slow every write to their origin.
func (r *Runner) removeStaleSnapshots(ctx context.Context) error {
	if r.lvm.MetadataOnly() {
		return nil
	}
	var errs []error
	for _, dc := range r.volumes.Classes().All() {
		lvs, err := r.lvm.LVs(ctx, dc.VolumeGroup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, lv := range lvs {
			if volume.IsSnapshotName(lv.Name) {
				r.log.Warn("removing a backup snapshot left by an earlier run", "volume_group", dc.VolumeGroup, "name", lv.Name)
				errs = append(errs, r.lvm.Remove(ctx, dc.VolumeGroup, lv.Name))
			}
		}
	}
	return errors.Join(errs...)
}
