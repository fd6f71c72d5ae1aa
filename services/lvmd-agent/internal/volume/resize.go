package volume

import (
	"context"
	"errors"
	"fmt"

	"github.com/plinth-dev/plinth/services/lvmd-agent/internal/lvm"
)

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
